"""The random number generators of a training process: their seeds, and their states in checkpoints.

Dropout masks and the RL objective's samples come from torch's generators: the CPU one and, on a
GPU, the CUDA generator of the process's device. Each torchrun process is seeded with
``train.seed + rank`` so that the processes draw different masks and samples (with one seed they
would all drop the same units of their different documents, and sample alike); the model's initial
weights still agree, because DistributedDataParallel copies rank 0's parameters to every process.

A checkpoint keeps rank 0's states under ``rng`` and, from a run of several processes, every
process's states under ``rng_ranks`` (gathered when the checkpoint is written), so a run resumed on
as many processes continues exactly. Resumed on another number, rank 0 takes ``rng`` (a single
process continues exactly as rank 0 would have) and the other processes start from their seed.
"""

from __future__ import annotations

import random

import torch


def seed_process(seed: int, rank: int = 0) -> None:
    """Seed torch (CPU and every CUDA device) and Python's ``random`` with ``seed + rank``."""
    torch.manual_seed(seed + rank)
    random.seed(seed + rank)


def rng_state(device: torch.device) -> dict:
    """This process's generator states: torch's CPU generator, Python's, and on CUDA the
    generator of ``device`` (the one its dropout and sampling draw from)."""
    python = random.getstate()
    state = {"torch": torch.get_rng_state(), "python": list(python[1]), "python_pos": python[2]}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    """Restore :func:`rng_state`'s states; a CUDA state is restored on a CUDA ``device`` only (a
    checkpoint written on a GPU resumes on a CPU with its CPU generators)."""
    torch.set_rng_state(state["torch"])
    random.setstate((3, tuple(state["python"]), state["python_pos"]))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def state_for_rank(checkpoint: dict, rank: int, world_size: int) -> dict | None:
    """The generator states process ``rank`` of ``world_size`` resumes with, or None (it keeps its
    seed): its own when the checkpoint was written by as many processes, else rank 0's for rank 0."""
    ranks = checkpoint.get("rng_ranks")
    if ranks is not None and len(ranks) == world_size:
        return ranks[rank]
    return checkpoint.get("rng") if rank == 0 else None
