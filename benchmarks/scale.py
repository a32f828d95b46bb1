"""How attnbench's costs grow with the size of what it handles: each cost measured at several sizes,
with its growth exponent (the slope of log cost against log size; 1 = in proportion, 2 = quadratic).

Measured:
  * ``rows``: a synthetic dataset of 1,000 to 1,000,000 rows (16 numeric and 2 categorical features):
    ingest and split storage into a fresh results file (seconds, file MB), one fold's arrays built on
    the driver (seconds, MB), and the process's peak memory above its start (MB).
  * ``cells``: a suite of 100 to 10,000 cells of tiny fits (a two-tree random forest on 200 synthetic
    rows) run by the engine on a local Ray of 2 CPUs into a fresh results file: the run's seconds, the
    driver's peak memory above its start (MB; the trial workers are other processes) and the file's MB.
  * ``report``: a results file of 1,000 to 20,000 result rows (each with three trials, each trial with
    its validation and test predictions on 100 rows each, so that the report's post-hoc ensembles are
    built as in a real run), the report written from it (seconds).
Each size runs in a process of its own, so that its peak memory is its own.

    python benchmarks/scale.py             # up to 1,000,000 rows, 10,000 cells and 20,000 result rows
    python benchmarks/scale.py --quick     # up to 100,000 rows, 1,000 cells and 4,000 result rows
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rows_case(n: int, out: Any) -> None:
    from pipeline.data import ingest
    from pipeline.data.store import Store
    from pipeline.plan import expand
    from pipeline.runner import FoldLoader
    from pipeline.spec import parse_suite

    base = _peak_mb()
    suite = parse_suite({"name": "scale", "seed": 0,
                         "datasets": [{"synthetic": "interaction", "n_rows": n, "n_noise": 14, "n_cat_noise": 2}],
                         "protocol": {"folds": 5, "max_folds": 1}, "models": [{"name": "xgboost", "trials": 1}]})
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "r.duckdb")
        t0 = time.perf_counter()
        prepared = ingest.prepare(store, suite.datasets[0], suite.protocol, suite.seed)
        ingest.commit(store, prepared)
        t_ingest = time.perf_counter() - t0
        size_mb = store.path.stat().st_size / 2**20
        cell, _ = next(iter(expand(suite, [prepared])))
        loader = FoldLoader(store, suite)
        stored = ingest.read(store, prepared.name)
        assert stored is not None
        key = loader.key(cell, stored, prepared.split_key)
        t0 = time.perf_counter()
        fold = loader(key)
        t_fold = time.perf_counter() - t0
        fold_mb = sum(a.nbytes for p in (fold.train, fold.valid, fold.test) for a in (p.x_num, p.x_cat, p.y)) / 2**20
    out.put({"ingest_s": t_ingest, "file_mb": size_mb, "fold_s": t_fold, "fold_mb": fold_mb,
             "peak_mb": _peak_mb() - base})


CELLS_PER_DATASET = 500  # 50 labelled model entries × 10 folds


def cells_case(n: int, out: Any) -> None:
    from pipeline import runner
    from pipeline.spec import parse_suite

    n_datasets = max(1, n // CELLS_PER_DATASET)
    n_models = max(1, min(50, n // 10))
    suite = parse_suite({
        "name": "scale-cells", "seed": 0,
        "datasets": [{"synthetic": "additive", "n_rows": 200, "n_noise": 2, "seed": i} for i in range(n_datasets)],
        "protocol": {"folds": 10},
        "models": [{"name": "random_forest", "label": f"rf-{i}", "trials": 1,
                    "fixed": {"n_estimators": 2, "max_depth": 2}} for i in range(n_models)]})
    base = _peak_mb()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "r.duckdb"
        t0 = time.perf_counter()
        summary = runner.run(suite, db, num_cpus=2, progress=lambda _line: None, predictions=False)
        seconds = time.perf_counter() - t0
        out.put({"cells": summary.n_done, "failed": summary.n_failed, "run_s": seconds,
                 "driver_mb": _peak_mb() - base, "file_mb": db.stat().st_size / 2**20})


def report_case(n: int, out: Any) -> None:
    import numpy as np

    from pipeline.data.store import Store
    from pipeline.data.views import install
    from pipeline.predictions import Predictions
    from pipeline.records import CellResult, Status, TrialRecord
    from pipeline.report.pages import write_report

    models = ["xgboost", "catboost", "mlp", "ft_transformer"]
    kinds = {"xgboost": "boosting", "catboost": "boosting", "mlp": "network", "ft_transformer": "attention"}
    sizes = ["64", "256", "1024", "all"]
    per_dataset = len(models) * len(sizes) * 5  # five folds
    n_datasets = max(1, n // per_dataset)
    rng = np.random.default_rng(0)
    n_rows = 100  # validation and test rows of each split

    def predicted(y: np.ndarray, skill: float) -> np.ndarray:
        """Binary probabilities that lean towards the true class by ``skill``."""
        p1 = np.clip(0.5 + skill * (2 * y - 1) + rng.normal(0, 0.2, len(y)), 0.01, 0.99)
        return np.stack([1 - p1, p1], axis=1)

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "r.duckdb")
        store.upsert_run({"run_id": "run-1", "suite": "scale", "suite_yaml": "name: scale\n", "status": "finished",
                          "versions": {}, "hardware": {}, "argv": "scale", "n_cells": 0, "n_done": 0, "n_failed": 0,
                          "n_skipped": 0})
        trials: list[TrialRecord] = []
        cells: list[tuple[Any, dict[str, Any] | None]] = []
        for d in range(n_datasets):
            for size in sizes:
                for fold in range(5):
                    y_valid, y_test = rng.integers(0, 2, n_rows), rng.integers(0, 2, n_rows)
                    for m in models:
                        cid = f"d{d}|{size}|{fold}|{m}"
                        score = 0.7 + 0.05 * math.log2(1 + models.index(m)) + 0.01 * fold + 0.001 * d
                        for i in range(3):
                            trials.append(TrialRecord(cell_id=cid, trial_id=f"{cid}-{i}", run_id="run-1", trial_index=i,
                                                      suggestion=i, status=Status.OK, val_score=score - 0.01 * (2 - i),
                                                      val_loss=0.5, accuracy=score - 0.01 * (2 - i), seconds=1.0,
                                                      predictions=Predictions(predicted(y_valid, 0.1 * i), predicted(
                                                          y_test, 0.1 * i), y_valid, y_test)))
                        cells.append((CellResult(cell_id=cid, run_id="run-1", suite="scale", dataset=f"d{d}",
                                                 task_type="binary", repeat=0, fold=fold, sample_size=size, seed=0,
                                                 model=m, model_name=m, model_kind=kinds[m], spec_hash="s",
                                                 status=Status.OK, n_trials=3, best_trial=f"{cid}-2", accuracy=score,
                                                 val_score=score, n_train=1000, fit_seconds=1.0, epochs=10,
                                                 best_epoch=5, predict_rows_per_s=1e4, peak_cpu_mb=10.0), None))
        store.commit(trials, cells)
        install(store)
        t0 = time.perf_counter()
        write_report(store.path, Path(tmp) / "reports")
        out.put({"report_s": time.perf_counter() - t0, "rows": len(cells)})


def run(case: Any, n: int) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=case, args=(n, q))
    p.start()
    res = q.get()
    p.join()
    return res


def exponent(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y on log x."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes: a minute or two")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    rows = [1_000, 10_000, 100_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    report = [1_000, 2_000, 4_000] if args.quick else [1_000, 5_000, 20_000]
    cells = [100, 300, 1_000] if args.quick else [100, 1_000, 10_000]
    figures: dict[str, Any] = {"rows": {}, "cells": {}, "report": {}}
    print(f"{'rows':>10} {'ingest s':>9} {'file MB':>8} {'fold s':>7} {'fold MB':>8} {'peak MB':>8}")
    for n in rows:
        r = figures["rows"][n] = run(rows_case, n)
        print(f"{n:>10,} {r['ingest_s']:>9.2f} {r['file_mb']:>8.1f} {r['fold_s']:>7.2f} {r['fold_mb']:>8.1f} "
              f"{r['peak_mb']:>8.0f}")
    print(f"\n{'cells':>10} {'run s':>9} {'driver MB':>10} {'file MB':>8}")
    for n in cells:
        r = figures["cells"][n] = run(cells_case, n)
        print(f"{r['cells']:>10,} {r['run_s']:>9.1f} {r['driver_mb']:>10.0f} {r['file_mb']:>8.1f}"
              + (f"  ({r['failed']} failed)" if r["failed"] else ""))
    print(f"\n{'results':>10} {'report s':>9}")
    for n in report:
        r = figures["report"][n] = run(report_case, n)
        print(f"{r['rows']:>10,} {r['report_s']:>9.2f}")
    # Over all sizes, fixed costs (Ray's start, imports, a file's first blocks) flatten the slope; the
    # slope between the two largest sizes is where a cost that grows faster than linearly shows.
    print("\ngrowth exponents (1 = in proportion)      all sizes  largest two")
    xs = [float(n) for n in rows]
    xc = [float(figures["cells"][n]["cells"]) for n in cells]
    xr = [float(figures["report"][n]["rows"]) for n in report]
    lines = [(f"rows → {key}", xs, [figures["rows"][n][key] for n in rows])
             for key in ("ingest_s", "file_mb", "fold_s", "fold_mb", "peak_mb")]
    lines += [(f"cells → {key}", xc, [figures["cells"][n][key] for n in cells])
              for key in ("run_s", "driver_mb", "file_mb")]
    lines.append(("result rows → report_s", xr, [figures["report"][n]["report_s"] for n in report]))
    for name, x, y in lines:
        print(f"  {name:<38} {exponent(x, y):5.2f}  {exponent(x[-2:], y[-2:]):11.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
