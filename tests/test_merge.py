"""`attnbench merge`: results files of several runs in one, through real runs (local Ray, real DuckDB
files) and the real command line."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline import runner
from pipeline.data.store import Store
from pipeline.spec import parse_suite

pytestmark = pytest.mark.slow

SUITE = {
    "name": "tiny",
    "seed": 3,
    "datasets": [{"sklearn": "wine"}],
    "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": ["all"]},
    # One trial a cell: a run of one cell then starts one worker, not two (a trial's rows merge as a search's would)
    "models": [{"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 40, "early_stopping_rounds": 10}}],
}


def suite(**changes: object) -> dict:
    s = copy.deepcopy(SUITE)
    for key, value in changes.items():
        if key == "max_folds":
            s["protocol"]["max_folds"] = value
        elif key == "n_estimators":
            s["models"][0]["fixed"]["n_estimators"] = value
        else:
            s[key] = value
    return s


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command line, in a process of its own."""
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True)


def main(*args: str) -> subprocess.CompletedProcess[str]:
    """The same command's entry point in this process (no interpreter start-up per call)."""
    from pipeline.cli import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def test_merge_runs_refuse_conflicts_and_change_no_input(ray_local, tmp_path: Path):
    a, b, c, other = (tmp_path / f"{n}.duckdb" for n in ("a", "b", "c", "other"))
    runner.run(parse_suite(suite()), a, progress=lambda _: None)  # fold 0
    runner.run(parse_suite(suite(max_folds=2)), b, progress=lambda _: None)  # folds 0 and 1: fold 0 again
    # Another suite on other splits (another seed): its cell is another task; a suite on the same split
    # would plan the same cell (tests/test_tasks.py).
    runner.run(parse_suite(suite(name="other", seed=4)), other, progress=lambda _: None)
    before = {p: digest(p) for p in (a, b, other)}

    merged, reports = tmp_path / "all.duckdb", tmp_path / "reports"
    out = cli("merge", str(a), str(b), str(other), "--db", str(merged), "--reports", str(reports))
    assert out.returncode == 0, out.stderr
    assert "3 cells added" in out.stdout and "tiny/wine/xgboost/n=all/fold 0: kept" in out.stdout
    assert {p: digest(p) for p in (a, b, other)} == before  # the inputs, byte for byte
    store = Store(merged)
    res = store.query("SELECT suite, fold, run_id FROM current_results ORDER BY suite, fold")
    assert res[["suite", "fold"]].values.tolist() == [["other", 0], ["tiny", 0], ["tiny", 1]]
    # Fold 0 was in a and b: one kept (both finished, both with predictions: the later), and why.
    choice = store.query("SELECT * FROM merge_choices")
    assert len(choice) == 1 and choice.why[0].startswith("both ok: the later result")
    runs_b = Store(b).query("SELECT run_id FROM runs").run_id.tolist()
    assert res.run_id[res.suite == "tiny"].tolist() == runs_b * 2
    # Provenance: every result's run is in the merged runs table, with its host and versions.
    runs = store.query("SELECT r.run_id, r.hardware, r.versions FROM runs r")
    assert set(res.run_id) <= set(runs.run_id) and runs.hardware.notna().all() and runs.versions.notna().all()
    # The kept cell's trials and predictions came with it, from the same file.
    n_trials = store.query("SELECT count(*) AS n FROM trials").n[0]
    assert n_trials == len(store.query("SELECT DISTINCT trial_id FROM predictions")) > 0
    assert store.query("SELECT count(*) AS n FROM trials t JOIN results r USING (cell_id) "
                       "WHERE t.run_id <> r.run_id").n[0] == 0
    # One report covers both suites, its tables from the merged file.
    accuracy = (reports / "accuracy.html").read_text()
    keys = store.query("SELECT DISTINCT suite, split_key FROM current_results ORDER BY suite")
    assert keys.split_key.nunique() == 2  # wine split two ways: two tasks, each labelled with its split
    assert all(f"wine · split {k[:8]}" in accuracy for k in keys.split_key)
    assert "3 ok · 0 failed · 0 missing" in (reports / "index.html").read_text()

    # Files with no cell in common: nothing to choose, everything kept.
    apart = main("merge", str(a), str(other), "--db", str(tmp_path / "apart.duckdb"), "--no-report")
    assert apart.returncode == 0 and "2 cells added" in apart.stdout, apart.stderr
    assert len(Store(tmp_path / "apart.duckdb").query("SELECT * FROM merge_choices")) == 0
    # A file merged before, beside one of its inputs: the same result twice, copied once and said so.
    overlap = main("merge", str(a), str(tmp_path / "apart.duckdb"), "--db", str(tmp_path / "overlap.duckdb"),
                   "--no-report")
    assert overlap.returncode == 0 and "2 cells added" in overlap.stdout, overlap.stderr
    assert "1 held by several inputs, the same result (copied once)" in overlap.stdout, overlap.stdout
    assert len(Store(tmp_path / "overlap.duckdb").query("SELECT * FROM merge_choices")) == 0

    # Merging again changes nothing, byte for byte.
    merged_digest = digest(merged)
    again = main("merge", str(a), str(b), str(other), "--db", str(merged), "--no-report")
    assert again.returncode == 0 and "nothing new" in again.stdout and digest(merged) == merged_digest

    # One suite planned two different entries for the same cell: refused, nothing written.
    runner.run(parse_suite(suite(n_estimators=41)), c, progress=lambda _: None)
    c_digest = digest(c)
    refused = main("merge", str(a), str(c), "--db", str(tmp_path / "never.duckdb"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "suite 'tiny' ran model 'xgboost'" in refused.stderr and str(a) in refused.stderr and str(c) in refused.stderr
    assert not (tmp_path / "never.duckdb").exists() and digest(a) == before[a] and digest(c) == c_digest
    # Into an existing output: refused the same way, the output unchanged.
    refused = main("merge", str(c), "--db", str(merged))
    assert refused.returncode == 2 and digest(merged) == merged_digest
    # The output is never one of the inputs.
    refused = main("merge", str(a), "--db", str(a))
    assert refused.returncode == 2 and "never modifies its inputs" in refused.stderr and digest(a) == before[a]


def test_the_same_dataset_name_with_other_rows_is_refused(tmp_path: Path):
    rng = np.random.default_rng(0)
    files = []
    for i in range(2):
        path = tmp_path / f"rows{i}.csv"
        pd.DataFrame({"x": rng.normal(size=60), "y": np.tile(["a", "b"], 30)}).to_csv(path, index=False)
        spec = tmp_path / f"s{i}.yaml"
        spec.write_text(f"name: s{i}\ndatasets:\n  - {{name: mine, file: {path}, target: y}}\n"
                        "protocol: {folds: 3}\nmodels:\n  - {name: xgboost, trials: 1}\n")
        db = tmp_path / f"d{i}.duckdb"
        out = main("fetch", str(spec), "--db", str(db))
        assert out.returncode == 0, out.stderr
        files.append(db)
    before = [digest(f) for f in files]
    out = main("merge", *map(str, files), "--db", str(tmp_path / "m.duckdb"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "dataset 'mine' holds other rows in" in out.stderr and all(str(f) in out.stderr for f in files)
    assert [digest(f) for f in files] == before and not (tmp_path / "m.duckdb").exists()


def test_a_file_holding_fewer_repeats_of_the_same_splits_merges_and_another_fold_is_refused(tmp_path: Path):
    """Issue 59's pilot ran the study's first repeat of a dataset the study repeats five times: the same split
    key, fewer of its folds stored. That merges; a fold whose rows differ under one key is refused in one line,
    naming the fold, and nothing is written."""
    import duckdb

    path = tmp_path / "rows.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.normal(size=90), "y": np.tile(["a", "b", "c"], 30)}).to_csv(path, index=False)
    files = []
    for name, more in (("study", "more_repeats: {repeats: 3, datasets: [mine]}"), ("pilot", "max_folds: 1")):
        spec = tmp_path / f"{name}.yaml"
        spec.write_text(f"name: {name}\ndatasets:\n  - {{name: mine, file: {path}, target: y}}\n"
                        f"protocol: {{folds: 3, {more}}}\nmodels:\n  - {{name: xgboost, trials: 1}}\n")
        db = tmp_path / f"{name}.duckdb"
        out = main("fetch", str(spec), "--db", str(db))
        assert out.returncode == 0, out.stderr
        files.append(db)
    counts = [duckdb.connect(str(f), read_only=True).execute("SELECT count(DISTINCT repeat) FROM splits").fetchone()[0]
              for f in files]
    assert counts == [3, 1]
    out = main("merge", *map(str, files), "--db", str(tmp_path / "m.duckdb"))
    assert out.returncode == 0, out.stderr
    with duckdb.connect(str(files[1])) as con:  # one row of the pilot's fold 0 in another role
        con.execute("UPDATE splits SET role = CASE role WHEN 'test' THEN 'train' ELSE 'test' END "
                    "WHERE row_id = (SELECT min(row_id) FROM splits WHERE fold = 0) AND fold = 0 AND repeat = 0")
    before = [digest(f) for f in files]
    out = main("merge", *map(str, files), "--db", str(tmp_path / "m2.duckdb"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "dataset 'mine' has other splits under key" in out.stderr and "(repeat 0, fold 0)" in out.stderr
    assert [digest(f) for f in files] == before and not (tmp_path / "m2.duckdb").exists()
