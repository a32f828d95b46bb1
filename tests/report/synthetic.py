"""A small results database with known numbers, written through the Store like a real run.

Scores follow ``base + slope · log2(n / 32) + 0.01 · fold`` per model, so the expected aggregates can
be worked out by hand: on "alpha" (800 training rows at 'all') the FT-Transformer overtakes the best
boosting model between 128 and 800 rows; on "beta" (320 rows) it never does. One cell failed (mlp,
beta, all, fold 1), one is missing (catboost, alpha, 32, fold 1) and one trial failed. Every
FT-Transformer cell is budget-bound (best epoch = last, best trial = last); no other cell is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shipped import once

from pipeline.data.store import Store
from pipeline.data.views import install
from pipeline.models.registry import REGISTRY
from pipeline.records import CellResult, TrialRecord

SUITE = "synth"
EVIL_DATASET = "<script>alert(1)</script>"
EVIL_MODEL = "<b onmouseover=alert(2)>evil</b>"
EVIL_FEATURE = "<img src=x onerror=alert(3)>"

# model key → (registered model name, base score, slope per doubling, fit seconds at 32 rows)
MODELS: dict[str, tuple[str, float, float, float]] = {
    "xgboost": ("xgboost", 0.80, 0.020, 0.05),
    "catboost": ("catboost", 0.81, 0.018, 0.20),
    "mlp": ("mlp", 0.75, 0.030, 1.00),
    "ft_transformer": ("ft_transformer", 0.74, 0.035, 2.00),
}


@dataclass
class Dataset:
    name: str
    task_type: str
    n_train_all: int
    features: list[str]
    n_classes: int | None = 2


@dataclass
class Synth:
    datasets: list[Dataset] = field(default_factory=lambda: [
        Dataset("alpha", "binary", 800, ["a0", "a1", "a2", "a3", "a4", "a5"]),
        Dataset("beta", "regression", 320, ["b0", "b1", "b2", "b3"], None),
    ])
    sizes: tuple[str, ...] = ("32", "128", "all")
    folds: tuple[int, ...] = (0, 1)
    models: dict[str, tuple[str, float, float, float]] = field(default_factory=lambda: dict(MODELS))
    failed: set[tuple[str, str, int, str]] = field(default_factory=lambda: {("beta", "all", 1, "mlp")})
    missing: set[tuple[str, str, int, str]] = field(default_factory=lambda: {("alpha", "32", 1, "catboost")})
    # cells no suite planned (nor ran): a model run on fewer folds than the others
    unplanned: set[tuple[str, str, int, str]] = field(default_factory=set)
    gpu_models: set[str] = field(default_factory=set)
    # dataset → the constant predictor's score on each of its splits (reference_scores); none by default,
    # as in a results file from before the reference was recorded.
    constant: dict[str, float] = field(default_factory=dict)
    # Write the suite's plan (suite_cells: every dataset × size × fold × model, missing ones included) and
    # one superseded result: an earlier version of (alpha, all, fold 0, xgboost) that scored 0.5. False:
    # a results file from before plans were recorded.
    plan: bool = True

    def n_train(self, ds: Dataset, size: str) -> int:
        return ds.n_train_all if size == "all" else int(size)

    def score(self, model: str, ds: Dataset, size: str, fold: int) -> float:
        _, base, slope, _ = self.models[model]
        return base + slope * math.log2(self.n_train(ds, size) / 32) + 0.01 * fold


def evil() -> Synth:
    """The default data plus a dataset, a feature and a model whose names are HTML; the MLP is missing
    on alpha at 128 rows (both folds), a gap in its learning curve."""
    s = Synth()
    s.datasets.append(Dataset(EVIL_DATASET, "multiclass", 200, [EVIL_FEATURE, "f1", "f2"], 3))
    s.models[EVIL_MODEL] = ("ft_transformer", 0.70, 0.030, 1.5)
    s.missing |= {("alpha", "128", 0, "mlp"), ("alpha", "128", 1, "mlp")}
    return s


class _InMemory(Store):
    """The Store's own writes into an in-memory database, copied to ``path`` at the end: committing
    each cell to a file (and reopening it) is what makes a real run's writes slow."""

    def __init__(self, path: Path) -> None:
        import duckdb

        self._con = duckdb.connect(":memory:")
        super().__init__(path)
        self._init(self._con)

    @contextlib.contextmanager
    def connect(self, read_only: bool = False, wait_s: float = 30.0) -> Iterator[Any]:
        yield self._con

    def save(self) -> None:
        self._con.execute(f"ATTACH '{self.path}' AS out")
        self._con.execute("COPY FROM DATABASE memory TO out")
        self._con.execute("DETACH out")

    def close(self) -> None:
        self._con.close()


