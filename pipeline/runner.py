"""The benchmark job: ingest, expand cells, resume, search each cell, refit the best, write results.

A cell is dataset × repeat × fold × sample size × subset seed × model. It is done once its result
row commits (together with all its trials, in one transaction). Re-running a suite skips cells
already done (``--force`` re-runs them); cells that failed for the model's own reasons are not
retried unless ``--retry-failed``; cells lost to infrastructure (a dead worker) are retried.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from pipeline.data import ingest as ingest_mod
from pipeline.data import sources
from pipeline.data.preprocess import FoldData, build_fold
from pipeline.data.store import Store
from pipeline.spec import ModelSpec, SuiteSpec, dataset_label

log = logging.getLogger(__name__)
MODEL_FAILURES = ("error", "diverged", "oom", "timeout")
INFRA_RETRIES = 2  # Ray's own retries of the refit task when its worker dies
CELL_INFRA_RETRIES = 1  # a cell whose every trial was lost to the infrastructure runs once more, in the same run


@dataclass(frozen=True)
class Cell:
    dataset: str
    repeat: int
    fold: int
    sample_size: str  # "128", ..., or "all"
    seed: int
    model: str  # the suite's key for the model entry
    n_train: int
    cell_id: str


@dataclass
class Summary:
    run_id: str
    n_cells: int
    n_done: int = 0
    n_failed: int = 0
    n_skipped: int = 0
    status: str = "running"


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def cell_id(suite: SuiteSpec, dataset: str, checksum: str, repeat: int, fold: int, size: str, seed: int,
            model: str) -> str:
    blob = json.dumps([suite.name, dataset, checksum, repeat, fold, size, seed, model, suite.model_hash(model)])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------- provenance
def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("attnbench", "torch", "ray", "xgboost", "catboost", "scikit-learn", "duckdb", "openml", "numpy", "pandas"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "absent"
    return out


def git_revision() -> str | None:
    try:
        here = Path(__file__).resolve().parent
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                              timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def hardware(resources: dict[str, float]) -> dict[str, Any]:
    import psutil

    return {"platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor(),
            "cpus_local": os.cpu_count(), "memory_gb_local": round(psutil.virtual_memory().total / 2**30, 1),
            "cluster_cpus": resources.get("CPU", 0), "cluster_gpus": resources.get("GPU", 0)}


# ---------------------------------------------------------------------------------------- cells
def expand(suite: SuiteSpec, store: Store, datasets: list[ingest_mod.StoredDataset]) -> Iterator[tuple[Cell, ingest_mod.StoredDataset, str]]:
    p = suite.protocol
    for ds in datasets:
        key = ingest_mod.split_key(p, suite.seed, ds.checksum, ds.has_official_folds)
        folds = store.query(
            "SELECT repeat, fold, count(*) FILTER (WHERE role = 'train') AS n_train FROM splits "
            "WHERE dataset = ? AND split_key = ? GROUP BY ALL ORDER BY repeat, fold", [ds.name, key])
        if p.max_repeats:
            folds = folds[folds.repeat < p.max_repeats]
        if p.max_folds:
            folds = folds[folds.fold < p.max_folds]
        for r, f, n_avail in folds.itertuples(index=False):
            sizes: list[tuple[str, int, int]] = []
            for s in p.sample_sizes:
                if s == "all":
                    sizes.append(("all", int(n_avail), 1))
                elif s < n_avail:
                    sizes.append((str(s), int(s), p.subset_seeds))
                else:
                    log.info("%s fold %s: sample size %s >= the %s training rows; covered by 'all'", ds.name, f, s, n_avail)
            for label, n, n_seeds in sizes:
                for seed in range(n_seeds):
                    for m in suite.models:
                        cid = cell_id(suite, ds.name, ds.checksum, int(r), int(f), label, seed, m.key)
                        yield Cell(ds.name, int(r), int(f), label, seed, m.key, n, cid), ds, key


def fold_data(store: Store, ds: ingest_mod.StoredDataset, key: str, cell: Cell, suite: SuiteSpec) -> FoldData:
    parts = store.query("SELECT row_id, role FROM splits WHERE dataset = ? AND split_key = ? AND repeat = ? AND fold = ?",
                        [ds.name, key, cell.repeat, cell.fold])
    order = store.query("SELECT row_id FROM train_order WHERE dataset = ? AND split_key = ? AND repeat = ? AND fold = ? "
                        "AND seed = ? ORDER BY rank", [ds.name, key, cell.repeat, cell.fold, cell.seed])
    train_ids = order.row_id.to_numpy()[: cell.n_train]
    valid_ids = np.sort(parts.loc[parts.role == "valid", "row_id"].to_numpy())
    test_ids = np.sort(parts.loc[parts.role == "test", "row_id"].to_numpy())
    pre = suite.protocol.preprocessing
    return build_fold(ds.features, ds.y, ds.task_type, ds.classes, np.sort(train_ids), valid_ids, test_ids,
                      numeric=pre.numeric, max_categories=pre.max_categories)


# ----------------------------------------------------------------------------------------- ray
def start_ray(address: str | None, num_cpus: int | None, num_gpus: int | None) -> dict[str, float]:
    import ray

    if not ray.is_initialized():
        os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # our own progress lines replace Tune's tables
        # Every trial is recorded in DuckDB; Tune's own CSV/JSON/TensorBoard files would be noise.
        os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
        kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False,
                                  "logging_level": logging.WARNING}
        if address:
            ray.init(address=address, **{k: v for k, v in kwargs.items() if k != "include_dashboard"})
        else:
            # "local" starts our own Ray even when another cluster runs on this machine; without it
            # ray.init() would join that one.
            ray.init(address="local", num_cpus=num_cpus, num_gpus=num_gpus, **kwargs)
    for name in ("ray.tune", "ray.train", "ray.air"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # With the file loggers off, Tune warns that it cannot re-read trial files; results come from memory.
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    return dict(ray.cluster_resources())


def _final_fit(name: str, config: dict[str, Any], data: FoldData, spec: ModelSpec, seed: int) -> dict[str, Any]:
    from pipeline.train.workers import run_fit

    return run_fit(name, config, data, spec.resources, seed=seed, max_seconds=spec.trial_timeout_s,
                   score_test=True, attention=True)


def refit_best(spec: ModelSpec, config: dict[str, Any], data: FoldData, seed: int) -> dict[str, Any]:
    """Refit the best configuration in a Ray task and score it once on the test part.

    The refit measures cost cleanly (no other trial of the cell runs beside it) and is the only
    place where the test part is scored. Infrastructure failures are retried by Ray.
    """
    import ray

    from pipeline.train.workers import uses_ray_train

    r = spec.resources
    opts: dict[str, Any] = ({"num_cpus": 0} if uses_ray_train(spec.name, r)
                            else {"num_cpus": r.cpus, "num_gpus": r.gpus})
    from pipeline.search import TrialTimeout, hard_limit_s

    task = ray.remote(max_retries=INFRA_RETRIES, retry_exceptions=False)(_final_fit).options(**opts)
    ref = task.remote(spec.name, config, data, spec, seed)
    limit = hard_limit_s(spec.trial_timeout_s)
    try:
        return ray.get(ref, timeout=limit)
    except ray.exceptions.GetTimeoutError:
        ray.cancel(ref, force=True)  # ends the worker that runs it
        raise TrialTimeout(f"the final refit still ran after {limit:g} s (trial_timeout_s is "
                           f"{spec.trial_timeout_s:g}) and was cancelled") from None


def pick_best(trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    ok = [t for t in trials if t["status"] in ("ok", "stopped") and t["val_score"] is not None]
    if not ok:
        return None
    return max(ok, key=lambda t: (t["val_score"], -(t["val_loss"] if t["val_loss"] is not None else math.inf)))


def run_cell(cell: Cell, suite: SuiteSpec, data: FoldData, run_id: str, totals: dict[str, float]) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    from pipeline.search import classify, search_cell

    spec = suite.model(cell.model)
    seed = suite.seed * 1000 + cell.seed
    row: dict[str, Any] = {
        "cell_id": cell.cell_id, "run_id": run_id, "suite": suite.name, "dataset": cell.dataset,
        "task_type": data.task_type, "repeat": cell.repeat, "fold": cell.fold, "sample_size": cell.sample_size,
        "seed": cell.seed, "model": cell.model, "model_name": spec.name, "spec_hash": suite.model_hash(cell.model),
        "n_train": len(data.train), "n_valid": len(data.valid), "n_test": len(data.test),
    }
    t0 = time.perf_counter()
    trials = search_cell(cell.cell_id, spec, data, seed=seed, total_cpus=totals.get("CPU", 1),
                         total_gpus=totals.get("GPU", 0))
    row["search_seconds"] = time.perf_counter() - t0
    for t in trials:
        t.update(cell_id=cell.cell_id, run_id=run_id, finished_at=now())
        t["trial_id"] = f"{cell.cell_id}-{t['trial_index']}"
    row["n_trials"] = len(trials)
    row["n_trials_failed"] = sum(t["status"] not in ("ok", "stopped") for t in trials)
    best = pick_best(trials)
    attention = None
    if best is None:
        statuses = [t["status"] for t in trials] or ["error"]
        row["status"] = "infra" if all(s == "infra" for s in statuses) else next(
            (s for s in statuses if s in MODEL_FAILURES), statuses[0])
        row["error"] = next((t["error"] for t in trials if t.get("error")), "no trial finished")
    else:
        row.update(best_config=best["config"], best_trial=best["trial_id"], val_score=best["val_score"])
        try:
            out = refit_best(spec, best["config"], data, seed)
            attention = out.pop("attention", None)
            row.update({k: v for k, v in out.items() if k in (
                "accuracy", "balanced_accuracy", "roc_auc", "log_loss", "rmse", "r2", "fit_seconds", "predict_seconds",
                "predict_rows_per_s", "peak_cpu_mb", "peak_gpu_mb", "n_params", "flops_per_row", "device", "epochs")})
            row["status"] = "ok"
        except Exception as err:  # recorded as the cell's failure
            import ray.exceptions

            cause = err.cause if isinstance(err, ray.exceptions.RayTaskError) and err.cause else err
            infra = isinstance(err, ray.exceptions.RayError) and not isinstance(err, ray.exceptions.RayTaskError)
            row["status"] = "infra" if infra else classify(cause)
            row["error"] = "final refit failed: " + "".join(traceback.format_exception(cause))[-4000:]
    row["finished_at"] = now()
    return row, trials, attention


def run_cell_retrying(cell: Cell, suite: SuiteSpec, data: FoldData, run_id: str, totals: dict[str, float],
                      progress: Callable[[str], None]) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """``run_cell``, run again when the infrastructure (a dead worker or node) lost the whole cell.

    Failures of the model itself (error, diverged, oom, timeout) are not retried here. The trials of
    every attempt are kept, numbered on, so the lost ones stay on record as ``infra``.
    """
    row, trials, attention = run_cell(cell, suite, data, run_id, totals)
    for _ in range(CELL_INFRA_RETRIES):
        if row["status"] != "infra":
            break
        last = (row.get("error") or "").strip().splitlines()
        progress(f"  {_describe(cell)}: lost to the infrastructure ({last[-1][:200] if last else '?'}); running it again")
        row, more, attention = run_cell(cell, suite, data, run_id, totals)
        renamed = {}
        for t in more:
            t["trial_index"] += len(trials)
            new_id = f"{cell.cell_id}-{t['trial_index']}"
            renamed[t["trial_id"]] = new_id
            t["trial_id"] = new_id
        if row.get("best_trial") in renamed:
            row["best_trial"] = renamed[row["best_trial"]]
        trials = trials + more
        row["n_trials"] = len(trials)
        row["n_trials_failed"] = sum(t["status"] not in ("ok", "stopped") for t in trials)
    return row, trials, attention


def run(suite: SuiteSpec, db: str | Path, *, force: bool = False, retry_failed: bool = False,
        address: str | None = None, num_cpus: int | None = None, num_gpus: int | None = None,
        progress: Callable[[str], None] = print, argv: list[str] | None = None) -> Summary:
    store = Store(db)
    run_id = f"{now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    progress(f"attnbench: suite {suite.name!r} → {Path(db).resolve()} (run {run_id})")
    datasets = []
    for spec in sources.expand(suite.datasets):
        progress(f"  dataset {dataset_label(spec)}: loading")
        datasets.append(ingest_mod.ingest(store, spec, suite.protocol, suite.seed))
    cells = list(expand(suite, store, datasets))
    done = store.done_cells().set_index("cell_id")
    pending = []
    for cell, ds, key in cells:
        if cell.cell_id in done.index and not force:
            status = done.loc[cell.cell_id, "status"]
            if status == "ok" or (status in MODEL_FAILURES and not retry_failed):
                continue
        pending.append((cell, ds, key))
    summary = Summary(run_id=run_id, n_cells=len(cells), n_skipped=len(cells) - len(pending))
    progress(f"  {len(cells)} cells, {summary.n_skipped} already done, {len(pending)} to run")
    totals = start_ray(address, num_cpus, num_gpus)
    if not totals.get("GPU") and any(m.resources.gpus for m in suite.models):
        progress("  notice: the suite asks for GPUs but the cluster has none; those models run on CPU")
        suite = suite.model_copy(update={"models": [
            m.model_copy(update={"resources": m.resources.model_copy(update={"gpus": 0})}) for m in suite.models]})
    run_row = {"run_id": run_id, "suite": suite.name, "suite_yaml": yaml.safe_dump(suite.model_dump(mode="json")),
               "started_at": now(), "status": "running", "git_rev": git_revision(), "versions": versions(),
               "hardware": hardware(totals), "argv": " ".join(argv or sys.argv), "n_cells": len(cells),
               "n_done": 0, "n_failed": 0, "n_skipped": summary.n_skipped}
    store.upsert_run(run_row)
    cache: dict[tuple[str, int, int, str, int], FoldData] = {}
    try:
        for i, (cell, ds, key) in enumerate(pending, 1):
            k = (cell.dataset, cell.repeat, cell.fold, cell.sample_size, cell.seed)
            if k not in cache:
                cache.clear()
                cache[k] = fold_data(store, ds, key, cell, suite)
            row, trials, attention = run_cell_retrying(cell, suite, cache[k], run_id, totals, progress)
            attempts = int(done.loc[cell.cell_id, "attempts"]) if cell.cell_id in done.index else 0
            row["attempts"] = attempts + 1
            store.write_cell(row, trials, attention)
            if row["status"] == "ok":
                summary.n_done += 1
            else:
                summary.n_failed += 1
            progress(f"  [{i}/{len(pending)}] {_describe(cell)}: {_outcome(row)}")
            run_row.update(n_done=summary.n_done, n_failed=summary.n_failed)
            store.upsert_run(run_row)
        summary.status = "finished"
    except KeyboardInterrupt:
        summary.status = "interrupted"
        raise
    except BaseException as err:
        summary.status = "failed"
        run_row["error"] = "".join(traceback.format_exception(err))[-4000:]
        raise
    finally:
        run_row.update(status=summary.status, finished_at=now(), n_done=summary.n_done, n_failed=summary.n_failed)
        store.upsert_run(run_row)
    return summary


def _describe(cell: Cell) -> str:
    return f"{cell.dataset} r{cell.repeat}f{cell.fold} n={cell.sample_size}" + (
        f" s{cell.seed}" if cell.seed else "") + f" {cell.model}"


def _outcome(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        err = (row.get("error") or "").strip().splitlines()
        return f"{row['status'].upper()} {err[-1] if err else ''}"
    metric = f"r2 {row['r2']:.3f}" if row["task_type"] == "regression" else f"acc {row['accuracy']:.3f}"
    return f"{metric} ({row['n_trials']} trials, {row['search_seconds']:.1f} s search, {row['fit_seconds']:.1f} s refit)"
