"""Start Ray processes and other subprocesses for a test, and end exactly those (by pid) afterwards;
find free ports and wait for them to listen."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time

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
