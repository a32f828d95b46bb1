"""One Ray Tune search per cell: the space, the searcher, the budget, and every trial as a record.

The first trial always runs the model's defaults (as TabArena does), the rest are sampled from the
space with a seeded searcher. A trial never raises into Tune: it reports its failure as a status
and an error text, so one bad configuration cannot abort the search. Failures Ray itself reports
(a killed worker, Ray's memory monitor) are recorded as ``infra`` or ``oom``.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import threading
import time
import traceback
from typing import Any

from pipeline.data.preprocess import FoldData
from pipeline.models.registry import get
from pipeline.spec import ModelSpec

TRIAL_ERROR_STATUSES = ("error", "diverged", "oom", "timeout")
# Signs of a worker or task killed for memory: torch's and the C++ allocators' messages, Ray's memory
# monitor ("... killed due to the node running low on memory"), the kernel's OOM killer as Ray reports it.
OOM_SIGNS = ("out of memory", "outofmemory", "can't allocate memory", "cannot allocate memory", "bad_alloc",
             "running low on memory", "memory pressure")


class TrialTimeout(TimeoutError):
    """A trial still ran well past its time limit (a model that does not stop at ``max_seconds``)."""


def hard_limit_s(trial_timeout_s: float) -> float:
    """How long a trial may run before it is abandoned: the soft limit (checked once per epoch by the
    training loop) plus room for the epoch in progress and the final scoring."""
    return trial_timeout_s + max(10.0, 0.5 * trial_timeout_s)


def tune_space(spec: ModelSpec) -> dict[str, Any]:
    """The model's space with the suite's overrides, as Ray Tune domains; fixed values stay constants."""
    from ray import tune

    info = get(spec.name)
    space: dict[str, Any] = {**info.full_space, **spec.space}
    out: dict[str, Any] = {}
    for key, dom in space.items():
        if not isinstance(dom, dict):
            out[key] = dom
            continue
        (kind, arg), = dom.items()
        if kind == "choice":
            out[key] = tune.choice(arg)
        elif kind == "uniform":
            out[key] = tune.uniform(*arg)
        elif kind == "loguniform":
            out[key] = tune.loguniform(*arg)
        elif kind == "int":
            out[key] = tune.randint(int(arg[0]), int(arg[1]) + 1)
        elif kind == "logint":
            out[key] = tune.lograndint(int(arg[0]), int(arg[1]) + 1)
    out.update(spec.fixed)
    return out


def default_point(spec: ModelSpec) -> dict[str, Any]:
    """The defaults, restricted to the searched keys, with the suite's fixed values.

    Where a suite narrows a domain so that the default falls outside it, the default is moved
    into the domain (clipped to the range, or the first choice).
    """
    info = get(spec.name)
    defaults = {**info.all_defaults, **{k: v for k, v in spec.space.items() if not isinstance(v, dict)}, **spec.fixed}
    point = {}
    for k in tune_space(spec):
        v, dom = defaults[k], spec.space.get(k)
        if isinstance(dom, dict) and k not in spec.fixed:
            (kind, arg), = dom.items()
            if kind == "choice" and v not in arg:
                v = arg[0]
            elif kind != "choice":
                v = min(max(v, arg[0]), arg[1])
                v = round(v) if kind in ("int", "logint") else v
        point[k] = v
    return point


def classify(err: BaseException) -> str:
    from pipeline.train.loop import Diverged

    if isinstance(err, Diverged):
        return "diverged"
    text = f"{type(err).__name__}: {err}".lower()
    if isinstance(err, MemoryError) or any(sign in text for sign in OOM_SIGNS):
        return "oom"
    if isinstance(err, TimeoutError):
        return "timeout"
    return "error"


def _trial(config: dict[str, Any], *, data: FoldData, spec: ModelSpec, seed: int) -> None:
    from ray import tune

    from pipeline.train.workers import run_fit

    def on_epoch(point: dict[str, float]) -> None:
        tune.report({**point, "status": "running"})

    t0 = time.perf_counter()
    box: dict[str, Any] = {}

    def fit() -> None:
        try:
            box["out"] = run_fit(spec.name, config, data, spec.resources, seed=seed,
                                 max_seconds=spec.trial_timeout_s, on_epoch=on_epoch)
        except Exception as err:
            box["err"] = err

    # The fit runs in a thread so that a model which ignores its time limit cannot hold the trial (and
    # the cell) forever: past the hard limit the trial is recorded as ``timeout`` and its actor ends.
    worker = threading.Thread(target=fit, name="attnbench-fit", daemon=True)
    worker.start()
    worker.join(hard_limit_s(spec.trial_timeout_s))
    if worker.is_alive():
        msg = (f"TrialTimeout: still running {time.perf_counter() - t0:.0f} s after it started; trial_timeout_s is "
               f"{spec.trial_timeout_s:g} and the model did not stop at it")
        tune.report({"status": "timeout", "error": msg, "seconds": time.perf_counter() - t0,
                     "val_score": -math.inf})
        # Raising ends this trial as failed, so Tune stops its actor (and the runaway thread in it)
        # instead of keeping the actor for the next trial; the status reported above is kept.
        raise TrialTimeout(msg)
    if "err" in box:  # recorded as the trial's status, with the traceback
        err = box["err"]
        tune.report({"status": classify(err), "error": "".join(traceback.format_exception(err))[-4000:],
                     "seconds": time.perf_counter() - t0, "val_score": -math.inf})
        return
    out = box["out"]
    out.pop("attention", None)
    tune.report({**out, "status": "ok", "seconds": time.perf_counter() - t0})


def search_cell(cell_id: str, spec: ModelSpec, data: FoldData, *, seed: int,
                total_cpus: float, total_gpus: float) -> list[dict[str, Any]]:
    """Run the search of one cell; return one record per trial (never raises for a trial's failure)."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler
    from ray.tune.search.basic_variant import BasicVariantGenerator

    from pipeline.train.workers import uses_ray_train

    r = spec.resources
    if uses_ray_train(spec.name, r):
        # The trial only waits on its Train workers, which hold the CPUs/GPUs; Tune needs a non-empty
        # request, so the trial asks for one byte of memory and no CPU.
        trial_resources: dict[str, float] = {"cpu": 0, "memory": 1}
        per_trial_cpu, per_trial_gpu = r.cpus * r.workers, r.gpus
    else:
        trial_resources = {"cpu": r.cpus, "gpu": r.gpus}
        per_trial_cpu, per_trial_gpu = r.cpus, r.gpus
    concurrent = max(1, int(total_cpus // per_trial_cpu) if per_trial_cpu else 1)
    if per_trial_gpu:
        concurrent = max(1, min(concurrent, int(total_gpus // per_trial_gpu) or 1))
    scheduler = (
        ASHAScheduler(time_attr="training_iteration", grace_period=3, reduction_factor=3, max_t=10_000)
        if spec.search == "asha" else FIFOScheduler()
    )
    trainable = tune.with_resources(tune.with_parameters(_trial, data=data, spec=spec, seed=seed), trial_resources)
    storage = tempfile.mkdtemp(prefix="attnbench-tune-")
    try:
        tuner = tune.Tuner(
            trainable,
            param_space=tune_space(spec),
            tune_config=tune.TuneConfig(
                metric="val_score", mode="max", num_samples=spec.trials, time_budget_s=spec.time_budget_s,
                search_alg=BasicVariantGenerator(points_to_evaluate=[default_point(spec)], random_state=seed,
                                                 max_concurrent=min(concurrent, spec.trials)),
                scheduler=scheduler, reuse_actors=True,
            ),
            run_config=tune.RunConfig(
                name=cell_id, storage_path=storage, verbose=0,
                failure_config=tune.FailureConfig(max_failures=0, fail_fast=False),
            ),
        )
        try:
            grid = tuner.fit()
        except Exception as err:  # Tune itself gave up (a lost node, a killed driver-side actor, ...)
            return [{"trial_id": "t0", "trial_index": 0, "config": {}, "status": ray_failure_status(err),
                     "val_score": None, "val_loss": None, "epochs": None, "best_epoch": None, "seconds": None,
                     "error": "the search failed: " + "".join(traceback.format_exception(err))[-4000:],
                     "curve": None}]
        return [_record(i, res) for i, res in enumerate(list(grid))]  # type: ignore[call-overload]
    finally:
        shutil.rmtree(storage, ignore_errors=True)


def ray_failure_status(err: BaseException) -> str:
    """The status of a trial or task that Ray reports as failed (ours never raise): ``oom`` when a
    memory monitor or the kernel killed it for memory, else ``infra`` (a dead worker, node or actor)."""
    text = f"{type(err).__name__}: {err}".lower()
    return "oom" if any(sign in text for sign in OOM_SIGNS) else "infra"


def _record(index: int, res: Any) -> dict[str, Any]:
    m = dict(res.metrics or {})
    status = m.get("status", "error")
    error = m.get("error")
    if res.error is not None and not (status == "timeout" and error):  # else our watchdog ended it
        status = ray_failure_status(res.error)
        error = f"{type(res.error).__name__}: {res.error}"[-4000:]
    elif status == "running":
        status = "stopped"  # ASHA (or the search's time budget) stopped it; its last epoch counts
    val = m.get("val_score")
    return {
        "trial_id": m.get("trial_id") or f"t{index}",
        "trial_index": index,
        "config": dict(res.config or {}),
        "status": status,
        "val_score": val if isinstance(val, int | float) and math.isfinite(val) else None,
        "val_loss": m.get("val_loss"),
        "epochs": m.get("epochs") or m.get("epoch"),
        "best_epoch": m.get("best_epoch"),
        "seconds": m.get("seconds") or m.get("time_total_s"),
        "error": error,
        "curve": m.get("curve"),
    }
