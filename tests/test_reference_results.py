"""Reference results: a study's results written as chunks, and a user's models run against them
(`attnbench run my.yaml --against REF`) without re-running the reference's models. Real runs on a local
Ray, real DuckDB files and Parquet chunks."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import yaml
from processes import in_process as cli
from sklearn.datasets import load_breast_cancer

from pipeline import runner
from pipeline.data import characteristics, chunks, references
from pipeline.data.store import Store
from pipeline.report.data import ReportData
from pipeline.report.stats import traits
from pipeline.spec import load_suite, parse_suite

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]

REF_SUITE = {"name": "tinyref", "seed": 2, "datasets": [{"sklearn": "breast_cancer"}, {"sklearn": "wine"}],
             "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": [64, "all"]},
             "models": [{"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 20}},
                        {"name": "lightgbm", "trials": 1, "fixed": {"n_estimators": 20}}]}
MINE = {"name": "mine", "datasets": [{"sklearn": "breast_cancer"}],
        "models": [{"name": "mlp", "trials": 1, "fixed": {"max_epochs": 10, "batch_size": 32}}]}


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def reference(ray_local, tmp_path_factory) -> tuple[Path, Path]:
    """(the reference's results file, the folder of references holding it as 'tinyref')."""
    root = tmp_path_factory.mktemp("refs")
    db = root / "ref.duckdb"
    runner.run(parse_suite(copy.deepcopy(REF_SUITE)), db, progress=lambda _: None)
    added = chunks.add_chunk(db, "tinyref", root=root / "references", note="test")
    assert added.chunk == "chunk-0001" and added.cells == 8 and added.predictions
    return db, root / "references"


def write(path: Path, suite: dict) -> Path:
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def test_your_model_runs_alone_on_the_references_splits_and_is_reported_beside_it(reference, tmp_path: Path):
    _, refs = reference
    ref = references.load(str(refs / "tinyref"))
    db = tmp_path / "mine.duckdb"
    summary = runner.run(load_suite(write(tmp_path / "mine.yaml", MINE)), db, progress=lambda _: None, against=ref)
    assert summary.n_done == 2 and summary.n_cells == 2  # the MLP at 64 rows and at all rows; nothing else ran
    store = Store(db)
    mine = store.query("SELECT run_id FROM runs WHERE suite = 'mine'").run_id.tolist()
    trained = store.query("SELECT DISTINCT r.model FROM trials t JOIN results r USING (cell_id) WHERE t.run_id = ?",
                          [mine[0]])
    assert trained.model.tolist() == ["mlp"]  # this run's trials are the MLP's only
    lb = store.query("SELECT dataset, sample_size, model, suite, n_ok FROM leaderboard ORDER BY ALL")
    # The reference's models on the same splits, one task per split: breast_cancer only (wine was not asked).
    assert set(lb.dataset) == {"breast_cancer"} and set(lb.model) == {"lightgbm", "mlp", "xgboost"}
    assert (lb.n_ok == 1).all() and set(lb.suite) == {"mine", "tinyref"}
    # The protocol is the reference's: its folds, seed and sizes.
    plan = store.query("SELECT DISTINCT split_key, sample_size FROM plan WHERE model = 'mlp' ORDER BY 2")
    theirs = ref.df("SELECT DISTINCT split_key FROM ref_suite_cells WHERE dataset = 'breast_cancer'")
    assert plan.split_key.tolist() == theirs.split_key.tolist() * 2 and plan.sample_size.tolist() == ["64", "all"]
    data = ReportData.load(db)
    assert data.other_hardware == {} or set(data.other_hardware) <= {"xgboost", "lightgbm"}
    # Run again: nothing runs, nothing is copied twice.
    again = runner.run(load_suite(tmp_path / "mine.yaml"), db, progress=lambda _: None, against=ref)
    assert again.n_done == 0 and again.n_skipped == 2
    assert store.query("SELECT count(*) AS n FROM results").n[0] == 6


@pytest.mark.parametrize("case", ["folds", "seed", "size", "unknown_dataset", "other_rows", "same_name"])
def test_another_protocol_or_other_data_is_refused_in_one_line_and_writes_nothing(reference, tmp_path: Path,
                                                                                  case: str, capsys):
    _, refs = reference
    suite = copy.deepcopy(MINE)
    expect = {"folds": "protocol.folds is 5 here and 3 in the reference 'tinyref'",
              "seed": "seed is 7 here and 2 in the reference 'tinyref'",
              "size": "protocol.sample_sizes [128] are not among the reference 'tinyref''s [64, 'all']",
              "unknown_dataset": "dataset 'digits' is not in the reference 'tinyref' (it holds breast_cancer, wine)",
              "other_rows": "dataset 'breast_cancer': other rows than the reference 'tinyref''s (checksum",
              "same_name": "the suite is named 'tinyref', as the reference 'tinyref' is"}[case]
    if case == "folds":
        suite["protocol"] = {"folds": 5}
    elif case == "seed":
        suite["seed"] = 7
    elif case == "size":
        suite["protocol"] = {"sample_sizes": [128]}
    elif case == "unknown_dataset":
        suite["datasets"] = [{"sklearn": "digits"}]
    elif case == "other_rows":
        x, y = load_breast_cancer(return_X_y=True, as_frame=True)
        frame = x.assign(target=y.map({0: "malignant", 1: "benign"}))
        frame.iloc[0, 0] += 1.0  # one value changed: not the same data
        frame.to_csv(tmp_path / "bc.csv", index=False)
        suite["datasets"] = [{"name": "breast_cancer", "file": str(tmp_path / "bc.csv"), "target": "target"}]
    else:
        suite["name"] = "tinyref"
    path = write(tmp_path / "s.yaml", suite)
    db, reports = tmp_path / "r.duckdb", tmp_path / "reports"
    out = cli(["run", str(path), "--db", str(db), "--reports", str(reports), "--against", str(refs / "tinyref")], capsys)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and expect in out.stderr, out.stderr
    assert not db.exists() and not reports.exists()


def test_a_reference_grows_by_chunks_that_are_never_rewritten(reference, tmp_path: Path):
    db, _ = reference
    root = tmp_path / "references"
    chunks.add_chunk(db, "grow", root=root)
    first = digest(root / "grow" / "chunk-0001")
    with pytest.raises(references.ReferenceError, match="does not hold already"):
        chunks.add_chunk(db, "grow", root=root)  # nothing new: no empty chunk
    bigger = tmp_path / "bigger.duckdb"
    bigger.write_bytes(db.read_bytes())
    meta = json.loads((root / "grow" / "reference.json").read_text())
    runner.run(parse_suite({**copy.deepcopy(REF_SUITE), "description": "now on two folds",
                            "protocol": {**REF_SUITE["protocol"], "max_folds": 2}}),
               bigger, progress=lambda _: None)
    added = chunks.add_chunk(bigger, "grow", root=root, predictions=False)
    assert added.chunk == "chunk-0002" and added.cells == 8 and not added.predictions  # fold 1's cells only
    assert added.meta_changes == ["protocol.max_folds 1 → 2", "its description"]
    assert digest(root / "grow" / "chunk-0001") == first
    # What the chunk cost, as its trials measured it: fold 1's cells per training size and their trials' hours.
    cost = json.loads((root / "grow" / "chunk-0002" / "chunk.json").read_text())["cost"]
    spent = Store(bigger).query("SELECT r.sample_size, count(DISTINCT r.cell_id) AS cells, sum(t.seconds) / 3600 AS h "
                                "FROM results r JOIN trials t USING (cell_id) WHERE r.fold = 1 GROUP BY ALL")
    assert {size: (e["cells"], e["trial_hours"]) for size, e in cost["sizes"].items()} == {
        r.sample_size: (r.cells, round(r.h, 4)) for r in spent.itertuples()}
    assert list(cost["sizes"]) == ["64", "all"] and cost == added.cost
    assert cost["trial_hours"] == pytest.approx(spent.h.sum(), abs=1e-4) and spent.h.sum() > 0
    assert cost["searching_trial_hours"] == 0
    # reference.json says what the suite says now (two folds), and nothing else in it moves
    assert json.loads((root / "grow" / "reference.json").read_text()) == {
        **meta, "description": "now on two folds", "protocol": {**meta["protocol"], "max_folds": 2}}
    # another validation share: other cells under the same name; refused, nothing written. The run's plan and
    # its suite are what the refusal reads, so it stops before its first cell (its stop time already past).
    other = tmp_path / "other.duckdb"
    other.write_bytes(db.read_bytes())
    runner.run(parse_suite({**copy.deepcopy(REF_SUITE), "protocol": {**REF_SUITE["protocol"], "validation_fraction": 0.3}}),
               other, progress=lambda _: None, stop_at=time.monotonic())
    assert Store(other).query("SELECT count(*) AS n FROM results").n[0] == Store(db).query(
        "SELECT count(*) AS n FROM results").n[0]  # no cell of its own ran
    before = {p: p.read_bytes() for p in (root / "grow").rglob("*") if p.is_file()}
    with pytest.raises(references.ReferenceError, match=r"protocol\.validation_fraction is 0\.3 .* its cells differ"):
        chunks.add_chunk(other, "grow", root=root)
    assert {p: p.read_bytes() for p in (root / "grow").rglob("*") if p.is_file()} == before
    shipped = duckdb.sql(f"SELECT count(*) FROM read_parquet('{root / 'grow' / 'chunk-0001' / 'dataset_traits.parquet'}')"
                         ).fetchall()[0][0]
    again = duckdb.sql(f"SELECT count(*) FROM read_parquet('{root / 'grow' / 'chunk-0002' / 'dataset_traits.parquet'}')"
                       ).fetchall()[0][0]
    assert (shipped, again) == (2, 0)  # each dataset's characteristics once, with its first chunk
    ref = references.load(str(root / "grow"))
    assert ref.df("SELECT count(*) AS n FROM ref_results").n[0] == 16
    assert ref.df("SELECT count(DISTINCT fold) AS n FROM ref_split_digests").n[0] == 2
    # A results file is a reference too.
    direct = references.load(str(bigger))
    assert direct.df("SELECT count(*) AS n FROM ref_results").n[0] == 16 and direct.suite == "tinyref"


def test_a_chunks_cost_counts_every_trial_once_under_its_cells_size_and_says_what_failed():
    """Sizes in their order (128 before 1,024, 'all' last), failed cells said by status, a cell's every trial
    counted, and a search not finished yet (trials, no result) apart; the line `reference add` prints."""
    from pipeline.reference_commands import cost_text

    con = duckdb.connect()
    con.execute("CREATE TABLE out_results AS SELECT * FROM (VALUES ('a', '1024', 'ok'), ('b', '128', 'ok'), "
                "('c', '128', 'oom'), ('d', 'all', 'ok'), ('e', '1024', 'error')) v(cell_id, sample_size, status)")
    con.execute("CREATE TABLE out_trials AS SELECT * FROM (VALUES ('a', 3600.0), ('a', 1800.0), ('b', 360.0), "
                "('c', 36.0), ('d', 720.0), ('e', NULL), ('s', 900.0)) v(cell_id, seconds)")
    cost = chunks.chunk_cost(con)
    assert cost == {"trial_hours": 2.06, "searching_trial_hours": 0.25, "sizes": {
        "128": {"cells": 2, "not_ok": {"oom": 1}, "trial_hours": 0.11},
        "1024": {"cells": 2, "not_ok": {"error": 1}, "trial_hours": 1.5},
        "all": {"cells": 1, "not_ok": {}, "trial_hours": 0.2}}}
    assert cost_text(cost) == ("cost: 2.06 trial-hours (128 rows: 2 cells (1 oom), 0.11 h; 1,024 rows: 2 cells "
                               "(1 error), 1.50 h; all rows: 1 cells, 0.20 h; searches not finished: 0.25 h)")


def test_reference_json_keeps_the_largest_caps_any_chunk_ran_and_refuses_other_cells(tmp_path: Path):
    """A later chunk from a run with fewer folds or sizes (finishing one size) narrows nothing the chunks
    hold; a run that recorded no suite leaves the file; another seed is refused in one line."""
    path = tmp_path / "reference.json"
    grown = {"folds": 3, "max_folds": 2, "sample_sizes": [256, "all"], "validation_fraction": 0.2}
    first, changed = chunks._meta(path, "r", "s", {"seed": 1, "protocol": grown, "description": "two folds"})
    assert changed == []
    path.write_text(json.dumps(first))
    narrow = {"folds": 3, "max_folds": 1, "sample_sizes": [64], "validation_fraction": 0.2}
    meta, changed = chunks._meta(path, "r", "s", {"seed": 1, "protocol": narrow})
    assert meta["protocol"]["max_folds"] == 2 and meta["protocol"]["sample_sizes"] == [64, 256, "all"]
    assert meta["description"] == "two folds" and changed == ["protocol.sample_sizes [256, 'all'] → [64, 256, 'all']"]
    assert chunks._meta(path, "r", "s", {}) == (first, [])
    with pytest.raises(references.ReferenceError, match=r"seed is 2 in suite 's'.s latest run and 1 in the reference"):
        chunks._meta(path, "r", "s", {"seed": 2, "protocol": grown})


def test_a_reference_from_before_characteristics_were_shipped_gets_them_in_a_chunk_of_their_own(
        reference, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    ran, _ = reference
    db = tmp_path / "old.duckdb"  # a results file from before the table, as it stands: opened read-only
    db.write_bytes(ran.read_bytes())
    with duckdb.connect(str(db)) as con:
        con.execute("DROP TABLE dataset_traits")
    root = tmp_path / "references"
    chunks.add_chunk(db, "old", root=root)
    for path in (root / "old" / "chunk-0001").glob("dataset_traits*.parquet"):
        path.unlink()  # as chunks written before they were
    first = digest(root / "old" / "chunk-0001")
    add = ["reference", "add", str(db), "old", "--into", str(root)]
    out = cli(add, capsys)
    assert out.returncode == 0 and "chunk-0002 with 0 cells and the characteristics of 2 datasets' rows" in out.stdout, \
        out.stderr
    assert digest(root / "old" / "chunk-0001") == first
    ref = references.load(str(root / "old"))
    assert ref.df("SELECT count(*) AS n FROM ref_results").n[0] == 8
    assert sorted(ref.df("SELECT dataset FROM ref_dataset_traits").dataset) == ["breast_cancer", "wine"]
    again = cli(add, capsys)
    assert again.returncode == 2 and "does not hold already" in again.stderr and again.stderr.count("\n") == 1
    assert not (root / "old" / "chunk-0003").exists()


def test_a_chunk_ships_the_characteristics_of_the_rows_over_a_stale_table(reference, tmp_path: Path):
    db, _ = reference
    stale = tmp_path / "stale.duckdb"
    stale.write_bytes(db.read_bytes())
    with duckdb.connect(str(stale)) as con:
        con.execute("INSERT OR REPLACE INTO dataset_traits VALUES ('wine', 9.0, 9.0, 9.0)")
        expected = characteristics.from_rows(con, ["wine"]).iloc[0]
    added = chunks.add_chunk(stale, "rows", root=tmp_path)
    shipped = duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path / 'rows' / added.chunk / 'dataset_traits.parquet'}') "
                         "WHERE dataset = 'wine'").df()
    assert len(shipped) == 1 and shipped.iloc[0].equals(expected) and shipped.target_imbalance[0] != 9.0


