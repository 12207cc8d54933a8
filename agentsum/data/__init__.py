"""Text in, ``Batch`` out: everything a model reads, and nothing that needs a model.

Tokenization and sentences (``text``, ``chinese``, ``language``), output casing (``readable``),
corpus readers (``corpus``: JSON Lines, JSON arrays such as SAMSum, CNN/DailyMail ``.story``
files, Hugging Face; ``lcsts``: LCSTS PART files and TSV), splitting a document among agents
(``agents``), the vocabulary with per-document OOV ids (``vocab``), the ``Batch`` dataclass
(``batch``) and the path from corpus rows to batches (``dataset``).

Imports nothing from the other agentsum packages.
"""
