"""One run at a time per results file. The store opens and closes the file around each write, so that
``query``, ``report`` and DuckDB itself can read it while a run goes on; two runs could then both write
it, each training the same pending cells (a second `nohup … &` of a study chunk, say), for twice the
compute and a race over who commits each cell. A run holds ``<file>.run-lock`` (its host, process id and
run id) from just before its first write until it ends, however it ends; a second run is refused in one
line before it writes anything. A lock whose process is gone on this host (killed, the machine rebooted)
is stale and taken over; one held from another host cannot be checked from here, so the message says
which file to remove if that run is over.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import StoreError


class RunLocked(StoreError):
    """Another run is writing the results file."""


def lock_path(db: str | Path) -> Path:
    return Path(f"{Path(db).resolve()}.run-lock")


@dataclass
class RunLock:
    path: Path
    run_id: str

    def release(self) -> None:
        """Remove the lock if it is still ours (a run that took over a stale one keeps its own)."""
        try:
            if json.loads(self.path.read_text()).get("run_id") == self.run_id:
                self.path.unlink()
        except (OSError, ValueError):
            pass  # gone already, or not ours to read: nothing of this run's to remove


def acquire(db: str | Path, run_id: str) -> RunLock:
    """Take the results file's run lock for ``run_id``, or raise :class:`RunLocked` naming who holds it."""
    path = lock_path(db)
    mine = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "run_id": run_id})
    for _ in range(2):  # a stale lock is removed once, then taken as if it were not there
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _holder(path)
            if (holder is None and _age(path) > 5.0) or (holder is not None and _stale(holder)):
                path.unlink(missing_ok=True)
                continue
            who = (f"run {holder.get('run_id')}, process {holder.get('pid')} on {holder.get('host')}" if holder
                   else "its lock is being written")
            raise RunLocked(f"{db}: another attnbench run is writing this results file ({who}); wait for it to "
                            f"end, or give another --db (if no such run is going on, remove {path})") from None
        with os.fdopen(fd, "w") as out:
            out.write(mine + "\n")
        return RunLock(path, run_id)
    raise RunLocked(f"{db}: could not take the run lock {path}; another run took it first")


def _holder(path: Path) -> dict[str, object] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None  # unreadable or half written: a run that died while writing it


def _age(path: Path) -> float:
    import time

    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")


def _stale(holder: dict[str, object]) -> bool:
    """The holding process is gone (checked on this host only)."""
    if holder.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(str(holder.get("pid"))), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False  # someone else's live process, or no pid to check
    return False