def test_a_study_in_chunks_ships_each_chunks_new_results_once(reference, tmp_path: Path):
    """A study's first chunk carries its whole plan and the cells finished so far, with the trials a search
    has committed before its cell finished (and the run they ran in); the next chunk, from the same file
    later, adds the cells finished since, and no plan row, floor, run, dataset or trial twice; a cell moved
    to a new id or re-run after it shipped is shipped again, as the results file holds it."""
    db, _ = reference
    early = tmp_path / "early.duckdb"
    early.write_bytes(db.read_bytes())
    with duckdb.connect(str(early)) as con:  # as the file stood mid-study: 3 of 8 cells not finished yet
        later = [r[0] for r in con.execute("SELECT cell_id FROM results ORDER BY cell_id LIMIT 3").fetchall()]
        for table in ("predictions", "targets", "attention_maps", "trials", "results"):
            gone = later[1:] if table in ("predictions", "targets", "trials") else later
            con.execute(f"DELETE FROM {table} WHERE list_contains(?, cell_id)", [gone])
        # the first of them mid-search: its trial committed by a run that ended before finishing any cell
        con.execute("INSERT INTO runs SELECT * REPLACE ('trials-only' AS run_id) FROM runs LIMIT 1")
        con.execute("UPDATE trials SET run_id = 'trials-only' WHERE cell_id = ?", [later[0]])
    root = tmp_path / "refs"
    first = chunks.add_chunk(early, "study", root=root)
    shipped = duckdb.sql(f"SELECT cell_id, run_id FROM '{root / 'study' / first.chunk / 'trials.parquet'}'").df()
    assert later[0] in set(shipped.cell_id) and "trials-only" in set(shipped.run_id)
    assert "trials-only" in set(duckdb.sql(f"SELECT run_id FROM '{root / 'study' / first.chunk / 'runs.parquet'}'")
                                .df().run_id)
    # as a chunk written before references carried their datasets' characteristics: the next one adds them
    for path in (root / "study" / first.chunk).glob("dataset_traits*.parquet"):
        path.unlink()
    # a run that ended within that search again, finishing no cell: its trial and its run ship alone
    mid = tmp_path / "mid.duckdb"
    mid.write_bytes(early.read_bytes())
    with duckdb.connect(str(mid)) as con:
        con.execute("INSERT INTO runs SELECT * REPLACE ('trials-only-2' AS run_id) FROM runs LIMIT 1")
        for table in ("trials", "predictions"):
            con.execute(f"INSERT INTO {table} SELECT * REPLACE (trial_id || '-b' AS trial_id"
                        f"{', $$trials-only-2$$ AS run_id' if table == 'trials' else ''}) FROM {table} "
                        "WHERE cell_id = ?", [later[0]])
    alone = chunks.add_chunk(mid, "study", root=root)
    assert (alone.cells, alone.searching) == (0, 1)
    trials_alone = duckdb.sql(f"SELECT trial_id, run_id FROM '{root / 'study' / alone.chunk / 'trials.parquet'}'").df()
    assert trials_alone.run_id.tolist() == ["trials-only-2"] and trials_alone.trial_id.str.endswith("-b").all()
    assert duckdb.sql(f"SELECT run_id FROM '{root / 'study' / alone.chunk / 'runs.parquet'}'").df().run_id.tolist() \
        == ["trials-only-2"]
    before = sorted(p.name for p in (root / "study").iterdir())
    with pytest.raises(references.ReferenceError, match="nothing new"):  # and nothing new: refused, nothing written
        chunks.add_chunk(mid, "study", root=root)
    assert sorted(p.name for p in (root / "study").iterdir()) == before
    late = tmp_path / "late.duckdb"
    late.write_bytes(db.read_bytes())
    with duckdb.connect(str(late)) as con:  # the mid-search cell's search went on, then finished
        for table in ("trials", "predictions"):
            con.execute(f"INSERT INTO {table} SELECT * REPLACE (trial_id || '-b' AS trial_id) FROM {table} "
                        "WHERE cell_id = ?", [later[0]])
        want = {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("trials", "predictions", "targets")}
    second = chunks.add_chunk(late, "study", root=root)
    assert (first.cells, second.cells) == (5, 3)
    ref = references.load(str(root / "study"))
    counts = {t: ref.df(f"SELECT count(*) AS n, count(DISTINCT {k}) AS d FROM ref_{t}").iloc[0].tolist()
              for t, k in (("suite_cells", "cell_id"), ("results", "cell_id"), ("runs", "run_id"),
                           ("datasets", "dataset"), ("dataset_traits", "dataset"),
                           ("reference_scores", "(dataset, split_key, repeat, fold, sample_size, seed)"))}
    assert counts["suite_cells"] == [8, 8] and counts["results"] == [8, 8], counts
    assert counts["dataset_traits"] == [2, 2], counts
    assert all(n == d for n, d in counts.values()), counts  # nothing twice
    keys = {"trials": "(cell_id, trial_id)", "predictions": "(trial_id, part)", "targets": "(cell_id, part)"}
    for table, key in keys.items():
        files = [str(p) for p in sorted((root / "study").glob(f"chunk-*/{table}.parquet"))]
        n, d = duckdb.sql(f"SELECT count(*), count(DISTINCT {key}) FROM read_parquet({files})").fetchall()[0]
        assert n == d == want[table], (table, n, d, want[table])  # the mid-search cell's rows, each once
    # a results file's upgrade moves a finished cell to a new id: its trials (same trial ids) move with it
    moved = tmp_path / "moved.duckdb"
    moved.write_bytes(late.read_bytes())
    with duckdb.connect(str(moved)) as con:
        cell = con.execute("SELECT cell_id FROM results WHERE NOT list_contains(?, cell_id) ORDER BY cell_id LIMIT 1",
                           [later]).fetchall()[0][0]
        n_trials = con.execute("SELECT count(*) FROM trials WHERE cell_id = ?", [cell]).fetchall()[0][0]
        for table in ("suite_cells", "results", "trials", "predictions", "targets", "attention_maps"):
            con.execute(f"UPDATE {table} SET cell_id = cell_id || '-moved' WHERE cell_id = ?", [cell])
    assert chunks.add_chunk(moved, "study", root=root).cells == 1
    ref = references.load(str(root / "study"))
    assert n_trials and ref.df("SELECT count(*) AS n FROM ref_trials WHERE cell_id = ?", [cell + "-moved"]).n[0] == n_trials
    # a shipped cell re-run (lost to the infrastructure, --retry-failed, --force): its new attempt's result and
    # trials are shipped, and the older attempt's trials dropped as the results file dropped them
    rerun = tmp_path / "rerun.duckdb"
    rerun.write_bytes(moved.read_bytes())
    with duckdb.connect(str(rerun)) as con:
        cell, tries = con.execute("SELECT cell_id, attempts FROM results WHERE NOT list_contains(?, cell_id) AND "
                                  "cell_id NOT LIKE '%-moved' ORDER BY cell_id LIMIT 1", [later]).fetchall()[0]
        con.execute("UPDATE results SET attempts = ? WHERE cell_id = ?", [tries + 1, cell])
        con.execute("UPDATE trials SET trial_id = trial_id || '-again', cell_attempt = ? WHERE cell_id = ?",
                    [tries + 1, cell])
        con.execute("UPDATE predictions SET trial_id = trial_id || '-again' WHERE cell_id = ?", [cell])
    assert chunks.add_chunk(rerun, "study", root=root).cells == 1
    ref = references.load(str(root / "study"))
    assert ref.df("SELECT attempts FROM ref_results WHERE cell_id = ?", [cell]).attempts.tolist() == [tries + 1]
    for table in ("trials", "predictions"):
        ids = ref.df(f"SELECT trial_id FROM ref_{table} WHERE cell_id = ?", [cell]).trial_id
        assert len(ids) and ids.str.endswith("-again").all(), (table, ids.tolist())
    # chunks written before each row was shipped once: the reference reads each row once all the same
    before = ref.df("SELECT count(*) AS n FROM ref_trials").n[0]
    (root / "study" / "chunk-0009").mkdir()
    (root / "study" / "chunk-0009" / "trials.parquet").write_bytes(
        (root / "study" / first.chunk / "trials.parquet").read_bytes())
    again = references.load(str(root / "study"))
    assert again.df("SELECT count(*) AS n FROM ref_trials").n[0] == before


