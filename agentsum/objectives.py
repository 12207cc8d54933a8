"""Training objectives. Every objective is ``objective(model, batch) -> (loss, stats)``.

``loss`` is the scalar to minimise; ``stats`` holds plain numbers to log. The training loop never
branches on which objective it runs.
"""

from __future__ import annotations

import torch

from agentsum.batch import Batch


class MLE:
    """Eq (17): negative log-likelihood of the reference summary, padding masked.

    The loss is the mean over target tokens of the batch (the sum of eq 17 over documents divided by
    the number of target tokens), so the learning rate does not depend on batch or summary length.
    ``stats['nll_sum']`` is the plain sum of eq (17) over the batch's documents.
    """

    name = "mle"

    def __call__(self, model, batch: Batch) -> tuple[torch.Tensor, dict]:
        out = model(batch)
        target = model.target_ids(batch.tgt_out)
        token_nll = -out.dist.log_prob(target) * batch.tgt_mask  # (B, T)
        nll_sum = token_nll.sum()
        tokens = batch.tgt_mask.sum()
        loss = nll_sum / tokens.clamp_min(1)
        return loss, {"loss": loss.item(), "nll_sum": nll_sum.item(), "tokens": int(tokens)}


OBJECTIVES = {"mle": MLE}


def build_objective(name: str, **kwargs):
    if name not in OBJECTIVES:
        raise ValueError(f"unknown train.objective {name!r} (known: {', '.join(sorted(OBJECTIVES))})")
    return OBJECTIVES[name](**kwargs)
