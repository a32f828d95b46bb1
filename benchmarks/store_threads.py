"""What one connection at a time costs the engine's commits (pipeline/data/store.py, ``_OPEN``).

The engine commits trials (with their predictions) on a thread of its own while the driver reads the next
fold from the same results file. Store serialises a process's connections to a file, because DuckDB's
Python client could hand a thread a database instance whose pandas scan was not registered yet (a commit
then failed). Serialised, a thread no longer shares an open instance with the other's connection, and
each open reads the file's catalogue again. This measures both ways in one run, alternating, on a results
file that holds a few thousand trials: the commit thread's commits per second beside a driver reading a
fold's rows every ``--read-every`` seconds, with the lock and without it (its failures counted), and the
ratio.

    python benchmarks/store_threads.py            # 3 rounds of 100 commits each way
    python benchmarks/store_threads.py --quick    # 1 round of 40
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from _common import table

from pipeline.data import store as store_mod
from pipeline.data.store import Store
from pipeline.predictions import Predictions, put_predictions


def trial(i: int, rows: int = 200) -> SimpleNamespace:
    rng = np.random.default_rng(i)
    p = rng.dirichlet(np.ones(3), size=rows)
    y = rng.integers(0, 3, size=rows)
    return SimpleNamespace(cell_id=f"c{i}", trial_id=f"t{i}", predictions=Predictions(p, p, y, y))


def commits_per_second(store: Store, start: int, n: int, read_every: float) -> tuple[float, int]:
    """Commits per second of a commit thread beside a reader; and how many commits failed."""
    failed = 0

    def commit() -> None:
        nonlocal failed
        for i in range(start, start + n):
            try:
                with store.transaction() as con:
                    put_predictions(con, [trial(i)])
            except Exception:  # counted: what the lock prevents
                failed += 1

    writer = threading.Thread(target=commit)
    t0 = time.perf_counter()
    writer.start()
    while writer.is_alive():
        store.read("SELECT count(*) FROM predictions WHERE cell_id LIKE 'c1%'")
        time.sleep(read_every)
    writer.join()
    return n / (time.perf_counter() - t0), failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--read-every", type=float, default=0.01, help="seconds between the driver's reads")
    args = ap.parse_args()
    rounds, n = (1, 40) if args.quick else (3, 100)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "r.duckdb").init()
        for k in range(0, 3000, 500):  # a file that holds some trials already
            with store.transaction() as con:
                put_predictions(con, [trial(10_000_000 + i) for i in range(k, k + 500)])
        locked, unlocked, failures = [], [], 0
        start = 0
        for _ in range(rounds):  # alternate, so that outside load lands on both
            rate, _failed = commits_per_second(store, start, n, args.read_every)
            locked.append(rate)
            start += n
            saved = store_mod._OPEN
            store_mod._OPEN = contextlib.nullcontext()  # type: ignore[assignment]
            try:
                rate, failed = commits_per_second(store, start, n, args.read_every)
            finally:
                store_mod._OPEN = saved
            unlocked.append(rate)
            failures += failed
            start += n
    best_l, best_u = max(locked), max(unlocked)
    print(table(["", "commits/s (best round)", "failed commits"],
                [["one connection at a time (attnbench)", f"{best_l:.1f}", "0"],
                 ["concurrent connections (before)", f"{best_u:.1f}", str(failures)],
                 ["ratio, serialised / concurrent", f"{best_l / best_u:.2f}", ""]]))


if __name__ == "__main__":
    main()