def test_a_chunk_thins_learning_curves_and_keeps_the_best_point(reference, tmp_path: Path):
    """A shipped chunk keeps at most N points of each trial's curve, the best validation loss among them; the
    results file keeps every point."""
    curve = [{"iteration": i + 1, "val_loss": 1.0 / (i + 1) + (0.5 if i == 40 else 0.0)} for i in range(100)]
    curve[57]["val_loss"] = -1.0  # the best, off the even spacing
    thin = chunks.thin_curve(curve, 8)
    assert len(thin) <= 8 and thin[0] == curve[0] and thin[-1] == curve[-1] and curve[57] in thin
    assert [c["iteration"] for c in thin] == sorted(c["iteration"] for c in thin)
    assert chunks.thin_curve(curve[:8], 8) == curve[:8]
    kept = chunks.thin_curve(curve, 8, best=41)  # the round the trial kept, not the lowest loss
    assert curve[40] in kept and curve[57] not in kept and len(kept) <= 8
    assert len(chunks.thin_curve(curve, 2)) == 2

    db, _ = reference
    added = chunks.add_chunk(db, "thin", root=tmp_path, curve_points=5)
    assert added.curve_points == 5
    chunk = tmp_path / "thin" / added.chunk
    assert json.loads((chunk / "chunk.json").read_text())["curve_points"] == 5
    con = duckdb.connect()
    shipped = [json.loads(c) for (c,) in con.execute(
        f"SELECT curve FROM read_parquet('{chunk / 'trials.parquet'}') WHERE curve IS NOT NULL").fetchall()]
    con.close()
    kept = duckdb.connect(str(db), read_only=True)
    full = [json.loads(c) for (c,) in kept.execute("SELECT curve FROM trials WHERE curve IS NOT NULL").fetchall()]
    kept.close()
    assert shipped and max(map(len, shipped)) <= 5 and max(map(len, full)) > 5


