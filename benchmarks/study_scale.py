"""The report at a study's full size, before the study has run: build time and the pages a reader gets.

A study such as ``study-every-dataset`` ships in chunks over many sessions; its "report build ≤ 60 s"
and "pages readable at 35+ datasets × 8 models" should hold on the day the last chunk lands, not be
found out then. This script exports the shipped reference into a results file (the reference
measurement: the report of the cells run so far), then fills every planned cell that has no result yet
with a synthetic one, copied from a real result of the same model and task type with the cell's own
ids, sizes and a made-up score, and writes the report again. The synthetic scores follow a seeded
learning curve per (dataset, model) with fold-to-fold noise, so that crossovers, ties, projections and
rank correlations all have something to do; they are not results and never leave this script's
temporary folder (or ``--keep``'s).

    python benchmarks/study_scale.py                       # study-every-dataset
    python benchmarks/study_scale.py --keep /tmp/full      # keep the full-size file and its report

Three builds are timed, each in a fresh ``attnbench report`` process: the cells run so far as shipped (the
reference), all planned cells as shipped (no rows: the characteristics that need them are the ones the
reference ships), and all planned cells in a run's own file, with the suite's rows fetched in, so that every characteristic (a forest
on up to 2,000 rows per dataset) is computed as in the study's own report.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGET_SECONDS = 60.0


def _attnbench(*args: str) -> float:
    """Seconds that ``attnbench ARGS`` takes, as a user runs it (a fresh process)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline.cli", *args], check=True, cwd=REPO,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def _scores(missing: pd.DataFrame, seed: int) -> np.ndarray:
    """A score in [0, 1] per missing cell: ceiling − gap·(n/256)^−0.4 per (dataset, model), plus fold noise."""
    rng = np.random.default_rng(seed)
    ceiling = {d: rng.uniform(0.6, 0.95) for d in missing.dataset.unique()}
    pairs = missing[["dataset", "model"]].drop_duplicates().itertuples(index=False)
    offset = {(d, m): rng.normal(0, 0.02) for d, m in pairs}
    gap = {m: rng.uniform(0.05, 0.25) for m in missing.model.unique()}
    base = np.array([ceiling[d] + offset[(d, m)] - gap[m] * (n / 256) ** -0.4
                     for d, m, n in zip(missing.dataset, missing.model, missing.n_train.astype(float), strict=True)])
    return np.clip(base + rng.normal(0, 0.005, len(base)), 0.01, 0.999)


