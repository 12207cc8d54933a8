"""Training: the loop (``trainer``), objectives (``objectives``: MLE, SEM, self-critical RL),
ROUGE rewards on token ids (``rewards``), learning-rate schedules (``schedule``), the torchrun /
DDP context (``distributed``), progress and metrics (``monitor``) and pretrained word vectors
(``embeddings``). Checkpoint files are ``agentsum.checkpoint``'s, below both training and
evaluation, which validation during training goes through.

The trainer builds a model by name (``models.build_model``) and talks to it through the model
protocol (``models.base.SummarizationModel``) only.
"""