# Where builds are kept for the test session (set by tests/report/conftest.py): the same data is built once
# and copied to each test's path (the default data is built by a dozen tests, seconds each).
SESSION: Path | None = None


def build(path: Path, synth: Synth | None = None) -> Path:
    s = synth or Synth()
    if SESSION is None:
        return _build(path, s)
    # Sets in a fixed order: the key is the same in every xdist worker (each hashes strings its own way).
    key = hashlib.sha256(json.dumps(dataclasses.asdict(s), sort_keys=True, default=sorted).encode()).hexdigest()[:16]
    made = once(SESSION, f"synth-{key}", lambda root: _build(root / "results.duckdb", s))
    shutil.copyfile(made / "results.duckdb", path)
    return path


def _build(path: Path, s: Synth) -> Path:
    store = _InMemory(path)
    try:
        _fill(store, s)
        store.save()
    finally:
        store.close()
    install(Store(path))  # as a run does: the views in the file, for duckdb and the documented queries
    return path


def _fill(store: Store, s: Synth) -> None:
    with store.connect() as con:
        for ds in s.datasets:
            con.execute("INSERT INTO datasets (dataset, source, task_type, target, n_rows, n_features, n_numeric, "
                        "n_categorical, n_classes) VALUES (?, 'synthetic', ?, 'y', ?, ?, ?, 0, ?)",
                        [ds.name, ds.task_type, ds.n_train_all * 5 // 4, len(ds.features), len(ds.features),
                         ds.n_classes])
            for i, f in enumerate(ds.features):
                con.execute("INSERT INTO features (dataset, position, name, kind, n_missing, n_levels) "
                            "VALUES (?, ?, ?, 'numeric', 0, NULL)", [ds.name, i, f])
    store.upsert_run({"run_id": "run-1", "suite": SUITE, "suite_yaml": f"name: {SUITE}\n", "status": "finished",
                      "git_rev": "abc123", "versions": {"python": "3.11", "attnbench": "0.1.0"},
                      "hardware": {"cluster_cpus": 2, "cluster_gpus": 0}, "argv": "attnbench run synth.yaml",
                      "n_cells": 0, "n_done": 0, "n_failed": len(s.failed), "n_skipped": 0})
    with store.connect() as con:
        for ds in s.datasets:
            if ds.name not in s.constant:
                continue
            metric = "r2" if ds.task_type == "regression" else "accuracy"
            for size in s.sizes:
                for fold in s.folds:
                    con.execute(f"INSERT INTO reference_scores (suite, dataset, repeat, fold, sample_size, seed, "
                                f"task_type, n_train, predictor, score, {metric}) VALUES (?, ?, 0, ?, ?, 0, ?, ?, "
                                "'constant', ?, ?)", [SUITE, ds.name, fold, size, ds.task_type, s.n_train(ds, size),
                                                      s.constant[ds.name], s.constant[ds.name]])
    for ds in s.datasets:
        for size in s.sizes:
            for fold in s.folds:
                for key, (name, *_rest) in s.models.items():
                    if (ds.name, size, fold, key) in s.unplanned:
                        continue
                    if s.plan:
                        with store.connect() as con:
                            con.execute("INSERT INTO suite_cells (suite, cell_id, run_id, dataset, task_type, repeat, "
                                        "fold, sample_size, seed, model, model_name, n_train, model_kind) VALUES (?, ?, "
                                        "'run-1', ?, ?, 0, ?, ?, 0, ?, ?, ?, ?)",
                                        [SUITE, f"{ds.name}|{size}|{fold}|{key}", ds.name, ds.task_type, fold, size,
                                         key, name, s.n_train(ds, size), kind_of(name)])
                    if (ds.name, size, fold, key) in s.missing:
                        continue
                    _write_cell(store, s, ds, size, fold, key, name)
    if s.plan and "xgboost" in s.models and any(ds.name == "alpha" for ds in s.datasets) and "all" in s.sizes:
        old = CellResult(cell_id="alpha|all|0|xgboost|v0", run_id="run-0", suite=SUITE, dataset="alpha",
                         task_type="binary", repeat=0, fold=0, sample_size="all", seed=0, model="xgboost",
                         model_name="xgboost", spec_hash="older", status="ok", n_train=800, n_trials=1, attempts=1,
                         n_trials_failed=0, accuracy=0.5)
        store.commit([], [(old, None)])


