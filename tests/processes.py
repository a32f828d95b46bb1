"""Start Ray processes and other subprocesses for a test, and end exactly those (by pid) afterwards;
find free ports and wait for them to listen."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any

import psutil


class Spawned:
    """Processes this test started; ``stop`` ends each of them and every descendant, by pid."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        self.seen: dict[int, psutil.Process] = {}

    def start(self, args: list[str], **kwargs) -> subprocess.Popen:
        p = subprocess.Popen(args, start_new_session=True, **kwargs)
        self.procs.append(p)
        return p

    def snapshot(self) -> None:
        """Remember the descendants now (they are re-parented to init once their parent dies)."""
        for p in self.procs:
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(p.pid)
                for q in [root, *root.children(recursive=True)]:
                    self.seen.setdefault(q.pid, q)

    def kill(self) -> None:
        """SIGKILL every process and descendant at once, as a machine that vanishes would end them."""
        self.snapshot()
        for q in self.seen.values():
            with contextlib.suppress(psutil.Error):
                q.kill()
        psutil.wait_procs(list(self.seen.values()), timeout=5)

    def stop(self, grace_s: float = 10.0) -> None:
        self.snapshot()
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)  # `ray start --block` shuts its node down on SIGTERM
        deadline = time.monotonic() + grace_s
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
        self.snapshot()
        alive = [q for q in self.seen.values() if _running(q)]
        for q in alive:
            with contextlib.suppress(psutil.Error):
                q.kill()
        psutil.wait_procs(alive, timeout=5)
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGKILL)


def _running(q: psutil.Process) -> bool:
    try:
        return q.is_running() and q.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listens on port {port} after {timeout_s} s")


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by a process and its living descendants (0 once it is gone)."""
    total = 0.0
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        for q in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                t = q.cpu_times()
                total += t.user + t.system
    return total


class Stalled(AssertionError):
    """A process that did no work for the whole of a wait's idle bound."""


def wait_working(proc: subprocess.Popen, *, until: Callable[[], bool] | None = None, idle_s: float = 90.0,
                 what: str = "the command") -> None:
    """Wait for ``proc`` to exit (or for ``until()`` to hold), bounded by the work it does rather than by a
    wall time: the wait fails only when the process and its descendants used less than a tenth of a CPU
    second in ``idle_s`` seconds (a hang), so a loaded machine, which slows the work, never fails it. A
    process that exits before ``until()`` holds fails it too."""
    last_cpu, last_change = tree_cpu_seconds(proc.pid), time.monotonic()
    while True:
        if until is not None and until():
            return
        if proc.poll() is not None:
            if until is None:
                return
            raise AssertionError(f"{what} exited ({proc.returncode}) before what the test waited for")
        cpu = tree_cpu_seconds(proc.pid)
        if cpu - last_cpu >= 0.1:
            last_cpu, last_change = cpu, time.monotonic()
        elif time.monotonic() - last_change > idle_s:
            raise Stalled(f"{what} did no work for {idle_s:.0f} s (a hang, not a slow machine)")
        time.sleep(0.2)


def run_working(args: list[str], *, idle_s: float = 90.0, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(args, capture_output=True, text=True, **kwargs)`` bounded by ``wait_working``: killed
    (with every descendant) and failed only if it stops working, never for taking long."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        procs = Spawned()
        proc = procs.start(args, stdout=out, stderr=err, text=True, **kwargs)
        try:
            wait_working(proc, idle_s=idle_s, what=" ".join(map(str, args[:4])))
        finally:
            procs.stop(grace_s=2.0)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(args, proc.returncode, out.read(), err.read())


def in_process(argv: list[str], capsys: Any) -> subprocess.CompletedProcess:
    """``attnbench ARGV`` in this process, its output read through ``capsys``, as ``subprocess.run`` would
    return it: for a command whose own process is not what the test is about (a rerun, a refusal), without an
    interpreter's and a Ray connection's start-up. A run joins this process's Ray where one is initialized."""
    from pipeline import cli as entry

    capsys.readouterr()
    rc = entry.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(argv, rc, out, err)