def test_a_chunk_leaves_out_the_attention_maps_of_wide_datasets(reference, tmp_path: Path):
    """A map is (features + 1)² numbers: a chunk keeps those of datasets up to N features, says how many it
    left out, and the results file keeps them all."""
    db, _ = reference
    maps = tmp_path / "maps.duckdb"
    maps.write_bytes(db.read_bytes())
    with duckdb.connect(str(maps)) as con:
        (narrow, wide), = [tuple(r[0] for r in con.execute("SELECT cell_id FROM results ORDER BY cell_id LIMIT 2").fetchall())]
        for cell, n in ((narrow, 4), (wide, 40)):
            con.execute("INSERT INTO attention_maps VALUES (?, 'x', 'm', ?, ?)",
                        [cell, json.dumps([f"f{i}" for i in range(n)]), json.dumps([[0.0] * (n + 1)] * (n + 1))])
    added = chunks.add_chunk(maps, "maps", root=tmp_path, map_features=10)
    assert (added.map_features, added.maps_left_out) == (10, 1)
    con = duckdb.connect()
    kept = con.execute(f"SELECT cell_id FROM read_parquet('{tmp_path / 'maps' / added.chunk / 'attention_maps.parquet'}')"
                       ).fetchall()
    con.close()
    assert kept == [(narrow,)]