def kind_of(name: str) -> str:
    """The kind a run stores for a model: its registry entry's (as the runner takes it from the Learner)."""
    return REGISTRY[name].kind


def _write_cell(store: Store, s: Synth, ds: Dataset, size: str, fold: int, key: str, name: str) -> None:
    n = s.n_train(ds, size)
    failed = (ds.name, size, fold, key) in s.failed
    score = s.score(key, ds, size, fold)
    fit = s.models[key][3] * n / 32
    gpu = key in s.gpu_models
    cell_id = f"{ds.name}|{size}|{fold}|{key}"
    metric = "r2" if ds.task_type == "regression" else "accuracy"
    result = {"cell_id": cell_id, "run_id": "run-1", "suite": SUITE, "dataset": ds.name, "task_type": ds.task_type,
              "repeat": 0, "fold": fold, "sample_size": size, "seed": 0, "model": key, "model_name": name, "model_kind": kind_of(name), "spec_hash": "synthetic",
              "status": "error" if failed else "ok", "n_train": n, "n_trials": 3, "attempts": 1,
              "n_trials_failed": 3 if failed else 0}
    # Budget: the FT-Transformer keeps its last epoch (max_epochs) and its search's last trial is its
    # best; the others stop early, at a trial before their last.
    ft = name == "ft_transformer"
    result.update(epochs=20, best_epoch=20 if ft else 12, stop_reason="max_epochs" if ft else "early_stopping",
                  best_trial=f"{cell_id}-{2 if ft else 1}")
    if failed:
        result["error"] = "Traceback (most recent call last):\n  ...\nRuntimeError: simulated failure in every trial"
    else:
        result.update({metric: score, "val_score": score - 0.01, "fit_seconds": fit, "search_seconds": 3 * fit,
                       "predict_seconds": 0.01, "predict_rows_per_s": 1000.0 / s.models[key][3],
                       "peak_cpu_mb": 10.0 * len(ds.features) * (2 if name == "ft_transformer" else 1),
                       "peak_gpu_mb": 5.0 * len(ds.features) if gpu else None,
                       "n_params": 100 * len(ds.features), "flops_per_row": None if name in ("xgboost", "catboost")
                       else 200.0 * len(ds.features), "device": "cuda" if gpu else "cpu"})
    # Trial 0 is the default configuration; trial 2 is the best unless it failed. Test scores: the
    # cell's score for trial 2 (the selected one), lower for the others.
    offsets, test_offsets, seconds = [-0.03, -0.01, 0.0], [-0.05, -0.02, 0.0], [fit, 2 * fit, 0.5 * fit]
    bad_trial = (ds.name, size, fold, key) == ("alpha", "all", 0, "xgboost")
    trials = []
    for i in range(3):
        status = "error" if failed or (bad_trial and i == 2) else "ok"
        trials.append(TrialRecord(cell_id=cell_id, trial_id=f"{cell_id}-{i}", run_id="run-1", trial_index=i,
                                  suggestion=i, config={"i": i}, status=status,
                                  val_score=None if status != "ok" else score + offsets[i], seconds=seconds[i],
                                  **{metric: None if status != "ok" else score + test_offsets[i]},
                                  device="cuda" if gpu else "cpu",
                                  error="ValueError: simulated bad configuration" if status != "ok" else None))
    attention = None
    if name == "ft_transformer" and not failed:
        f = len(ds.features)
        # Each row attends mostly to feature 0, the rest spread evenly.
        row = [0.5 if j == 0 else 0.5 / (f - 1) for j in range(f)]
        attention = {"features": ds.features, "map": [row for _ in range(f)]}
    store.commit(trials, [(CellResult(**result), attention)])


def dump(path: Path) -> str:
    """The results table as JSON lines, for debugging a failing test."""
    return "\n".join(json.dumps(r, default=str) for r in Store(path).query("SELECT * FROM results").to_dict("records"))
