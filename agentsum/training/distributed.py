"""Multi-process training with PyTorch DistributedDataParallel, launched by ``torchrun``.

``torchrun --nproc_per_node N -m agentsum.cli train ...`` sets RANK / WORLD_SIZE / LOCAL_RANK;
:func:`setup` then joins the process group (NCCL on GPUs, gloo on CPUs). With one process nothing
distributed happens and the same training loop runs unchanged.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.rendezvous import rendezvous

from agentsum.devices import choose_device


@dataclass(frozen=True)
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def all_reduce_sum(self, values: list[float]) -> list[float]:
        """Element-wise sums over all processes (one collective call)."""
        if not self.enabled:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.tolist()

    def all_reduce_tensor(self, values: torch.Tensor) -> torch.Tensor:
        """Element-wise sums over all processes of a tensor on this process's device, in place: no
        copy to the host (one collective call)."""
        if self.enabled:
            dist.all_reduce(values)
        return values

    def gather_objects(self, obj) -> list:
        """Every process's ``obj`` (picklable), in rank order, on every process."""
        if not self.enabled:
            return [obj]
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


def setup(device_preference: str = "auto", timeout_minutes: float = 60) -> DistContext:
    """Join the process group when launched by torchrun with more than one process.

    ``timeout_minutes`` bounds how long a collective (a barrier included) waits for the other
    processes before the run fails. The other ranks wait in a barrier while rank 0 validates and
    writes checkpoints (validation NLL, greedy ROUGE-L of ``train.valid_rouge_docs`` documents,
    fsync'd saves): NCCL's default of 10 minutes would kill a run whose validation takes longer.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = choose_device(device_preference, local_rank, setting="train.device")
    if world > 1 and not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        timeout = timedelta(minutes=timeout_minutes)
        store, rank, world = next(rendezvous("env://", rank, world, timeout=timeout))
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo", store=restart_store(store),
                                rank=rank, world_size=world, timeout=timeout)
    return DistContext(rank, world, local_rank, device)


def restart_store(store: dist.Store) -> dist.Store:
    """The rendezvous store seen through a prefix of torchrun's restart round.

    torchrun's default (static) rendezvous keeps one key-value store for the whole job, and a
    restarted worker group meets in it again. The process group's keys are the same in every round
    (gloo's ``default_pg/0//cpu//0``, NCCL's unique id), so the restarted processes read the
    addresses the dead round wrote there and try to connect to processes that no longer exist:
    gloo's ``connectFullMesh failed ... Connection refused``, or a wait until the collective times
    out. A prefix per round (``TORCHELASTIC_RESTART_COUNT``, which torchrun sets alike in every process
    of a round) gives each round keys of its own. With ``--rdzv-backend c10d`` each round has a new
    store anyway, and the prefix changes nothing.
    """
    restarts = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return dist.PrefixStore(f"agentsum/round-{restarts}", store)


def wrap(model: torch.nn.Module, ctx: DistContext) -> torch.nn.Module:
    if not ctx.enabled:
        return model
    from torch.nn.parallel import DistributedDataParallel

    # No buffer broadcast before every forward: the models' only buffers are constants (the
    # Transformer's sinusoidal positions) and neither has BatchNorm statistics, so it would only
    # cost a broadcast per step. Parameters are still made equal once, here. (torch 2.13 renamed
    # broadcast_buffers to forward_sync_buffers.)
    renamed = "forward_sync_buffers" in inspect.signature(DistributedDataParallel).parameters
    return DistributedDataParallel(model, device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None,
                                   **{"forward_sync_buffers" if renamed else "broadcast_buffers": False})


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DistributedDataParallel wrapper (for encode/step/target_ids)."""
    return getattr(model, "module", model)


def teardown(clean: bool = True) -> None:
    """Leave the process group.

    ``clean``: every process ends as this one does (the run finished, or all of them stopped together
    on a signal and saved). Then each first meets the others in a barrier, so that they destroy the
    group together. Without it a process could destroy its group and exit while another was still
    leaving, and the other could abort as it exits ("terminate called without an active exception",
    exit -6) after a run that had saved everything: the likely cause of such an abort seen under
    torchrun with gloo, which the barrier should prevent. A process leaving on an error does not
    wait. With gloo, a barrier whose peer is gone fails at once (a RuntimeError, "Connection closed
    by peer"), and the group is destroyed all the same; with NCCL it would wait up to
    ``train.dist_timeout_minutes``, unless the launcher stops the process first."""
    if not dist.is_initialized():
        return
    if clean:
        try:
            dist.barrier()
        except RuntimeError:  # DistError is one; gloo's closed connection is a plain RuntimeError
            pass  # a peer left first; this process's own work is done and saved
    dist.destroy_process_group()
