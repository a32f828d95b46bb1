"""Shared by the benchmark scripts: timing, peak memory and a plain table.

Timing takes the best of several rounds (the least disturbed by other processes) and alternates the
contenders round by round, so that a burst of outside load does not land on one side only.

CPU peak memory: tracemalloc does not see torch's allocations, so it is the kernel's high-water mark
of resident memory (VmHWM, reset through /proc/self/clear_refs) above the resident memory when the
measured block starts. The measurements run in a separate process (:func:`memory_process`) whose
glibc malloc maps every block of 64 KiB or more on its own from the start (``MALLOC_MMAP_THRESHOLD_``):
a freed tensor then leaves the resident set at once, where the default allocator would keep it in
its heap and let the next block reuse it unseen. (Not in the timing process: mapping every tensor
costs page faults.) Without a writable /proc it samples RSS with psutil every millisecond instead
(coarser). On CUDA it is torch.cuda.max_memory_allocated, in the same process, after the warm-up: the
matrix library's workspaces, made then, are left out for every contender alike (a trial's figure,
pipeline.cost.Measure, counts them).
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

MiB = 2**20
T = TypeVar("T")


def _status(field: str) -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", text).group(1)) * 1024  # type: ignore[union-attr]


def peak_memory(fn: Callable[[], object], device: str = "cpu") -> float:
    """MiB that ``fn()`` needs at its peak above what was in use when it started."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - base) / MiB
    try:
        base = _status("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        return _sampled_peak(fn)
    fn()
    return (_status("VmHWM") - base) / MiB


def memory_process(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a fresh spawned process with a fixed malloc mmap threshold (see the module doc)."""
    import multiprocessing as mp

    before = os.environ.get("MALLOC_MMAP_THRESHOLD_")
    os.environ["MALLOC_MMAP_THRESHOLD_"] = "65536"  # glibc reads it once, when the child starts
    try:
        with mp.get_context("spawn").Pool(1) as pool:
            return pool.apply(fn, args)
    finally:
        if before is None:
            del os.environ["MALLOC_MMAP_THRESHOLD_"]
        else:
            os.environ["MALLOC_MMAP_THRESHOLD_"] = before


def _sampled_peak(fn: Callable[[], object]) -> float:
    import psutil

    proc = psutil.Process()
    base = peak = proc.memory_info().rss
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.001):
            peak = max(peak, proc.memory_info().rss)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        fn()
    finally:
        stop.set()
        thread.join()
    return (max(peak, proc.memory_info().rss) - base) / MiB


def best_times(fns: dict[str, Callable[[], object]], rounds: int, sync: Callable[[], None] = lambda: None,
               clock: str = "wall") -> dict[str, float]:
    """The best time of each function over ``rounds`` rounds, the functions alternating.

    ``clock="cpu"`` takes the process's CPU time instead of wall time: steadier on a machine other
    work shares, and equal to wall time for one busy thread; meaningless with several threads, which
    spin, or on a GPU.
    """
    now = time.process_time if clock == "cpu" else time.perf_counter
    best = dict.fromkeys(fns, math.inf)
    for _ in range(rounds):
        for name, fn in fns.items():
            sync()
            t0 = now()
            fn()
            sync()
            best[name] = min(best[name], now() - t0)
    return best


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain, right-aligned text table (floats with 3 significant digits)."""

    def cell(v: object) -> str:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.3g}" if abs(v) < 1e4 else f"{v:,.0f}"
        return str(v)

    cells = [[cell(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)
