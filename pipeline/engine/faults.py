"""What a failure is: the status a trial's exception or Ray's report of a lost worker becomes."""

from __future__ import annotations

from pipeline.records import Status

# Signs of a worker or task killed for memory: torch's and the C++ allocators' messages, Ray's memory
# monitor ("... killed due to the node running low on memory"), the kernel's OOM killer as Ray reports it.
OOM_SIGNS = ("out of memory", "outofmemory", "can't allocate memory", "cannot allocate memory", "bad_alloc",
             "running low on memory", "memory pressure")


class TrialTimeout(TimeoutError):
    """A trial still ran well past its time limit (a model that does not stop at ``max_seconds``)."""


def hard_limit_s(trial_timeout_s: float) -> float:
    """How long a trial may run before its worker is killed: the soft limit (checked after every step by
    the training loop and every round by the boosting libraries) plus room for the step or round in
    progress, the final scoring and a model that never checks."""
    return trial_timeout_s + max(10.0, 0.5 * trial_timeout_s)


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