def test_a_chunk_keeps_curves_and_maps_to_four_significant_digits_and_scores_whole(reference, tmp_path: Path):
    """A float's 17 digits are most of a curve's or a map's bytes and none of what its chart shows: a chunk
    keeps 4 significant digits there (--full-precision: all), and never rounds a result or a score."""
    assert chunks.significant({"a": [1 / 3, 12345.678, 7, None, float("nan")], "b": "x"}, 4)["a"][:4] == \
        [0.3333, 12350.0, 7, None]
    db, _ = reference
    maps = tmp_path / "maps.duckdb"
    maps.write_bytes(db.read_bytes())
    with duckdb.connect(str(maps)) as con:
        cell = con.execute("SELECT cell_id FROM results ORDER BY cell_id LIMIT 1").fetchall()[0][0]
        con.execute("INSERT INTO attention_maps VALUES (?, 'x', 'm', '[\"f0\"]', ?)",
                    [cell, json.dumps([[1 / 3, 2 / 3], [1 / 7, 6 / 7]])])
        scores = dict(con.execute("SELECT cell_id, val_score FROM results").fetchall())

    def shipped(chunk: Path) -> tuple[list, list, dict]:
        con = duckdb.connect()
        try:
            read = lambda t, c: [json.loads(v) for (v,) in con.execute(  # noqa: E731
                f"SELECT {c} FROM read_parquet('{chunk / t}.parquet') WHERE {c} IS NOT NULL").fetchall()]
            return (read("attention_maps", "map"), read("trials", "curve"),
                    dict(con.execute(f"SELECT cell_id, val_score FROM read_parquet('{chunk / 'results.parquet'}')"
                                     ).fetchall()))
        finally:
            con.close()

    rounded = chunks.add_chunk(maps, "rounded", root=tmp_path)
    assert rounded.digits == 4
    got_maps, curves, got_scores = shipped(tmp_path / "rounded" / rounded.chunk)
    assert got_maps == [[[0.3333, 0.6667], [0.1429, 0.8571]]] and got_scores == scores
    numbers = [v for c in curves for point in c for v in point.values() if isinstance(v, float)]
    assert numbers and all(v == float(f"{v:.4g}") for v in numbers)
    whole = chunks.add_chunk(maps, "whole", root=tmp_path, digits=None)
    got_maps, curves, _ = shipped(tmp_path / "whole" / whole.chunk)
    assert got_maps == [[[1 / 3, 2 / 3], [1 / 7, 6 / 7]]]
    assert any(v != float(f"{v:.4g}") for c in curves for point in c for v in point.values() if isinstance(v, float))


