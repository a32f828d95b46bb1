"""A trial, and the warm Ray actor that runs trials one after another.

``run_trial`` fits one configuration on one cell's data and scores it on validation *and* test: the
engine selects by validation only, and the selected trial's test metrics and cost become the cell's
result, so no configuration is ever trained twice. It never raises for the model's failure: the
status and the traceback go into the record. It knows nothing of the scheduler and runs without Ray
(a test, a notebook).

``TrialWorker`` lives for the whole run: imports happen once, each fold's arrays are fetched from
the object store once and cached, and a trial is one method call.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pipeline.data.preprocess import FoldData
from pipeline.engine.faults import classify
from pipeline.engine.records import TrialRequest
from pipeline.learners.resolve import ResolvedModel
from pipeline.records import TEST_METRICS, Status, StopReason, TrialRecord
from pipeline.spec import Resources

if TYPE_CHECKING:
    from pipeline.learners.trial import TrialOutcome

log = logging.getLogger(__name__)

CACHED_FOLDS = 3  # fold arrays a worker keeps; the scheduler runs one fold's cells together


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def run_trial(req: TrialRequest, data: FoldData, *, decide: Callable[[int, float], bool] | None = None,
              data_ref: Any = None) -> TrialRecord:
    """Fit and score one trial; ``decide(epoch or round, score)`` is ASHA's word on going on."""
    from pipeline.engine.launch import run_fit

    rec = TrialRecord(cell_id=req.cell_id, trial_id=req.trial_id, trial_index=req.trial_index,
                      suggestion=req.suggestion, attempt=req.attempt, config=dict(req.config), started_at=utcnow())
    t0 = time.perf_counter()
    resources = Resources(cpus=req.cpus, gpus=req.gpus, workers=req.workers, backend=req.backend)  # type: ignore[arg-type]
    try:
        out = run_fit(req.model.info, req.model.config(req.config), data, resources, seed=req.seed,
                      max_seconds=req.trial_timeout_s, clock=req.clock, score_test=True, attention=req.attention, on_step=decide,
                      data_ref=data_ref, compress=tuple(req.model.spec.compress), keep_predictions=req.predictions)
    except Exception as err:  # the model's failure is the trial's record, never the engine's exception
        rec.status = classify(err)
        rec.error = "".join(traceback.format_exception(err))[-4000:]
    else:
        record_outcome(rec, out)
        rec.status = Status.STOPPED if out.fit.stop_reason == StopReason.PRUNED else Status.OK
        if rec.val_score is None or not math.isfinite(rec.val_score):
            rec.status, rec.error = Status.DIVERGED, f"the validation score is {rec.val_score}"
    rec.seconds = time.perf_counter() - t0
    rec.finished_at = utcnow()
    return rec


def record_outcome(rec: TrialRecord, out: TrialOutcome) -> None:
    """A trial's typed outcome into its stored record, field by field."""
    f, u = out.fit, out.usage
    rec.epochs, rec.best_epoch, rec.stop_reason, rec.n_params, rec.device, rec.curve = (
        f.iterations, f.best_iteration, f.stop_reason, f.n_params, f.device, f.curve)
    rec.precision = f.precision
    rec.fit_seconds, rec.peak_cpu_mb, rec.peak_gpu_mb = u.seconds, u.peak_cpu_mb, u.peak_gpu_mb
    s = out.scores
    rec.val_score, rec.val_loss, rec.predict_seconds, rec.predict_rows_per_s = (
        s.val_score, s.val_loss, s.predict_seconds, s.predict_rows_per_s)
    for metric in TEST_METRICS:
        setattr(rec, metric, getattr(s, metric))
    rec.flops_per_row, rec.attention, rec.variants = out.flops_per_row, out.attention, out.variants
    rec.predictions = out.predictions


def in_own_thread(fn: Callable[[], TrialRecord]) -> TrialRecord:
    """Run a trial on a thread of its own: what libraries keep per thread (buffers, caches) goes with
    it, and its allocations come from an allocator arena that the worker's long-lived objects do not
    share, so that its memory figure does not depend on what the worker ran before."""
    box: list[TrialRecord] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box.append(fn())
        except BaseException as err:  # run_trial records the model's failures; this is anything else
            errors.append(err)

    thread = threading.Thread(target=target, name="attnbench-trial")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return box[0]


class TrialWorker:
    """A long-lived Ray actor: one per slot of one resource shape (CPUs and whole or fractional GPUs)."""

    def __init__(self) -> None:
        self.folds: OrderedDict[str, FoldData] = OrderedDict()
        self.where: dict[str, str] = {}

    def ready(self, libraries: list[str], warm: list[tuple[ResolvedModel, str]] = (),  # type: ignore[assignment]
              cpus: float = 1, gpus: float = 0) -> dict[str, str]:
        """Import the libraries the run's models' Learners name and fit each model once on made-up rows
        of each task type of the run (``warm``: model, task type), so that no trial's time or memory
        includes a library's start-up; then say where this worker is. A library that fails to import
        is left to the trials that need it, which record the error."""
        import importlib

        import ray

        from pipeline.cost import freeze_long_lived, pin_allocator
        from pipeline.learners.trial import Context, warm_up

        # Before the imports (a library's own allocator reads its policy when it is loaded) and the
        # warm-up, so that it and every trial run under one allocator policy.
        pin_allocator()
        for lib in libraries:
            try:
                importlib.import_module(lib)
            except Exception as err:  # the trials of its models record the same error
                log.warning("worker warm-up: cannot import %s: %s", lib, f"{type(err).__name__}: {err}")
        ctx = Context(threads=max(1, int(cpus)), use_gpu=gpus > 0)
        for model, task_type in warm:
            # The registry's defaults, not the suite entry's: the same code paths and kernels, at a size
            # that cannot itself be the failure a trial of a huge configuration records.
            warm_up(model.info, {**model.info.config_defaults(), **model.info.quick_config()}, task_type, ctx,
                    compress=tuple(model.spec.compress))
        freeze_long_lived()  # what the worker keeps for good; the collection before each trial skips it
        self.where = {"node": ray.get_runtime_context().get_node_id(), "worker": f"{socket.gethostname()}:{os.getpid()}"}
        return self.where

    def _fold(self, key: str, ref: Any) -> FoldData:
        import ray

        if key in self.folds:
            self.folds.move_to_end(key)
        else:
            self.folds[key] = ray.get(ref)
            while len(self.folds) > CACHED_FOLDS:
                self.folds.popitem(last=False)
        return self.folds[key]

    def run(self, req: TrialRequest, data_ref: list[Any], board: Any = None) -> TrialRecord:
        """Run one trial. ``data_ref`` is a one-element list so that Ray hands over the reference, and
        the arrays are fetched only when this worker has not cached them."""
        import ray

        decide = None
        if req.asha and board is not None:
            from pipeline.engine.searchers import grace_for, milestones

            grace = grace_for(req.model)
            rungs = set(milestones(grace))

            def decide(epoch: int, score: float) -> bool:  # the board is asked at its rungs only
                return epoch not in rungs or bool(ray.get(board.decide.remote(req.cell_id, epoch, score, grace)))
        data = self._fold(req.data_key, data_ref[0])
        rec = in_own_thread(lambda: run_trial(req, data, decide=decide, data_ref=data_ref[0]))
        rec.node, rec.worker = self.where.get("node"), self.where.get("worker")
        return rec
