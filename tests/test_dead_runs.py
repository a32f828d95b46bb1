"""A run killed outright (SIGKILL, its machine gone) cannot record its end: its row stays 'running'. The next
run into the file, once it holds the file's run lock, marks it 'killed', finished at its last commit; a
refused command leaves it as it was. A reference chunk that shipped it while running ships it again once it
has ended, and reads back one row per run. Real runs on a local Ray, real DuckDB files and Parquet chunks."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import yaml

from pipeline import runner
from pipeline.data import chunks, references, run_lock
from pipeline.errors import AttnbenchError
from pipeline.report.data import ReportData
from pipeline.report.pages.runs import duration, page_runs
from pipeline.spec import parse_suite

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
SUITE = {"name": "dead", "seed": 0, "datasets": [{"sklearn": "wine"}],
         "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": [48, "all"]},
         "models": [{"name": "xgboost", "trials": 2, "fixed": {"n_estimators": 5}}]}


@pytest.fixture(scope="module")
def ran(ray_local, tmp_path_factory) -> Path:
    """A results file with one finished run of SUITE's two cells."""
    db = tmp_path_factory.mktemp("ran") / "r.duckdb"
    summary = runner.run(parse_suite(copy.deepcopy(SUITE)), db, progress=lambda _: None)
    assert (summary.status, summary.n_done) == ("finished", 2)
    return db


def killed_copy(ran: Path, path: Path, *, lose_a_cell: bool) -> tuple[str, pd.Timestamp]:
    """``path``: the file as a run SIGKILLed after its last commit leaves it (its row 'running', no end;
    with ``lose_a_cell``, its second cell's result never committed, its trials did). Returns the run's id
    and its last commit."""
    path.write_bytes(ran.read_bytes())
    with duckdb.connect(str(path)) as con:
        run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
        if lose_a_cell:
            con.execute("DELETE FROM results WHERE cell_id = (SELECT max(cell_id) FROM results)")
            con.execute("UPDATE runs SET n_done = n_done - 1")
        con.execute("UPDATE runs SET status = 'running', finished_at = NULL")
        results = con.execute("SELECT finished_at FROM results WHERE run_id = ?", [run_id]).df().finished_at
        trials = con.execute("SELECT finished_at FROM trials WHERE run_id = ?", [run_id]).df().finished_at
    return run_id, max(results.max(), trials.max())


def row(db: Path, run_id: str) -> dict:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id]).df().iloc[0].to_dict()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_run_killed_outright_is_marked_killed_at_its_last_commit_by_the_next_run(ran: Path, tmp_path: Path):
    db = tmp_path / "r.duckdb"
    dead, last = killed_copy(ran, db, lose_a_cell=True)
    before = row(db, dead)
    gone = subprocess.Popen(["true"])  # the killed run's lock stays behind, its process gone
    gone.wait()
    run_lock.lock_path(db).write_text(json.dumps({"host": socket.gethostname(), "pid": gone.pid, "run_id": dead}))
    suite = tmp_path / "s.yaml"
    suite.write_text(yaml.safe_dump(SUITE))

    # Refused before the lock (a suite of no cell) and after it (a Ray address where nothing listens, in a
    # process of its own: this one has joined a Ray): the file is as it was, the run still 'running'.
    bad = {**copy.deepcopy(SUITE), "protocol": {**SUITE["protocol"], "sample_sizes": [100_000]}}
    digest = sha(db)
    with pytest.raises(AttnbenchError, match="no cell at all"):
        runner.run(parse_suite(bad), db, progress=lambda _: None)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(suite), "--db", str(db), "--no-report",
                          "--address", "127.0.0.1:9"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "cannot connect" in out.stderr, out.stdout + out.stderr
    assert sha(db) == digest and row(db, dead)["status"] == "running"

    lines: list[str] = []
    summary = runner.run(parse_suite(copy.deepcopy(SUITE)), db, progress=lines.append)
    assert (summary.status, summary.n_done, summary.n_skipped) == ("finished", 1, 1)
    closed = row(db, dead)
    assert closed["status"] == "killed" and pd.Timestamp(closed["finished_at"]) == last
    assert (closed["n_done"], closed["n_failed"]) == (before["n_done"], before["n_failed"])  # its last commit's
    said = [line for line in lines if dead in line]
    assert len(said) == 1 and "marked killed" in said[0] and f"{last:%Y-%m-%d %H:%M:%S}" in said[0], lines
    assert row(db, summary.run_id)["status"] == "finished"
    # The Run details page: killed, with its wall time.
    data = ReportData.load(db)
    wall = data.runs.set_index("run_id").loc[dead, "wall"]
    assert duration(wall) and pd.Timedelta(wall) == last - pd.Timestamp(closed["started_at"])
    table = "".join(page_runs(data).parts).split('id="table-runs"')[1].split("</table>")[0]
    tr = next(r for r in table.split("<tr>") if f">{dead}</td>" in r)
    assert "<td>killed</td>" in tr and f">{duration(wall)}</td>" in tr, tr
    # Closed once: the next run finds nothing to close.
    lines.clear()
    runner.run(parse_suite(copy.deepcopy(SUITE)), db, progress=lines.append)
    assert not [line for line in lines if "marked killed" in line] and row(db, dead) == closed


def test_a_run_shipped_while_running_is_shipped_again_once_it_has_ended(ran: Path, tmp_path: Path):
    db = tmp_path / "r.duckdb"
    dead, last = killed_copy(ran, db, lose_a_cell=False)
    root = tmp_path / "references"
    first = chunks.add_chunk(db, "dead", root=root)
    assert first.cells == 2 and not first.ended
    shipped = {p.name: sha(p) for p in sorted((root / "dead" / "chunk-0001").iterdir())}
    ref = references.load(str(root / "dead"))
    assert ref.df("SELECT status FROM ref_runs WHERE run_id = ?", [dead]).status.tolist() == ["running"]
    with pytest.raises(references.ReferenceError, match="does not hold already"):
        chunks.add_chunk(db, "dead", root=root)  # still running: nothing new to ship

    runner.run(parse_suite(copy.deepcopy(SUITE)), db, progress=lambda _: None)  # nothing to run; it closes the run
    second = chunks.add_chunk(db, "dead", root=root)
    assert (second.chunk, second.cells, second.ended) == ("chunk-0002", 0, [dead])
    assert {p.name: sha(p) for p in sorted((root / "dead" / "chunk-0001").iterdir())} == shipped
    meta = json.loads((root / "dead" / "chunk-0002" / "chunk.json").read_text())
    assert meta["runs"] == [dead] and meta["ended_runs"] == [dead]
    ref = references.load(str(root / "dead"))
    runs = ref.df("SELECT run_id, status, finished_at FROM ref_runs")
    assert runs.run_id.tolist() == [dead]  # one row per run: the latest chunk's
    assert runs.status.tolist() == ["killed"] and pd.Timestamp(runs.finished_at[0]) == last
    assert ref.df("SELECT count(*) AS n FROM ref_results").n[0] == 2
    with pytest.raises(references.ReferenceError, match="does not hold already"):
        chunks.add_chunk(db, "dead", root=root)  # shipped ended: not again
    assert not (root / "dead" / "chunk-0003").exists()
