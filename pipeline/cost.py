"""Cost accounting: wall time, peak memory (CPU and GPU), parameter count, FLOPs per row."""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class Usage:
    seconds: float = 0.0
    peak_cpu_mb: float = 0.0  # peak resident memory of the process above its level when measuring began
    peak_gpu_mb: float | None = None


class Measure:
    """Time a block and measure the peak memory it needed, independent of what the process ran before.

    A warm trial worker has run other trials, and the C allocator keeps what they freed: a block that
    reuses it would show no growth in resident memory at all, and one that meets a library's first use
    would be charged for the library. So, on Linux, before the block: in a trial worker (which froze
    its long-lived objects once warm) Python's cyclic garbage is collected, the allocator's policy is
    fixed (``pin_allocator``), it returns the memory it holds unused to the system (``malloc_trim``), and the kernel's
    peak-resident counter is reset (``/proc/self/clear_refs``). After it, the figure is that peak less
    the resident memory at entry, less the growth of file-backed pages (library code paged in on first
    use is not memory the model needs). The peak is the kernel's own, not a sample. Where these are
    missing (not Linux), the resident memory is sampled every ``interval`` seconds instead.

    GPU: the peak of torch's CUDA allocator during the block, above what it held at entry, after
    :func:`settle_gpu`: the tensors of earlier blocks that only a garbage collection frees are freed, and
    the matrix library's workspaces (about 64 MiB on an H100, kept from a process's first matrix product
    on) are dropped, so that every block pays for the workspaces it makes, as in a fresh process. Without
    that, a process's first GPU fit (one with no warm-up before it) was charged 65 MB more than the same
    fit run after others.
    """

    def __init__(self, interval: float = 0.02, gpu: bool = False) -> None:
        self.interval, self.gpu = interval, gpu
        self.usage = Usage()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Measure:
        import psutil

        self._proc = psutil.Process()
        if self.gpu:  # first: its garbage collection may lower the resident memory the CPU figure starts from
            settle_gpu()
        self._kernel_peak = settle()
        self._base = _status() if self._kernel_peak else {}
        self._peak = self._rss = self._proc.memory_info().rss
        if not self._kernel_peak:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        if self.gpu:
            import torch

            torch.cuda.reset_peak_memory_stats()
            self._gpu_base = torch.cuda.memory_allocated()
        self._t0 = time.perf_counter()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._peak = max(self._peak, self._proc.memory_info().rss)

    def __exit__(self, *exc: Any) -> None:
        self.usage.seconds = time.perf_counter() - self._t0
        if self._kernel_peak:
            end = _status()
            grown_files = max(0, end["RssFile"] - self._base["RssFile"]) + max(0, end["RssShmem"] - self._base["RssShmem"])
            peak = end["VmHWM"] - self._base["VmRSS"] - grown_files
        else:
            self._stop.set()
            assert self._thread is not None
            self._thread.join()
            peak = max(self._peak, self._proc.memory_info().rss) - self._rss
        self.usage.peak_cpu_mb = max(0.0, peak / 2**20)
        if self.gpu:
            import torch

            self.usage.peak_gpu_mb = (torch.cuda.max_memory_allocated() - self._gpu_base) / 2**20


_STATUS_KEYS = ("VmHWM", "VmRSS", "RssFile", "RssShmem")


