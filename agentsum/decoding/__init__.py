"""From a model's step distributions to words: greedy, beam and sampling strategies (``search``).

Imports ``data`` and the model protocol of ``models.base``; never a concrete model.
"""
