"""Training: the loop (``trainer``), objectives (``objectives``: MLE, SEM, self-critical RL),
ROUGE rewards on token ids (``rewards``), learning-rate schedules (``schedule``), checkpoints
(``checkpoint``), the torchrun / DDP context (``distributed``), progress and metrics
(``monitor``) and pretrained word vectors (``embeddings``).

The trainer builds a model by name (``models.build_model``) and talks to it through the model
protocol (``models.base.SummarizationModel``) only.
"""