def _status() -> dict[str, int]:
    """This process's memory counters from /proc/self/status, in bytes."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in _STATUS_KEYS:
                out[key] = int(value.split()[0]) * 1024
    return out


# oneDNN, behind torch's bf16 matrix products on the CPU (and its convolutions), builds a primitive
# for each new shape (about 0.65-2 MB each, measured on AMX: generated kernels and their buffers) and
# keeps up to ONEDNN_PRIMITIVE_CACHE_CAPACITY of them (1,024 by default) for the life of the process.
# The first trial of a shape on a worker paid for primitives that later trials of that shape found
# ready: FT-Transformer in bf16 read 105 MB fresh and 61 MB after other trials on the same worker
# (fp32, which builds none, 34 MB both times), and a long-lived worker kept up to a GB of them. Before
# each measured block, the cache is filled with small reorder primitives of fixed shapes (32 KB each,
# 0.06 ms to build), which evicts whatever earlier blocks left: every block starts from the same cache
# and pays for the primitives it builds. (A capacity of 0 would do the same at 1.8x the time per step.)
ONEDNN_FILLERS = 8


def forget_kernels() -> None:
    """Evict every primitive earlier blocks left in oneDNN's cache (see above); only where torch is loaded."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.backends.mkldnn.is_available():
        return
    capacity = int(os.environ.get("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "1024"))
    try:
        for rows in range(1, capacity + 1):
            torch.ones(rows, ONEDNN_FILLERS).to_mkldnn()
    except RuntimeError as err:  # a build whose oneDNN cannot reorder: nothing of it to evict either
        log.debug("cannot refill oneDNN's primitive cache: %s", err)


# glibc's malloc serves a request above its mmap threshold with a mapping of its own, returned to the
# system on free; below it, from heaps that keep what is freed. It raises the threshold as the process
# frees large blocks, so the same trial's blocks land in heaps or mappings depending on what the
# process did before, and its resident peak with them (up to twice as much, measured). The threshold
# is fixed, at 512 KiB: at 2 MiB the activations of a small FT-Transformer (0.5-2 MiB) still came from
# the heaps, and its peak varied from 55 to 73 MB with the heaps' history (the same trial, the same
# worker); at 512 KiB it measured 33.6-34.0 MB in 15 runs. The price is time: such blocks are mapped
# and zeroed afresh, 0.79 -> 1.02 s for that trial (1 CPU, 1,500 rows); larger models map theirs anyway.
MMAP_THRESHOLD = 512 * 2**10
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# Mapped afresh, such blocks are faulted in page by page: at 4 KiB pages an FT-Transformer step (d_token 64,
# 43 tokens, batch 512) took 3.5 million faults an epoch, half its time in the kernel (3.25 s an epoch
# against 1.85 s unpinned, two such fits side by side on 2 cores). glibc's ``hugetlb=1`` tunable backs
# mapped blocks of 2 MiB and more with transparent huge pages (where the kernel offers them on request,
# ``madvise``): 0.8 million faults, 2.45 s an epoch (bf16: 2.65 -> 2.0 s), and the same peaks (FT-Transformer
# 214-215 MB, TabM 584 MB, the MLP 12-15 MB, with it and without). glibc reads it when a process starts,
# so trial workers are started with it (``worker_env``).
GLIBC_TUNABLES = "glibc.malloc.hugetlb=1"


def worker_env() -> dict[str, str]:
    """Environment variables a trial worker starts with: glibc's huge-page tunable (above), after any
    tunables the user set."""
    own = os.environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb" in own:
        return {"GLIBC_TUNABLES": own}
    return {"GLIBC_TUNABLES": f"{own}:{GLIBC_TUNABLES}" if own else GLIBC_TUNABLES}
# CatBoost links its own allocator, mimalloc (not glibc's, so malloc_trim cannot reach it), which keeps
# freed pages resident for a second (``purge_delay``) and backs them with transparent huge pages: a
# CatBoost fit right after another read 0.6-2.4 MB where the same fit read 10 MB on a fresh worker (and
# 0.9 MB against 26.6 MB in a real run, after a 734 MB fit). Freed pages go back at once and in 4 KiB
# pages, so that each fit faults in what it needs: 8.2-9.0 MB every time. A library reads these when it
# is loaded, so they are set before a worker imports any (``pin_allocator``); a fit costs no measurable
# time more (CatBoost, 1,000 rounds on 10,240 rows: the same seconds either way).
MIMALLOC_OPTIONS = {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_ALLOW_THP": "0"}
_pinned = False
_frozen = False  # set by freeze_long_lived: this process is a trial worker whose long-lived objects are frozen


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None)


def pin_allocator() -> None:
    """Fix glibc's mmap threshold (see ``MMAP_THRESHOLD``) for this process, once, and the policy of the
    mimalloc a library links in (``MIMALLOC_OPTIONS``; it takes effect for libraries loaded after this,
    so a trial worker calls it before its imports); elsewhere, nothing."""
    global _pinned
    if _pinned:
        return
    _pinned = True
    for key, value in MIMALLOC_OPTIONS.items():
        os.environ.setdefault(key, value)
    try:
        libc = _libc()
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD)
    except (OSError, AttributeError) as err:  # not glibc: its allocator keeps its own policy
        log.debug("mallopt is not available here: %s", err)


def freeze_long_lived() -> None:
    """Collect, then move every object alive now out of the collector's sight for good (a warm trial
    worker's imports and caches), so that the collection before each measured block is cheap."""
    global _frozen
    gc.collect()
    gc.freeze()
    _frozen = True


def settle_gpu() -> None:
    """Make torch's CUDA allocator ready to measure a block from here (see :class:`Measure`): wait for
    queued work, collect Python's garbage (a block's tensors held in reference cycles would otherwise be
    counted in the next block's starting level and freed during it), drop cuBLAS's workspaces. (The
    allocator's peak is reset last, in :meth:`Measure.__enter__`.)"""
    import torch

    torch.cuda.synchronize()
    gc.collect()
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)  # torch's own; CUDA builds have it
    if clear is not None:
        clear()


def settle() -> bool:
    """Make the process's memory ready to measure a block from here (see :class:`Measure`): fix the
    allocator's policy, evict what earlier blocks left in oneDNN's primitive cache, collect Python's garbage where long-lived objects are frozen (a full
    collection elsewhere would cost a tenth of a second), return the allocator's unused memory, reset
    the kernel's peak counter. False where the kernel has no resettable peak (not Linux): the
    caller samples instead."""
    pin_allocator()
    forget_kernels()
    # Only where the long-lived objects are frozen is this cheap. (Not gc.get_freeze_count(): it walks
    # every frozen object, 13 ms per trial in a warm worker.)
    if _frozen:
        gc.collect()
        gc.freeze()
    try:
        _libc().malloc_trim(0)  # glibc; elsewhere the name is missing
    except (OSError, AttributeError) as err:
        log.debug("malloc_trim is not available here: %s", err)
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current resident size (Linux 4.0 and later)
        return set(_status()) == set(_STATUS_KEYS)
    except OSError as err:
        log.debug("no resettable peak-memory counter here (%s); sampling instead", err)
        return False


def n_params(module: Any) -> int:
    return int(sum(p.numel() for p in module.parameters()))


def flops_per_row(module: Any, x_num: Any, x_cat: Any) -> float | None:
    """Forward FLOPs for one row, counted by torch's FlopCounterMode on a batch of 8 rows."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    try:
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            module(x_num[:8], x_cat[:8])
        return counter.get_total_flops() / max(len(x_num[:8]), 1)
    except Exception as err:  # an op the counter does not know must not fail a finished cell
        log.warning("FLOP count failed for %s: %s", type(module).__name__, err)
        return None