def test_a_reference_exports_to_a_results_file_that_reports_and_queries_like_a_run(reference, tmp_path: Path,
                                                                                  capsys: pytest.CaptureFixture[str]):
    """`attnbench reference export NAME --db FILE`: the shipped results without a run; a file that exists is
    refused and left as it was."""
    _, root = reference
    out_db, reports = tmp_path / "ref.duckdb", tmp_path / "reports"
    out = cli(["reference", "export", str(root / "tinyref"), "--db", str(out_db)], capsys)
    assert out.returncode == 0 and "8 cells" in out.stdout, out.stderr
    with duckdb.connect(str(out_db), read_only=True) as con:  # the views are there for duckdb itself
        board = con.execute("SELECT dataset, sample_size, model, n_ok FROM leaderboard ORDER BY 1, 2, 3").fetchall()
    assert len(board) == 8 and all(n == 1 for *_, n in board)
    # the characteristics that need rows come with it, as computed on the rows of the run's own file
    db, _ = reference
    with duckdb.connect(str(db), read_only=True) as run_file, duckdb.connect(str(out_db), read_only=True) as exported:
        from_rows = characteristics.from_rows(run_file, ["breast_cancer", "wine"]).set_index("dataset")
        shipped = traits.dataset_traits(exported, ["breast_cancer", "wine"]).set_index("dataset")
    assert from_rows.notna().all().all() and len(from_rows) == 2
    assert shipped[list(characteristics.FROM_ROWS)].equals(from_rows)
    merged = tmp_path / "merged.duckdb"  # and a merge of the exported file keeps them
    from pipeline.data.merge import merge
    merge([str(out_db)], str(merged))
    with duckdb.connect(str(merged), read_only=True) as con:
        assert traits.dataset_traits(con, ["breast_cancer", "wine"]).set_index("dataset")[
            list(characteristics.FROM_ROWS)].equals(from_rows)
    rep = cli(["report", "--db", str(out_db), "--reports", str(reports)], capsys)
    assert rep.returncode == 0 and "breast_cancer" in (reports / "accuracy.html").read_text(), rep.stderr
    before = out_db.read_bytes()
    again = cli(["reference", "export", str(root / "tinyref"), "--db", str(out_db)], capsys)
    assert again.returncode == 2 and "exists" in again.stderr and again.stderr.count("\n") == 1
    assert out_db.read_bytes() == before


def test_a_run_into_an_exported_file_loads_the_rows_it_lacks_and_checks_they_are_the_references(
        reference, tmp_path: Path, ray_address: str, capsys: pytest.CaptureFixture[str]):
    """An exported file describes the reference's datasets without their rows. A run into it loads the rows
    from the source, if they are the rows the shipped results were run on; otherwise it is refused, in one
    line, and the file is left as it was. (`reference export` itself, as a command: the test above.)"""
    _, root = reference
    exported = tmp_path / "ref.duckdb"
    references.load(str(root / "tinyref")).export(Store(exported))
    mine = write(tmp_path / "mine.yaml", {**MINE, "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": [64]}})
    tampered = tmp_path / "tampered.duckdb"
    tampered.write_bytes(exported.read_bytes())
    with duckdb.connect(str(tampered)) as con:
        con.execute("UPDATE datasets SET checksum = 'not-these-rows' WHERE dataset = 'breast_cancer'")
    before = tampered.read_bytes()
    refused = cli(["run", str(mine), "--db", str(tampered), "--no-report"], capsys)  # refused before any Ray
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "breast_cancer" in refused.stderr and "not-these-rows" in refused.stderr
    assert tampered.read_bytes() == before
    ran = cli(["run", str(mine), "--db", str(exported), "--no-report", "--address", ray_address], capsys)
    assert ran.returncode == 0, ran.stderr[-2000:]
    with duckdb.connect(str(exported), read_only=True) as con:
        held = con.execute("SELECT data_table FROM datasets WHERE dataset = 'breast_cancer'").fetchone()[0]
        n = con.execute(f'SELECT count(*) FROM "{held}"').fetchone()[0]
        suites = con.execute("SELECT suite, count(*) FROM results WHERE status = 'ok' GROUP BY 1 ORDER BY 1").fetchall()
        planned = con.execute("SELECT count(*) FROM plan WHERE suite = 'mine'").fetchone()[0]
    assert n == len(load_breast_cancer().target)
    assert planned > 0 and suites == [("mine", planned), ("tinyref", 8)]  # the shipped results are still there beside the run's


def test_a_study_goes_on_from_its_shipped_chunks_on_a_machine_without_its_file(reference, tmp_path: Path):
    """A multi-session study on a new machine: the shipped chunks exported into a file are cells done, so
    the study's own command runs only the cells no chunk holds, and `reference add` ships exactly those
    as the next chunk (each cell, run and dataset once in the reference)."""
    import shutil

    _, refs = reference
    root = tmp_path / "references"
    shutil.copytree(refs / "tinyref", root / "tinyref")
    study = tmp_path / "study.duckdb"
    references.load(str(root / "tinyref")).export(Store(study))
    grown = copy.deepcopy(REF_SUITE)  # the study's plan reaches a fold no chunk has run yet
    grown["protocol"]["max_folds"] = 2
    summary = runner.run(parse_suite(grown), study, progress=lambda _: None)
    assert (summary.n_cells, summary.n_skipped, summary.n_done) == (16, 8, 8)
    added = chunks.add_chunk(study, "tinyref", root=root, predictions=False)
    assert (added.chunk, added.cells) == ("chunk-0002", 8)
    ref = references.load(str(root / "tinyref"))
    results = ref.df("SELECT cell_id, count(*) AS n FROM ref_results GROUP BY 1")
    assert len(results) == 16 and (results.n == 1).all()
    assert ref.df("SELECT count(*) AS n FROM ref_runs").n[0] == ref.df(
        "SELECT count(DISTINCT run_id) AS n FROM ref_runs").n[0] == 2
    assert ref.df("SELECT count(*) AS n FROM ref_datasets").n[0] == 2


def test_an_unknown_reference_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = cli(["run", "--against", "no-such-ref", "--db", str(tmp_path / "x.duckdb")], capsys)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--against no-such-ref: no such reference" in out.stderr and not (tmp_path / "x.duckdb").exists()


