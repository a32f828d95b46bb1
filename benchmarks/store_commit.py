"""What committing a finished cell costs (pipeline/data/store.py, ``Store.commit``): its trials and its result
inserted into the results file in one transaction, as the engine does after each cell.

Measured in one run, alternating round by round on fresh files: today's commit, which inserts each table's
rows as one statement over a typed Arrow table, against the reference, the same records inserted a statement
per row (DuckDB's ``executemany``, as the store did before). Seconds per cell committed and the ratio.

    python benchmarks/store_commit.py               # 200 cells of 8 trials, 3 rounds
    python benchmarks/store_commit.py --trials 32   # a longer search per cell
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _common import table

from pipeline.data import store as store_mod
from pipeline.data.rows import sql_value
from pipeline.data.store import Store
from pipeline.records import CellResult, Status, TrialRecord, stored


def cell(i: int, n_trials: int) -> tuple[list[TrialRecord], CellResult]:
    now = datetime(2026, 1, 1)
    trials = [TrialRecord(cell_id=f"c{i}", trial_id=f"c{i}-t{k}", run_id="r", trial_index=k, suggestion=k,
                          config={"lr": 1e-3 * (k + 1), "d_block": 64}, status=Status.OK, val_score=0.8 + k / 1e3,
                          accuracy=0.8, roc_auc=0.9, log_loss=0.4, epochs=20, best_epoch=12, seconds=1.5,
                          fit_seconds=1.2, peak_cpu_mb=30.0, n_params=100_000, device="cpu", precision="fp32",
                          started_at=now, finished_at=now)
              for k in range(n_trials)]
    result = CellResult(cell_id=f"c{i}", run_id="r", suite="bench", dataset="d", task_type="binary", repeat=0,
                        fold=i, sample_size="all", seed=i, model="mlp", model_name="mlp", spec_hash="h",
                        status=Status.OK, val_score=0.8, accuracy=0.8, roc_auc=0.9, finished_at=now)
    return trials, result


def per_row(con, table_name: str, records: list) -> None:
    """The reference: a statement per row."""
    rows = [[sql_value(v) for v in stored(r).values()] for r in records]
    cols = list(stored(records[0]))
    con.executemany(f"INSERT OR REPLACE INTO {table_name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    rows)


def commit_all(path: Path, cells: list, reference: bool) -> float:
    """Seconds per cell: each cell committed on its own, into a fresh file."""
    store = Store(path)
    saved = store_mod.insert_records
    if reference:
        store_mod.insert_records = lambda con, name, cls, records: per_row(con, name, records)  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        for trials, result in cells:
            store.commit(trials, [(result, None)])
        return (time.perf_counter() - t0) / len(cells)
    finally:
        store_mod.insert_records = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--trials", type=int, default=8, help="trials per cell")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cells = [cell(i, args.trials) for i in range(args.cells)]
    best = {"typed table (today)": float("inf"), "a statement per row (reference)": float("inf")}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in best:
                path = Path(tmp) / f"{r}-{name[:5]}.duckdb"
                best[name] = min(best[name], commit_all(path, cells, reference="reference" in name))
                with Store(path).connect(read_only=True) as con:  # both wrote the same rows
                    counts = con.execute("SELECT (SELECT count(*) FROM trials), (SELECT count(*) FROM results)").fetchone()
                assert counts == (args.cells * args.trials, args.cells), counts
    ref = best["a statement per row (reference)"]
    print(f"{args.cells} cells of {args.trials} trials, each cell committed on its own; best of {args.rounds} rounds")
    print(table(["commit", "ms per cell", "× reference"],
                [[name, f"{s * 1e3:.1f}", f"{s / ref:.2f}"] for name, s in best.items()]))


if __name__ == "__main__":
    main()