def fill(db: Path, seed: int = 0) -> int:
    """Give every planned cell of ``db`` without a result a synthetic one; returns how many."""
    import duckdb

    con = duckdb.connect(str(db))
    try:
        results = con.execute("SELECT * FROM results").df()
        trials = con.execute("SELECT * FROM trials").df()
        missing = con.execute("SELECT * FROM plan WHERE cell_id NOT IN (SELECT cell_id FROM results)").df()
        if missing.empty:
            return 0
        templates = results[results.status == "ok"].groupby(["model", "task_type"]).head(1)
        template = templates.set_index(["model", "task_type"])
        fallback = results[results.status == "ok"].groupby("model").head(1).set_index("model")
        rows, sources = [], []
        for plan_row in missing.itertuples(index=False):
            key = (plan_row.model, plan_row.task_type)
            row = template.loc[key].copy() if key in template.index else fallback.loc[plan_row.model].copy()
            sources.append(row["cell_id"])
            row["model"], row["task_type"] = key
            for column in ("cell_id", "dataset", "split_key", "repeat", "fold", "sample_size", "seed",
                           "model_name", "variant", "n_train"):
                row[column] = getattr(plan_row, column)
            rows.append(row)
        new = pd.DataFrame(rows).reset_index(drop=True)
        score = _scores(missing, seed)
        classification = new.task_type != "regression"
        new["accuracy"] = np.where(classification, score, np.nan)
        new["balanced_accuracy"] = np.where(classification, score - 0.02, np.nan)
        new["roc_auc"] = np.where(classification, np.minimum(score + 0.05, 1.0), np.nan)
        new["log_loss"] = np.where(classification, 1.0 - score, np.nan)
        new["r2"] = np.where(classification, np.nan, score)
        new["rmse"] = np.where(classification, np.nan, 1.0 - score)
        new["val_score"] = np.where(classification, score, score - 1.0)
        new["best_trial"] = new.cell_id + "-1-0"
        new = new[results.columns]
        first_trial = trials.drop_duplicates("cell_id").set_index("cell_id")
        new_trials = first_trial.loc[sources].reset_index()
        new_trials["cell_id"] = new.cell_id.to_numpy()
        new_trials["trial_id"] = new.best_trial.to_numpy()
        new_trials["val_score"] = new.val_score.to_numpy()
        new_trials = new_trials[trials.columns]
        con.register("new_results", new)
        con.register("new_trials", new_trials)
        con.execute("INSERT INTO results SELECT * FROM new_results")
        con.execute("INSERT INTO trials SELECT * FROM new_trials")
        return len(new)
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default="study-every-dataset", help="a shipped reference's name")
    parser.add_argument("--suite", type=Path, help="the suite whose rows a run's file holds "
                        "(default: suites/REFERENCE.yaml where it exists)")
    parser.add_argument("--keep", type=Path, help="keep the full-size results file and its report here")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="study-scale-"))
    try:
        partial = work / "partial.duckdb"
        _attnbench("reference", "export", args.reference, "--db", str(partial))
        import duckdb

        with duckdb.connect(str(partial), read_only=True) as con:
            ran, planned, n_datasets = con.execute(
                "SELECT (SELECT count(*) FROM results), count(*), count(DISTINCT dataset) FROM plan").fetchall()[0]
        partial_s = _attnbench("report", "--db", str(partial), "--reports", str(work / "partial-report"))
        full = work / "full.duckdb"
        shutil.copy(partial, full)
        added = fill(full)
        full_s = _attnbench("report", "--db", str(full), "--reports", str(work / "full-report"))
        suite = args.suite or REPO / "suites" / f"{args.reference}.yaml"
        rows_s = None
        if suite.is_file():  # a run's own file also holds the rows, and the report computes their characteristics
            with_rows = work / "with-rows.duckdb"
            shutil.copy(full, with_rows)
            _attnbench("fetch", str(suite), "--db", str(with_rows))
            rows_s = _attnbench("report", "--db", str(with_rows), "--reports", str(work / "rows-report"))
        pages = sorted(p.name for p in (work / "full-report").glob("*.html"))
        size_mb = sum(p.stat().st_size for p in (work / "full-report").glob("*.html")) / 2**20

        def line(what: str, seconds: float) -> str:
            verdict = "met" if seconds <= TARGET_SECONDS else "MISSED"
            return (f"  {what:<60} {seconds:6.1f} s = {seconds / partial_s:.2f}× the reference;"
                    f" target ≤ {TARGET_SECONDS:.0f} s: {verdict}")

        print(f"{args.reference}: {planned:,} planned cells on {n_datasets} datasets; {added:,} filled in synthetically")
        print(f"  {'report of the ' + format(ran, ',') + ' cells run so far, as shipped (reference)':<60} {partial_s:6.1f} s")
        print(line(f"report of all {planned:,} cells, as shipped (no rows)", full_s))
        if rows_s is not None:
            print(line("the same from a run's file (rows: characteristics computed)", rows_s))
        print(f"  {len(pages)} pages, {size_mb:.1f} MB of HTML: {', '.join(pages)}")
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(full, args.keep / "full.duckdb")
            shutil.copytree(work / "full-report", args.keep / "report", dirs_exist_ok=True)
            print(f"  kept: {args.keep / 'full.duckdb'}, {args.keep / 'report'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
