"""Bookkeeping across runs into one results file, through the real command line and a real local Ray:
each cell key has one current result; a changed model entry supersedes its old results (kept as
history, never averaged in); a new sample size runs only the new cells; a suite that still has failed
cells exits 3 on every run, saying how many and how to retry them; a model whose every trial fails is a
recorded failure, run again only by --retry-failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from processes import in_process as cli

from pipeline.data.store import Store

pytestmark = pytest.mark.slow

XGB = {"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 5}}
BROKEN = {"name": "mlp", "label": "net", "trials": 2, "fixed": {"d_block": 0, "max_epochs": 2}}  # every trial fails
FIXED = {"name": "mlp", "label": "net", "trials": 1, "fixed": {"d_block": 16, "max_epochs": 2}}


def write(path: Path, models: list[dict], sizes: list) -> str:
    path.write_text(yaml.safe_dump({"name": "keep", "seed": 0, "datasets": [{"sklearn": "wine"}],
                                    "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": sizes},
                                    "models": models}))
    return str(path)


def test_changed_entries_supersede_and_failures_keep_counting(ray_local, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]):
    db = str(tmp_path / "r.duckdb")
    suite = tmp_path / "keep.yaml"
    run = ["run", str(suite), "--db", db, "--no-report"]

    # 1. One model fails: exit 3, with the count and the command that retries it.
    write(suite, [XGB, BROKEN], ["all"])
    out = cli(run, capsys)
    assert out.returncode == 3, out.stderr
    assert "1 cell of suite 'keep' failed" in out.stderr and "--retry-failed" in out.stderr, out.stderr
    assert "1 cells done, 1 failed, 0 already done before" in out.stdout, out.stdout
    res = Store(db).query("SELECT status, error, accuracy FROM results WHERE model = 'net'")
    assert res.status.tolist() == ["error"] and "d_block=0" in res.error[0] and res.accuracy.isna().all()

    # 2. Run again unchanged: nothing runs, but the suite still has a failed cell, so still exit 3.
    out = cli(run, capsys)
    assert out.returncode == 3 and "2 cells, 2 already done, 0 to run" in out.stdout, out.stdout + out.stderr
    assert "1 cell of suite 'keep' failed" in out.stderr

    # 2b. A model failure is not retried by a plain re-run (above), but is by --retry-failed: its second attempt.
    out = cli([*run, "--retry-failed"], capsys)
    assert out.returncode == 3 and "1 cell of suite 'keep' failed" in out.stderr, out.stdout + out.stderr
    assert "0 cells done, 1 failed, 1 already done before" in out.stdout, out.stdout
    assert Store(db).query("SELECT attempts FROM results WHERE model = 'net'").attempts.tolist() == [2]

    # 3. Fix the failing entry and add a sample size: the unchanged xgboost cell is not re-run.
    write(suite, [XGB, FIXED], [48, "all"])
    out = cli(run, capsys)
    assert out.returncode == 0, out.stderr
    assert "4 cells, 1 already done, 3 to run" in out.stdout, out.stdout
    store = Store(db)
    assert store.query("SELECT count(*) AS n FROM failures").n[0] == 0  # the old failure is history
    sup = store.query("SELECT model, status, why FROM superseded")
    assert sup.values.tolist() == [["net", "error", "replaced"]]

    # 4. Change the xgboost entry: its two cells re-run, the old ones are superseded, not averaged in.
    old = store.query("SELECT sample_size, accuracy FROM results WHERE model = 'xgboost' ORDER BY sample_size")
    write(suite, [{**XGB, "fixed": {"n_estimators": 40, "max_depth": 2}}, FIXED], [48, "all"])
    out = cli(run, capsys)
    assert out.returncode == 0 and "4 cells, 2 already done, 2 to run" in out.stdout, out.stdout + out.stderr
    assert len(store.query("SELECT * FROM results")) == 2 + 3 + 2  # every version kept as history
    cur = store.query("SELECT sample_size, model, count(*) AS n FROM current_results GROUP BY ALL")
    assert len(cur) == 4 and (cur.n == 1).all()  # one current result per cell key
    sup = store.query("SELECT model, sample_size, why FROM superseded ORDER BY model, sample_size")
    assert sup.values.tolist() == [["net", "all", "replaced"], ["xgboost", "48", "replaced"],
                                   ["xgboost", "all", "replaced"]]
    lb = store.query("SELECT sample_size, score_mean, n_cells, n_ok FROM leaderboard WHERE model = 'xgboost' "
                     "ORDER BY sample_size")
    new = store.query("SELECT r.sample_size, r.accuracy FROM current_results r WHERE model = 'xgboost' "
                      "ORDER BY sample_size")
    assert lb.n_cells.tolist() == [1, 1] and lb.n_ok.tolist() == [1, 1]
    assert lb.score_mean.tolist() == pytest.approx(new.accuracy.tolist())  # the new result alone
    assert len(old) == 2  # (the old results are still there, under their own cell ids)
    # The report counts the current cells only, and lists the history on the runs page.
    from pipeline.report.pages import overview, write_report
    from pipeline.report.pages import runs as runs_page

    write_report(db, tmp_path / "reports", [overview.SPEC, runs_page.SPEC])
    index = (tmp_path / "reports" / "index.html").read_text()
    assert "4 of 4 cells finished" in index
    runs = (tmp_path / "reports" / "runs.html").read_text()
    assert "Superseded results (3)" in runs and 'id="table-superseded"' in runs

    # 5. Drop a model from the suite: its results are history too, and counts no longer include it.
    write(suite, [FIXED], [48, "all"])
    out = cli(run, capsys)
    assert out.returncode == 0 and "2 cells, 2 already done, 0 to run" in out.stdout, out.stdout
    # Nothing to run started no cluster (its run records none), and that latest run is not taken for the
    # machine the timings came from: nothing is marked as timed on other hardware.
    noop = store.query("SELECT hardware FROM runs ORDER BY started_at DESC LIMIT 1").hardware[0]
    assert json.loads(noop)["cluster_cpus"] == 0
    from pipeline.report.data import ReportData

    assert ReportData.load(db).other_hardware == {}
    counts = store.query("SELECT count(*) AS n FROM expected_cells")
    assert counts.n[0] == 2
    gone = store.query("SELECT why FROM superseded WHERE model = 'xgboost'")
    assert gone.why.tolist() == ["not in the suite"] * 4
