"""Measuring summaries: ROUGE (``rouge``), decoding a corpus and scoring it (``evaluate``), ROUGE-L
binned by agent attention (``analyze``, the paper's Figure 4), blinded human evaluation sheets
(``humaneval``) and training curves (``plot``).
"""
