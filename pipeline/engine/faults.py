"""What a failure is: the status a trial's exception or Ray's report of a lost worker becomes."""

from __future__ import annotations

import socket
import time

from pipeline.records import Status

# Signs of a worker or task killed for memory: torch's and the C++ allocators' messages, Ray's memory
# monitor ("... killed due to the node running low on memory"), the kernel's OOM killer as Ray reports it.
OOM_SIGNS = ("out of memory", "outofmemory", "can't allocate memory", "cannot allocate memory", "bad_alloc",
             "running low on memory", "memory pressure")


class TrialTimeout(TimeoutError):
    """A trial still ran well past its time limit (a model that does not stop at ``max_seconds``)."""


# A limit in CPU seconds is reached later on the wall clock when the trial shares its core: the hard
# limit leaves room for a trial that gets a quarter of one.
CPU_SHARE_ALLOWED = 0.25


def hard_limit_s(trial_timeout_s: float, clock: str = "wall") -> float:
    """How many wall seconds a trial may run before its worker is killed: the soft limit (checked after
    every step by the training loop and every round by the boosting libraries) plus room for the step or
    round in progress, the final scoring and a model that never checks. A soft limit in CPU seconds
    becomes its wall-clock length on a quarter of a core."""
    soft = trial_timeout_s / CPU_SHARE_ALLOWED if clock == "cpu" else trial_timeout_s
    return soft + max(10.0, 0.5 * trial_timeout_s)


def classify(err: BaseException) -> Status:
    """The status of an exception a model raised inside its trial."""
    from pipeline.train.loop import Diverged

    if isinstance(err, Diverged):
        return Status.DIVERGED
    text = f"{type(err).__name__}: {err}".lower()
    if isinstance(err, MemoryError) or any(sign in text for sign in OOM_SIGNS):
        return Status.OOM
    if isinstance(err, TimeoutError):
        return Status.TIMEOUT
    return Status.ERROR


def lost_worker_status(err: BaseException) -> Status:
    """The status of a trial whose worker Ray reports lost: ``oom`` when a memory monitor or the kernel
    killed it for memory, else ``infra`` (a dead worker, node or actor), which is re-queued once."""
    text = f"{type(err).__name__}: {err}".lower()
    return Status.OOM if any(sign in text for sign in OOM_SIGNS) else Status.INFRA


class ClusterWatch:
    """Whether the Ray cluster this driver uses is still there, asked of the operating system rather
    than of Ray: once Ray's head (its GCS) is gone, a call that needs it (``ray.cluster_resources``,
    ``ray.nodes``, ``ray.kill``) blocks until Ray's own timeout (60 s) and then ends the process with
    status 1. So the scheduler asks this before every such call.

    Gone: a process of the local Ray this driver started (its GCS server or raylet) has exited, or the
    GCS's port refuses a connection (or does not answer within a second) ``misses`` times in a row."""

    def __init__(self, misses: int = 3) -> None:
        import ray

        self.misses_allowed = misses
        self.misses = 0
        self.last = 0.0
        self.reason: str | None = None
        node = getattr(getattr(ray, "_private", None), "worker", None)
        node = getattr(node, "_global_node", None)  # set where this driver started the Ray it uses
        self.local = {name: [p.process for p in getattr(node, "all_processes", {}).get(name, [])]
                      for name in ("gcs_server", "raylet")} if node is not None else {}
        try:
            host, _, port = ray.get_runtime_context().gcs_address.rpartition(":")
            self.gcs: tuple[str, int] | None = (host, int(port))
        except Exception:  # no GCS address to ask (Ray Client): only the local processes are watched
            self.gcs = None

    def gone(self, every_s: float = 0.5) -> str | None:
        """Why the cluster is gone, or None; asks at most every ``every_s`` seconds (then answers as
        last time)."""
        now = time.monotonic()
        if self.reason or now - self.last < every_s:
            return self.reason
        self.last = now
        for name, procs in self.local.items():
            for proc in procs:
                code = proc.poll()
                if code is not None:
                    self.reason = f"its {name} process exited ({_how(code)})"
                    return self.reason
        if self.gcs is not None:
            try:
                socket.create_connection(self.gcs, timeout=1.0).close()
                self.misses = 0
            except OSError as err:
                self.misses += 1
                if self.misses >= self.misses_allowed:
                    self.reason = f"its head at {self.gcs[0]}:{self.gcs[1]} does not answer ({err.strerror or err})"
        return self.reason


def _how(code: int) -> str:
    return f"killed by signal {-code}" if code < 0 else f"status {code}"
