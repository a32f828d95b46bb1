"""Cost accounting: wall time, peak memory (CPU and GPU), parameter count, FLOPs per row."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class Usage:
    seconds: float = 0.0
    peak_cpu_mb: float = 0.0  # peak resident memory above the level when measuring began
    peak_gpu_mb: float | None = None


class Measure:
    """Time a block and sample this process's resident memory every ``interval`` seconds.

    Ray reuses worker processes, so ``ru_maxrss`` would carry earlier trials' peaks; sampling the
    current RSS against a baseline taken at entry measures this block alone.
    """

    def __init__(self, interval: float = 0.02, gpu: bool = False) -> None:
        self.interval, self.gpu = interval, gpu
        self.usage = Usage()
        self._stop = threading.Event()

    def __enter__(self) -> Measure:
        import psutil

        self._proc = psutil.Process()
        self._base = self._peak = self._proc.memory_info().rss
        if self.gpu:
            import torch

            torch.cuda.reset_peak_memory_stats()
            self._gpu_base = torch.cuda.memory_allocated()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        self._t0 = time.perf_counter()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._peak = max(self._peak, self._proc.memory_info().rss)

    def __exit__(self, *exc: Any) -> None:
        self.usage.seconds = time.perf_counter() - self._t0
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, self._proc.memory_info().rss)
        self.usage.peak_cpu_mb = (self._peak - self._base) / 2**20
        if self.gpu:
            import torch

            self.usage.peak_gpu_mb = (torch.cuda.max_memory_allocated() - self._gpu_base) / 2**20


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
