"""A task is a split, not a suite; a model not run on a task is left out of it, never scored 0 (a model's own
code is part of its cells: tests/test_code_versions.py). Real runs on a local Ray, real DuckDB files, the real
merge and report."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pipeline import plan, runner
from pipeline.data.merge import merge
from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.report.data import ReportData
from pipeline.report.pages import accuracy, overview, write_report
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats.ranking import ranking
from pipeline.spec import parse_suite

pytestmark = pytest.mark.slow

PROTOCOL = {"folds": 3, "max_folds": 1, "sample_sizes": ["all"]}
SUITE_A = {"name": "a", "seed": 1, "datasets": [{"sklearn": "breast_cancer"}, {"sklearn": "wine"}],
           "protocol": PROTOCOL,
           "models": [{"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 30}},
                      {"name": "lightgbm", "trials": 1, "fixed": {"n_estimators": 30}}]}
SUITE_B = {"name": "b", "seed": 1, "datasets": [{"sklearn": "breast_cancer"}], "protocol": PROTOCOL,
           "models": [{"name": "mlp", "trials": 1, "fixed": {"max_epochs": 15, "batch_size": 64}}]}
LB = ["dataset", "sample_size", "model", "score_mean", "score_std", "n_ok", "n_cells", "n_failed", "n_missing"]


def run(suite: dict, db: Path) -> runner.Summary:
    return runner.run(parse_suite(copy.deepcopy(suite)), db, progress=lambda _: None)


@pytest.fixture(scope="module")
def files(ray_local, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tasks")
    out = {k: root / f"{k}.duckdb" for k in ("a", "b", "b_as_a", "all", "all_same_name")}
    run(SUITE_A, out["a"])
    run(SUITE_B, out["b"])
    run({**SUITE_B, "name": "a"}, out["b_as_a"])  # the same suite name, one model on one of its datasets
    merge([out["a"], out["b"]], out["all"])
    merge([out["a"], out["b_as_a"]], out["all_same_name"])
    return out


def test_two_suites_that_ran_one_split_ran_one_task(files: dict[str, Path]):
    store = Store(files["all"])
    lb = store.query("SELECT * FROM leaderboard ORDER BY dataset, model")
    # One task per (dataset, split, size), not one per suite: breast_cancer holds all three models.
    assert lb.groupby(["dataset", "split_key", "sample_size"]).ngroups == 2
    bc = lb[lb.dataset == "breast_cancer"].set_index("model")
    assert sorted(bc.index) == ["lightgbm", "mlp", "xgboost"]
    top = bc.score_mean.max()
    assert int(bc.is_best.sum()) + int(bc.is_tied_best.sum()) >= 1
    assert bc.is_best.sum() <= 1 and (bc.is_best | bc.is_tied_best).tolist() == (bc.score_mean >= top - 1e-12).tolist()
    assert set(bc.suite) == {"a", "b"}  # the suite is a label of the row
    # The MLP was never planned on wine: no row there at all (not a missing cell, not a zero).
    wine = lb[lb.dataset == "wine"]
    assert sorted(wine.model) == ["lightgbm", "xgboost"] and wine.n_missing.sum() == 0
    assert store.query("SELECT count(*) AS n FROM expected_cells WHERE model = 'mlp'").n[0] == 1


def test_merging_another_suite_leaves_the_first_suites_figures_as_they_were(files: dict[str, Path]):
    alone = Store(files["a"]).query("SELECT * FROM leaderboard")[LB].sort_values(["dataset", "model"], ignore_index=True)
    merged = Store(files["all"]).query("SELECT * FROM leaderboard WHERE model <> 'mlp'")[LB].sort_values(
        ["dataset", "model"], ignore_index=True)
    pd.testing.assert_frame_equal(alone, merged, check_dtype=False)
    # On wine, where the MLP did not run, LightGBM's normalised score, rank and record are unchanged.
    before, after = (ranking(ReportData.load(files[k]), "all") for k in ("a", "all"))
    wine = ("wine", before.scores.index[1][1], "all")
    assert before.scores.index[1][0] == "wine"
    norm_before = agg.normalized_scores(before.scores, ran=before.ran).loc[wine]
    norm_after = agg.normalized_scores(after.scores, ran=after.ran).loc[wine]
    assert norm_after[["lightgbm", "xgboost"]].tolist() == norm_before[["lightgbm", "xgboost"]].tolist()
    assert pd.isna(norm_after["mlp"])


def test_the_model_that_ran_one_task_of_two_is_ranked_on_it_and_unscored_on_the_other(files: dict[str, Path]):
    for key in ("all", "all_same_name"):
        data = ReportData.load(files[key])
        st = ranking(data, "all")
        mlp = st.summary.set_index("model").loc["mlp"]
        assert (mlp.tasks, mlp.tasks_total, mlp.cells_missing) == (1, 2, 0), key
        assert st.ran.loc[st.ran.index[1], "mlp"] == False  # noqa: E712  (wine)
        r = agg.ranks(st.scores, st.ran)
        assert pd.isna(r.loc[st.ran.index[1], "mlp"]) and not pd.isna(r.loc[st.ran.index[0], "mlp"])
        # Its normalised score is over breast_cancer alone: the mean of one task, not halved by a zero.
        norm = agg.normalized_scores(st.scores, ran=st.ran)["mlp"]
        assert mlp.normalized_score == pytest.approx(norm.iloc[0])
        assert st.uneven
    # The pages say it in words.
    out = files["all"].parent / "reports"
    write_report(files["all"], out, [overview.SPEC, accuracy.SPEC])
    html = (out / "accuracy.html").read_text()
    assert "ran 1 of 2 tasks" in html and "not run" in html
    assert "0 missing" in (out / "index.html").read_text()


def test_another_suite_that_plans_a_cell_already_done_runs_nothing(files: dict[str, Path], tmp_path: Path):
    """Cell ids do not hash the suite's name: suite 'c' planning A's XGBoost on the same split finds it done."""
    db = tmp_path / "c.duckdb"
    shutil.copy(files["a"], db)
    summary = run({**SUITE_A, "name": "c", "models": SUITE_A["models"][:1]}, db)
    assert summary.n_skipped == 2 and summary.n_done == 0
    lb = Store(db).query("SELECT dataset, model, suite FROM leaderboard WHERE model = 'xgboost' ORDER BY dataset")
    assert lb.suite.tolist() == ["a, c", "a, c"]


def as_written_before_schema_6(path: Path, suite: dict) -> None:
    """Turn a results file into what attnbench wrote before schema 6: cell ids that hash the suite's name,
    no split keys, model versions or model code, schema version 5 (what such a file holds)."""
    import duckdb

    spec = parse_suite(copy.deepcopy(suite))
    con = duckdb.connect(str(path))
    for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall():
        con.execute(f"DROP VIEW {name}")
    rows = con.execute("SELECT cell_id, dataset, split_key, repeat, fold, sample_size, seed, model FROM results"
                       ).fetchall()
    for cid, dataset, key, repeat, fold, size, seed, model in rows:
        old = plan.legacy_cell_id(spec, dataset, key, repeat, fold, size, seed, model)
        for table in ("results", "trials", "predictions", "targets", "attention_maps", "suite_cells"):
            con.execute(f"UPDATE {table} SET cell_id = ? WHERE cell_id = ?", [old, cid])
    for table, col in (("results", "split_key"), ("suite_cells", "split_key"), ("suite_cells", "model_version"),
                       ("reference_scores", "split_key"), ("runs", "model_code")):
        con.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
    con.execute("UPDATE attnbench_meta SET value = '5' WHERE key = 'schema_version'")
    con.execute("DELETE FROM attnbench_meta WHERE key IN ('shape', 'views')")
    con.close()


def test_a_file_from_before_schema_6_keeps_its_done_cells_and_reads_as_before(files: dict[str, Path], tmp_path: Path):
    old = tmp_path / "old.duckdb"
    shutil.copy(files["a"], old)
    as_written_before_schema_6(old, SUITE_A)
    before = Store(files["a"]).query("SELECT * FROM leaderboard")[LB].sort_values(["dataset", "model"], ignore_index=True)
    # Read as it is (read-only, not upgraded): the same leaderboard.
    read = Store(old).query("SELECT * FROM leaderboard", prepare=temporary_views)[LB].sort_values(
        ["dataset", "model"], ignore_index=True)
    pd.testing.assert_frame_equal(before, read, check_dtype=False)
    ReportData.load(old)  # the pages' reads, too
    # Run again: nothing runs; the done cells take their new ids.
    summary = run(SUITE_A, old)
    assert (summary.n_skipped, summary.n_done) == (4, 0)
    store = Store(old)
    assert store.query("SELECT count(*) AS n FROM results WHERE split_key IS NULL").n[0] == 0
    ids = set(store.query("SELECT cell_id FROM results").cell_id)
    assert ids == set(Store(files["a"]).query("SELECT cell_id FROM results").cell_id)
    after = store.query("SELECT * FROM leaderboard")[LB].sort_values(["dataset", "model"], ignore_index=True)
    pd.testing.assert_frame_equal(before, after, check_dtype=False)
