"""Warm workers: one long-lived Ray actor per slot of each resource shape the run asks for.

A shape is what one trial holds: CPUs and whole or fractional GPUs, or, for a torch trial trained on
Ray Train (``workers > 1``), a zero-CPU actor whose TorchTrainer holds ``cpus × workers``. The pool
divides the cluster's resources among the shapes that still have work, in proportion to that work,
grows when the cluster gains a node, drops actors whose node is gone, and ends idle actors whose
shape has run out of work so that others can use their resources.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from pipeline.cost import worker_env

log = logging.getLogger(__name__)
EPS = 1e-9


@dataclass(frozen=True, order=True)
class Shape:
    cpus: float
    gpus: float
    train_workers: int = 0  # > 0: the trial launches a TorchTrainer with this many workers

    @property
    def cpu_need(self) -> float:
        return self.cpus * self.train_workers if self.train_workers else self.cpus

    def actor_options(self) -> dict[str, Any]:
        if self.train_workers:  # the trainer's workers hold the resources; this actor only waits on them
            # (they inherit its runtime_env, and with it the allocator tunable)
            return {"num_cpus": 0, "runtime_env": {"env_vars": worker_env()}}
        return {"num_cpus": self.cpus, "num_gpus": self.gpus, "runtime_env": {"env_vars": worker_env()}}

    def __str__(self) -> str:
        s = f"{self.cpus:g} CPU" + (f" + {self.gpus:g} GPU" if self.gpus else "")
        return f"Ray Train ({self.train_workers} × {s})" if self.train_workers else s


def targets(cpus: float, gpus: float, demand: dict[Shape, int]) -> dict[Shape, int]:
    """Slots per shape: one at a time to the shape with the most work per slot, while it fits.

    A shape that fits nowhere in the cluster still gets one slot (its actor waits for a node, as on an
    autoscaling cluster), so that its work is not silently dropped.
    """
    out = {s: 0 for s in demand}
    while True:
        fits = [s for s, d in demand.items() if out[s] < d and s.cpu_need <= cpus + EPS and s.gpus <= gpus + EPS]
        if not fits:
            break
        best = max(fits, key=lambda s: (demand[s] / (out[s] + 1), -s.cpu_need))
        out[best] += 1
        cpus -= best.cpu_need
        gpus -= best.gpus
    for s, d in demand.items():
        if d and not out[s]:
            out[s] = 1
    return out


@dataclass(eq=False)
class Slot:
    shape: Shape
    actor: Any
    ready_ref: Any
    ready: bool = False
    busy: bool = False
    where: dict[str, str] = field(default_factory=dict)


class WorkerPool:
    """Warm trial workers, one per slot of each resource shape. ``warm``: the (model, task type) pairs
    each new worker fits once on made-up rows before it takes trials (see ``TrialWorker.ready``)."""

    def __init__(self, libraries: list[str], notice: Any = print, warm: list[tuple[Any, str]] | None = None) -> None:
        self.libraries = libraries
        self.warm = list(warm or [])
        self.notice = notice
        self.slots: list[Slot] = []
        self.created = 0
        self._unfit: set[Shape] = set()

    # ----------------------------------------------------------------------------------------- size
    def resize(self, demand: dict[Shape, int]) -> None:
        """Create or end actors so that each shape has its share of the cluster as it is now."""
        import ray

        totals = ray.cluster_resources()
        cpus, gpus = totals.get("CPU", 0.0), totals.get("GPU", 0.0)
        self._drop_dead_nodes()
        want = targets(cpus, gpus, demand)
        for shape, n in want.items():
            if n and (shape.cpu_need > cpus + EPS or shape.gpus > gpus + EPS) and shape not in self._unfit:
                self._unfit.add(shape)
                self.notice(f"  notice: a trial asks for {shape}, more than the cluster has now ({cpus:g} CPU, "
                            f"{gpus:g} GPU); its worker waits for a node that fits")
            mine = [s for s in self.slots if s.shape == shape]
            for _ in range(n - len(mine)):
                self._create(shape)
            extra = len(mine) - n
            for slot in [s for s in mine if not s.busy][:max(0, extra)]:
                self.drop(slot)
        for slot in [s for s in self.slots if s.shape not in want and not s.busy]:
            self.drop(slot)

    def _create(self, shape: Shape) -> None:
        import ray

        from pipeline.engine.worker import TrialWorker

        cls: Any = ray.remote(max_restarts=0, max_task_retries=0)(TrialWorker)
        actor = cls.options(**shape.actor_options()).remote()
        # A launcher of Ray Train workers holds no resources and fits nothing itself: no warm-up there.
        warm = [] if shape.train_workers else self.warm
        self.slots.append(Slot(shape, actor, actor.ready.remote(self.libraries, warm, shape.cpus, shape.gpus)))
        self.created += 1

    def _drop_dead_nodes(self) -> None:
        import ray

        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        for slot in list(self.slots):
            if slot.ready and not slot.busy and slot.where.get("node") not in alive:
                self.drop(slot)

    def drop(self, slot: Slot) -> None:
        """End an actor (idle, dead, or running a trial that is abandoned)."""
        import ray

        if slot in self.slots:
            self.slots.remove(slot)
        try:
            ray.kill(slot.actor, no_restart=True)
        except Exception as err:  # already gone with its node: nothing left to end
            log.debug("ending a worker: %s", err)

    # ---------------------------------------------------------------------------------------- state
    def poll(self) -> list[tuple[Slot, BaseException]]:
        """Mark actors that finished starting; return those that failed to start, with their error."""
        import ray

        pending = {s.ready_ref: s for s in self.slots if not s.ready}
        if not pending:
            return []
        done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
        failed: list[tuple[Slot, BaseException]] = []
        for ref in done:
            slot = pending[ref]
            try:
                slot.where = ray.get(ref)
                slot.ready = True
            except Exception as err:
                failed.append((slot, err))
                self.drop(slot)
        return failed

    def idle(self) -> list[Slot]:
        return [s for s in self.slots if s.ready and not s.busy]

    def n_ready(self) -> int:
        return sum(s.ready for s in self.slots)

    def n_busy(self) -> int:
        return sum(s.busy for s in self.slots)

    def shutdown(self) -> None:
        for slot in list(self.slots):
            self.drop(slot)

    def wait_ready(self, timeout_s: float) -> None:
        """Give freshly created actors a moment to start (used once at the start of a run)."""
        deadline = time.monotonic() + timeout_s
        while any(not s.ready for s in self.slots) and time.monotonic() < deadline:
            self.poll()
            if self.n_ready():
                return
            time.sleep(0.05)


def cluster_slots(demand: dict[Shape, int]) -> int:
    """How many trials the cluster can run at once for this demand (for progress and ETA)."""
    import ray

    totals = ray.cluster_resources()
    return sum(targets(totals.get("CPU", 0.0), totals.get("GPU", 0.0), demand).values()) or 1

