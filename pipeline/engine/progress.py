"""Progress of a run: a live status line on a terminal, plain lines in logs (``ray job logs``).

Each finished cell and each notice is one line either way. On a terminal a status line below them is
redrawn in place (cells done / running / pending, slots busy, elapsed, ETA), in a shorter form where
the terminal is narrower than the full line (a line that wraps cannot be redrawn in place); elsewhere
the same status is printed as a plain line every ``PLAIN_EVERY_S`` seconds.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from pipeline.clock import hms

PLAIN_EVERY_S = 30.0
LIVE_EVERY_S = 0.25


def clock(seconds: float) -> str:
    s = int(max(0, seconds))
    return hms(s) if s >= 3600 else f"{s // 60}:{s % 60:02d}"


@dataclass
class Counts:
    cells_total: int = 0
    cells_done: int = 0
    cells_failed: int = 0
    cells_running: int = 0
    trials_planned: int = 0
    trials_done: int = 0
    slots_busy: int = 0
    slots: int = 0
    left_s: float | None = None  # the scheduler's expected wall time left, from the cells' prices


class Progress:
    def __init__(self, emit: Callable[[str], None] = print, *, live: bool | None = None) -> None:
        self.emit = emit
        self.live = (emit is print and sys.stdout.isatty()) if live is None else live
        self.t0 = time.monotonic()
        self.last = self.t0
        self.shown = False

    def line(self, text: str) -> None:
        """A line that stays (a finished cell, a notice)."""
        if self.live and self.shown:
            sys.stdout.write("\r\x1b[K")
            self.shown = False
        self.emit(text)

    def due(self) -> bool:
        """Whether the next ``status`` call draws the line (what it shows is worth computing)."""
        return time.monotonic() - self.last >= (LIVE_EVERY_S if self.live else PLAIN_EVERY_S)

    def status(self, c: Counts, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < (LIVE_EVERY_S if self.live else PLAIN_EVERY_S):
            return
        self.last = now
        if self.live:
            text = self.describe(c, now - self.t0, width=shutil.get_terminal_size().columns - 1)
            sys.stdout.write("\r\x1b[K" + text)
            sys.stdout.flush()
            self.shown = True
        else:
            self.emit("  " + self.describe(c, now - self.t0))

    @staticmethod
    def describe(c: Counts, elapsed: float, *, width: int | None = None) -> str:
        """The status line; within ``width`` characters where given: the short form, cut if need be."""
        finished = c.cells_done + c.cells_failed
        pending = c.cells_total - finished - c.cells_running
        eta = left_s = "?"
        if c.left_s is not None:
            left_s = clock(c.left_s)
            eta = f"{left_s} (the cells' expected times)"
        elif c.trials_done and c.trials_planned:
            left = max(0, c.trials_planned - c.trials_done)
            # at the pace of the trials done so far, whose count it gives (searches' trials differ a hundredfold
            # in length: the first few finished say little of the rest)
            left_s = clock(elapsed / c.trials_done * left)
            eta = f"{left_s} ({c.trials_done}/{c.trials_planned} trials)"
        failed = f" ({c.cells_failed} failed)" if c.cells_failed else ""
        text = (f"cells {finished}/{c.cells_total} done{failed}, {c.cells_running} running, {pending} pending · "
                f"slots {c.slots_busy}/{c.slots} busy · {clock(elapsed)} elapsed · ETA {eta}")
        if width is None or len(text) <= width:
            return text
        text = (f"{finished}/{c.cells_total} done{failed} · {c.cells_running} running · {clock(elapsed)} · "
                f"ETA {left_s}")
        return text if len(text) <= width else text[:max(0, width - 1)] + "…"

    def close(self) -> None:
        if self.live and self.shown:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.shown = False
