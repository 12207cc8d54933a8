"""Learning-rate schedules.

The Transformer pointer-generator (paper 003, section 3.1) trains with "learning rate 0.0005" and
"warm-up steps 4000": the rate rises during warm-up, then decays. We read this as the Transformer
"Noam" schedule (Vaswani et al., 2017, section 5.3) *peaking* at 0.0005 after 4,000 updates:

    lr(step) = peak_lr * min(step / warmup, sqrt(warmup / step)),   step >= 1

i.e. linear warm-up to ``peak_lr`` at ``step == warmup`` and inverse-square-root decay afterwards.
This is Vaswani's formula ``d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)`` rescaled so that its
maximum is ``peak_lr`` (:func:`noam_vaswani` gives the original; with d_model 512 and warm-up 4000
it peaks at (512 * 4000)^-0.5 = 6.99e-4, close to 0.0005). Reading 0.0005 as a *factor* on the
original formula instead would give a peak of 3.5e-7, far too small to train, so it is a peak rate.

``linear`` is the schedule of a fixed budget of updates (BERT's, HF ``get_linear_schedule_with_warmup``):
linear warm-up to the peak, then a straight line down to zero at ``train.max_steps``, so the last
updates take small steps and the run ends annealed rather than at its peak rate.
"""

from __future__ import annotations

import math

import torch

SCHEDULES = ("none", "constant", "noam", "linear")


def noam(step: int, warmup: int = 4000, peak_lr: float = 5e-4) -> float:
    """Learning rate at update ``step`` (1-based): linear warm-up to ``peak_lr`` at ``warmup``, then
    ``peak_lr * sqrt(warmup / step)``. Steps below 1 are treated as step 1."""
    if warmup < 1:
        raise ValueError(f"noam warm-up must be >= 1 step, got {warmup}")
    step = max(step, 1)
    return peak_lr * min(step / warmup, math.sqrt(warmup / step))


def linear(step: int, warmup: int, total: int, peak_lr: float = 1.0) -> float:
    """Learning rate at update ``step`` (1-based) of ``total``: ``peak_lr * step / warmup`` up to
    ``warmup``, then a straight line that reaches zero one update after ``total`` (so every one of the
    ``total`` updates moves the weights; the last at ``peak_lr / (total + 1 - warmup)``). Zero after."""
    if warmup < 0 or total <= warmup:
        raise ValueError(f"linear schedule: need 0 <= warm-up < total updates, got warm-up {warmup}, total {total}")
    step = max(step, 1)
    if step <= warmup:
        return peak_lr * step / warmup
    return peak_lr * max(0.0, (total + 1 - step) / (total + 1 - warmup))


def noam_vaswani(step: int, d_model: int = 512, warmup: int = 4000, factor: float = 1.0) -> float:
    """The original form: ``factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)``; peaks at
    ``factor * (d_model * warmup)^-0.5`` at ``step == warmup``. Equals
    ``noam(step, warmup, factor * (d_model * warmup) ** -0.5)``."""
    if warmup < 1:
        raise ValueError(f"noam warm-up must be >= 1 step, got {warmup}")
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def build_scheduler(optimizer: torch.optim.Optimizer, name: str, warmup: int = 4000, total: int | None = None
                    ) -> torch.optim.lr_scheduler.LambdaLR | None:
    """The schedule named ``name`` as a multiplier on the optimizer's base learning rate (so the base
    lr is the peak): ``none`` / ``constant`` -> None (keep the base lr), ``noam`` and ``linear`` (down
    to zero after ``total`` updates, ``train.max_steps``) -> LambdaLR.

    Call ``scheduler.step()`` after every ``optimizer.step()``. The k-th update (k = 1, 2, ...) runs
    at ``base_lr * noam(k, warmup, 1)``: LambdaLR's counter starts at 0 for the first update, so the
    multiplier is evaluated at counter + 1 and no update runs at lr 0.
    """
    name = name.lower()
    if name in ("none", "constant"):
        return None
    if name == "noam":
        if warmup < 1:
            raise ValueError(f"noam warm-up must be >= 1 step, got {warmup}")
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: noam(k + 1, warmup, 1.0))
    if name == "linear":
        if total is None:
            raise ValueError("the linear schedule needs the number of updates (train.max_steps)")
        linear(1, warmup, total)  # checks warm-up < total now, not at the first update
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: linear(k + 1, warmup, total))
    raise ValueError(f"unknown learning-rate schedule {name!r} (known: {', '.join(SCHEDULES)})")
