"""The engine commits on a thread of its own while the driver reads the next fold from the same results
file. Opening the file from two threads at once once let a commit find DuckDB's pandas scan missing
(``Table Function with name pandas_scan does not exist``): the Python client registers it on a database
instance only after handing the instance out. Store serialises a process's connections; here a commit
thread writes predictions (a pandas registration, as every commit does) many times beside driver reads
(two threads, more chances to meet) and a CPU hog, and every commit lands. Without the lock in
``Store.connect`` this failed in 3 of 3 runs here (about 10 s each); with it, 22 s."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from pipeline.data.store import Store
from pipeline.predictions import Predictions, put_predictions

COMMITS = 120


def trial(i: int) -> SimpleNamespace:
    p = np.full((4, 2), 0.5)
    y = np.array([0, 1, 0, 1])
    return SimpleNamespace(cell_id=f"c{i}", trial_id=f"t{i}", predictions=Predictions(p, p, y, y))


def test_commits_from_a_thread_beside_reads_and_a_cpu_hog_all_land(tmp_path: Path):
    store = Store(tmp_path / "r.duckdb").init()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])]
    errors: list[str] = []
    try:
        def commit() -> None:
            for i in range(COMMITS):
                try:
                    with store.transaction() as con:
                        put_predictions(con, [trial(i)])
                except Exception as err:  # recorded: the assertion below names each
                    errors.append(f"commit {i}: {type(err).__name__}: {err}")

        def read() -> None:
            while writer.is_alive():
                try:
                    store.read("SELECT count(*) FROM predictions")
                    reads.append(1)
                    time.sleep(0.002)
                except Exception as err:
                    errors.append(f"read: {type(err).__name__}: {err}")

        reads: list[int] = []
        writer = threading.Thread(target=commit, name="attnbench-commit")
        readers = [threading.Thread(target=read, name=f"driver-{i}") for i in range(2)]
        for t in [writer, *readers]:
            t.start()
        for t in [writer, *readers]:
            t.join()
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert not errors, errors[:5]
    assert reads
    held = store.read("SELECT count(DISTINCT cell_id) AS n, count(*) AS rows FROM predictions")
    assert held.n[0] == COMMITS and held.rows[0] == 2 * COMMITS
