"""The clock a trial's time limit is read on.

``wall``: seconds as they pass. ``cpu``: CPU seconds of the trial's process, its threads together, so that
other work on a shared machine (another run, a test suite) does not move where a trial stops. A fit on a
GPU spends its time there, not on the host's CPU: read its limit on the wall clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

Clock = Literal["wall", "cpu"]
CLOCKS: tuple[str, ...] = ("wall", "cpu")


def reader(clock: str) -> Callable[[], float]:
    """The function that reads ``clock`` in seconds."""
    if clock == "wall":
        return time.perf_counter
    if clock == "cpu":
        return time.process_time
    raise ValueError(f"clock {clock!r}: one of {', '.join(CLOCKS)}")


class Stopwatch:
    """Seconds on ``clock`` since it was started."""

    __slots__ = ("_now", "_t0", "clock")

    def __init__(self, clock: str = "wall") -> None:
        self.clock, self._now = clock, reader(clock)
        self._t0 = self._now()

    def elapsed(self) -> float:
        return self._now() - self._t0
