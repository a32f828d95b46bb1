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


_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """Seconds in a duration as a user writes it: ``2h``, ``1h45m``, ``90m``, ``30s`` or plain seconds
    (``5400``); ValueError with the reason for anything else, or for no time at all."""
    import re

    t = text.strip().lower()
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?", t)
    if parts is not None and (parts[1] or parts[2]) and parts[3] and not t.endswith("s"):
        raise ValueError(f"{text!r}: say which unit its last number is in (1h30m, or 1h30s)")
    if not t or parts is None:
        raise ValueError(f"{text!r} is not a duration (such as 2h, 1h45m, 90m, 30s or 5400)")
    seconds = sum(float(v) * u for v, u in zip(parts.groups(), _UNITS.values()) if v)
    if seconds <= 0:
        raise ValueError(f"{text!r}: give a duration above zero")
    return seconds


def hms(seconds: float) -> str:
    """Seconds as ``h:mm:ss`` (``2:00:00``, ``0:02:00``)."""
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
