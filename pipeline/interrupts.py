"""SIGTERM as an interrupt: ``ray job stop``, a batch scheduler or ``kill`` stop a command the way Ctrl-C
does (completed work saved, the run marked interrupted, exit status 130)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


def sigterm_interrupts(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises KeyboardInterrupt; signal handlers belong to the main thread, so
    elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, sigterm_interrupts)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def keep_sigterm_handler() -> Iterator[None]:
    """``ray.init`` makes SIGTERM exit the process with status 15; a caller that turned SIGTERM into an
    interrupt keeps it."""
    main = threading.current_thread() is threading.main_thread()
    caller = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and caller is sigterm_interrupts:
            signal.signal(signal.SIGTERM, caller)
