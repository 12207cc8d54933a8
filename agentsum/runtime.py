"""Process-level settings that make CPU training and decoding faster.

glibc's allocator serves large blocks (above a threshold that adapts up to 32 MiB) with fresh
``mmap`` calls and gives them back to the kernel on ``free``. A training step allocates and frees
the same large tensors every step (the (B*T, V) logits alone are 176 MB at batch 16, 55 steps and
a 50k vocabulary), so every step page-faults its working set in again: 15-20% of the CPU time
went to the kernel (``sys`` time) in a 2-thread DCA training run. :func:`tune_allocator` fixes the
mmap threshold at 32 MiB (the maximum) and stops glibc from trimming freed heap memory back to the
kernel, the effect jemalloc/tcmalloc give through ``LD_PRELOAD`` (PyTorch's CPU performance
guide), without a dependency. Measured on DCA at the peer-benchmark size but a 37.8k vocabulary (2 threads, 3
alternating runs each, packed-LSTM encoder of the time): 1.44 -> 1.20 seconds per training step (medians), kernel time 7.3 s -> 3.4 s per run,
peak memory +12% (freed memory is kept for reuse instead of returned).

32 MiB is as high as glibc lets the threshold go, so tensors above it are still mapped and unmapped
every step. At qmsum-m6 sizes (batch 4, up to 24,000 tokens over 73 agents) most of the step's
tensors are that large: a step of batch (4, 49 agents, 400) page-faults 1.7-1.9M times and
spends 28% of its CPU time in the kernel. ``MALLOC_MMAP_MAX_=0`` in the environment (glibc then
never maps) takes that to 2-5% and the step from 12.1 to 8.3 CPU seconds, but peak memory from 3.3
to 5.7 GB: freed blocks stay in a fragmented heap (benchmarks/results/long/qmsum_step_no_mmap.md).
It is left to the user, not set here.

It does nothing on other C libraries or when ``AGENTSUM_MALLOC_TUNING=0``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems
TRIM_THRESHOLD = 2**31 - 1  # mallopt takes an int: keep up to 2 GiB of freed memory


def tune_allocator() -> bool:
    """Apply the glibc malloc settings above; True if they were applied."""
    if os.environ.get("AGENTSUM_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