def test_shipped_reference_files_stay_small():
    """Every shipped chunk file is under 5 MB and all of them under 40 MB (git keeps them whole). The budget:
    study-lite's first chunk is 18 MB, nearly all of it the predictions its Tuned + ensembled page reads (one
    fold, so they fit); every other chunk ships without them, about 1 KB a cell (study-every-dataset: 6 MB for
    5,928 cells), so issue 59's entries (about 2,400 cells) add some 3 MB and 40 MB leaves room for another
    study of that size."""
    root = references.shipped_root()
    files = [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
    assert all(p.stat().st_size < 5 * 2**20 for p in files)
    assert sum(p.stat().st_size for p in files) < 40 * 2**20
    for name in references.shipped():
        ref = references.load(name)
        assert len(ref.df("SELECT * FROM ref_results")) > 0 and len(ref.df("SELECT * FROM ref_split_digests")) > 0
        assert pd.Series(ref.df("SELECT hardware FROM ref_runs").hardware).notna().all()


def test_the_shipped_study_lite_reference_your_model_beside_its_eight(ray_local, tmp_path: Path):
    """The README's compare workflow on the reference that ships in references/study-lite: one model of
    yours on two of study-lite's datasets (their entries as the suite writes them) trains only that model
    and is reported beside study-lite's eight on the same splits."""
    assert "study-lite" in references.shipped()
    study = yaml.safe_load((REPO / "suites" / "study-lite.yaml").read_text())
    entries = [{**d, "file": str((REPO / "suites" / d["file"]).resolve())} for d in study["datasets"]
               if d["name"] in ("diabetes", "blood-transfusion-service-center")]
    mine = {"name": "mine", "datasets": entries,
            "models": [{"name": "mlp", "label": "my-mlp", "trials": 1, "fixed": {"max_epochs": 5, "d_block": 64}}]}
    db = tmp_path / "mine.duckdb"
    ref = references.load("study-lite")
    summary = runner.run(load_suite(write(tmp_path / "mine.yaml", mine)), db, progress=lambda _: None, against=ref)
    assert (summary.n_cells, summary.n_done) == (2, 2)  # 256 rows of each (their only size below 552 and 538 rows)
    store = Store(db)
    run_id = store.query("SELECT run_id FROM runs WHERE suite = 'mine'").run_id[0]
    trained = store.query("SELECT DISTINCT r.model FROM trials t JOIN results r USING (cell_id) WHERE t.run_id = ?",
                          [run_id])
    assert trained.model.tolist() == ["my-mlp"]
    lb = store.query("SELECT dataset, sample_size, model, n_ok FROM leaderboard ORDER BY ALL")
    theirs = {"mlp", "realmlp", "ft_transformer", "xgboost", "catboost", "lightgbm", "random_forest", "extra_trees"}
    for dataset in ("diabetes", "blood-transfusion-service-center"):
        rows = lb[lb.dataset == dataset]
        assert set(rows.model) == theirs | {"my-mlp"} and set(rows.sample_size) == {"256"}, rows
    data = ReportData.load(db)
    assert set(data.other_hardware) <= theirs  # their timings are marked where the hardware differs


def test_reference_list_says_how_much_of_each_plan_ran():
    """A reference shipped chunk by chunk (a study in progress) says so: cells done of those planned; and
    which versions of attnbench's code its models ran, on a line of its own."""
    import re

    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "reference", "list"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 * len(references.shipped()) >= 2
    for line, code, name in zip(lines[::2], lines[1::2], references.shipped()):
        ref = references.load(name)  # (study-every-dataset's chunks take seconds to read: once each)
        n_models = len(ref.code_versions())
        assert code == f"  code: version 1 of every attnbench file its {n_models} models read (pipeline/models/versions.py)"
        m = re.match(rf"{re.escape(name)}: suite '[^']+', ([\d,]+) of ([\d,]+) planned cells, \d+ datasets?, \d+ models?", line)
        done, planned = (int(g.replace(",", "")) for g in (m[1], m[2])) if m else (0, 0)
        assert m and 0 < done <= planned, line
        assert done == len(ref.df("SELECT * FROM ref_results"))
        assert planned == len(ref.df("SELECT * FROM ref_suite_cells"))


def test_a_reference_knows_its_code_and_against_sets_aside_a_model_whose_code_differs(reference, tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch):
    """Each planned cell records the versions of attnbench's files its model read; a reference lists them, and
    `--against` compares them with this checkout's: a model whose code differs is named in one line and its
    cells are neither copied beside the suite's nor counted as done. An entry equal to a reference model whose
    code is the same (XGBoost, beside the MLP) is its cells: they do not run."""
    from pipeline.models import versions

    _, refs = reference
    ref = references.load(str(refs / "tinyref"))
    assert ref.code_versions() == {"lightgbm": [{}], "xgboost": [{}]}  # version 1 throughout
    stored = ref.df("SELECT DISTINCT model, code_versions FROM ref_suite_cells ORDER BY 1")
    # LightGBM's learner reads XGBoost's (a shared frame helper); XGBoost's reads no other learner
    assert '"learners/lightgbm.py":1' in stored.code_versions[0] and "lightgbm.py" not in stored.code_versions[1]
    assert ref.code_drift() == {}

    monkeypatch.setitem(versions.PINNED, "learners/lightgbm.py", (2, versions.PINNED["learners/lightgbm.py"][1]))
    assert ref.code_drift() == {"lightgbm": ({}, {"learners/lightgbm.py": "2"})}
    said: list[str] = []
    db = tmp_path / "mine.duckdb"
    suite = {**MINE, "models": [REF_SUITE["models"][0], MINE["models"][0]]}
    summary = runner.run(load_suite(write(tmp_path / "mine.yaml", suite)), db, progress=said.append, against=ref)
    assert (summary.n_done, summary.n_skipped) == (2, 2)  # the MLP's two cells ran; XGBoost's are the reference's
    notice = [line for line in said if "other attnbench code" in line]
    assert len(notice) == 1 and "lightgbm" in notice[0] and "learners/lightgbm.py 1 there, 2 here" in notice[0], said
    lb = Store(db).query("SELECT DISTINCT model FROM leaderboard ORDER BY 1")
    assert lb.model.tolist() == ["mlp", "xgboost"]  # LightGBM's cells ran other code: not compared


def test_an_exported_reference_file_is_a_reference_its_split_keys_checked(reference, tmp_path: Path):
    """`--against FILE` with a file `reference export` wrote (its plan, no split rows): the suite's splits are
    checked by their keys (the data's checksum, the protocol, the seed, the splitter's version); another
    seed is refused in a line that names both keys."""
    _, refs = reference
    exported = tmp_path / "ref.duckdb"
    references.load(str(refs / "tinyref")).export(Store(exported))
    ref = references.load(str(exported))
    suite = ref.adopt_protocol(load_suite(write(tmp_path / "mine.yaml", MINE)))
    prepared, cells, _ = runner._cells(Store(tmp_path / "scratch.duckdb"), suite, lambda _: None)
    splits = {(c.dataset, c.split_key, c.repeat, c.fold, c.sample_size, c.seed) for c, _ in cells}
    ref.check(prepared, splits)  # accepted
    assert len(ref.done_cells(splits)) == 4  # xgboost and lightgbm at 64 rows and all
    other = suite.model_copy(update={"seed": 3})
    prepared, _, _ = runner._cells(Store(tmp_path / "scratch.duckdb"), other, lambda _: None)
    with pytest.raises(references.ReferenceError) as err:
        ref.check(prepared, splits)
    key = prepared[0].split_key
    theirs = ref.df("SELECT DISTINCT split_key FROM ref_suite_cells WHERE dataset = 'breast_cancer'").split_key[0]
    assert str(err.value) == (f"dataset 'breast_cancer': split key {key} here, {theirs} in the reference "
                              "'tinyref' (the protocol, the seed or the splitter's version differs)")


def test_the_retry_line_after_an_against_run_keeps_the_reference():
    from pipeline.cli import build_parser, retry_command

    args = build_parser().parse_args(["run", "mine.yaml", "--db", "m.duckdb", "--against", "study-lite"])
    assert retry_command(args) == "attnbench run mine.yaml --db m.duckdb --against study-lite --retry-failed"
    plain = build_parser().parse_args(["run", "mine.yaml"])
    assert retry_command(plain) == "attnbench run mine.yaml --retry-failed"


def test_a_plan_cut_after_a_chunk_shipped_is_the_references_plan_and_its_cells_results_are_history(
        reference, tmp_path: Path):
    """A study whose plan is cut part way (a stated cut re-applied, an entry narrowed to fewer datasets): the next
    chunk says which planned cells the suite plans no more, and the reference's plan is the suite's as it is now,
    so that a cell it dropped is neither waiting to run nor, where it ran, scored beside the rest (its result stays
    in the chunks as history). Planned again later, it is planned again, with its result."""
    db, _ = reference
    root = tmp_path / "chunk-0099" / "references"  # a folder above named like a chunk is not the chunks' order
    assert chunks.add_chunk(db, "cut", root=root).cells == 8
    cut = copy.deepcopy(REF_SUITE)
    cut["models"][1]["datasets_at"] = {64: ["wine"]}  # lightgbm at 64 rows: wine only, breast_cancer's cell dropped
    narrowed = tmp_path / "narrowed.duckdb"
    narrowed.write_bytes(db.read_bytes())
    assert runner.run(parse_suite(copy.deepcopy(cut)), narrowed, progress=lambda _: None).n_cells == 7
    dropped = Store(narrowed).query("SELECT cell_id FROM results WHERE model = 'lightgbm' AND dataset = 'breast_cancer' "
                                    "AND sample_size = '64'").cell_id.tolist()
    assert len(dropped) == 1
    added = chunks.add_chunk(narrowed, "cut", root=root)  # no new cell: a chunk of the cut alone
    assert (added.chunk, added.cells, added.unplanned) == ("chunk-0002", 0, 1)
    cut_chunk = json.loads((root / "cut" / "chunk-0002" / "chunk.json").read_text())
    assert cut_chunk["unplanned"] == 1
    cut_run = Store(narrowed).query("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1").run_id[0]
    assert cut_chunk["runs"] == [cut_run]  # the run whose plan it took: how new the reference's plan is
    # the file from before the cut would plan its dropped cell again: refused, and nothing written
    before = sorted(p.name for p in (root / "cut").iterdir())
    with pytest.raises(references.ReferenceError, match=r"its plan of suite .* is older than .*: it would plan 1 cell "
                                                        r"the reference does not and drop 0 cells it does; run the suite"):
        chunks.add_chunk(db, "cut", root=root)
    assert sorted(p.name for p in (root / "cut").iterdir()) == before
    ref = references.load(str(root / "cut"))
    assert ref.df("SELECT count(*) AS n FROM ref_suite_cells").n[0] == 7
    assert dropped[0] not in set(ref.df("SELECT cell_id FROM ref_suite_cells").cell_id)
    assert dropped[0] in set(ref.df("SELECT cell_id FROM ref_results").cell_id)  # history, in its chunk
    splits = {tuple(r) for r in ref.df("SELECT DISTINCT dataset, split_key, repeat, fold, sample_size, seed FROM "
                                       "ref_suite_cells").itertuples(index=False)}
    done = set(ref.done_cells(splits).cell_id)  # what a run --against takes as done, and copies
    assert len(done) == 7 and dropped[0] not in done
    exported = tmp_path / "exported.duckdb"
    assert references.export_file(str(root / "cut"), exported) == 7
    with duckdb.connect(str(exported), read_only=True) as con:
        expected = con.execute("SELECT count(*), count(*) FILTER (WHERE status = 'ok') FROM expected_cells").fetchone()
        lightgbm = con.execute("SELECT count(*) FROM cells WHERE model = 'lightgbm'").fetchone()[0]
    assert expected == (7, 7) and lightgbm == 3
    # the held plan is the cut one: nothing shipped twice, and the cell planned again is shipped as planned
    again = tmp_path / "again.duckdb"
    again.write_bytes(narrowed.read_bytes())
    assert runner.run(parse_suite(copy.deepcopy(REF_SUITE)), again, progress=lambda _: None).n_cells == 8
    back = chunks.add_chunk(again, "cut", root=root)
    assert (back.chunk, back.cells, back.unplanned) == ("chunk-0003", 0, 0)
    ref = references.load(str(root / "cut"))
    plan = ref.df("SELECT cell_id, count(*) AS n FROM ref_suite_cells GROUP BY 1")
    assert len(plan) == 8 and (plan.n == 1).all() and dropped[0] in set(plan.cell_id)
    assert dropped[0] in set(ref.done_cells(splits).cell_id)
    assert references.export_file(str(root / "cut"), tmp_path / "whole.duckdb") == 8
    with pytest.raises(references.ReferenceError, match="nothing new"):
        chunks.add_chunk(again, "cut", root=root)
