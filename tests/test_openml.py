"""The OpenML path through the real openml client, on the recorded cache (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.data import ingest, sources
from pipeline.data.store import Store
from pipeline.errors import DataError
from pipeline.spec import Protocol
from pipeline.suite_datasets import OpenMLTask


def test_task_1882_folds_land_in_duckdb(openml_cache: Path, tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    protocol = Protocol(validation_fraction=0.2)
    ds = ingest.ingest(store, OpenMLTask(openml_task=1882), protocol, seed=0)
    meta = store.query("SELECT * FROM datasets").iloc[0]
    assert meta.openml_task_id == 1882 and meta.openml_id == 2 and meta.has_official_folds
    assert meta.n_rows == 898 and meta.task_type == "multiclass"
    official = store.query("SELECT repeat, fold, role, count(*) AS n FROM splits WHERE split_key = 'official' GROUP BY ALL")
    assert official.groupby(["repeat", "fold"]).ngroups == 100  # the task's 10 repeats × 10 folds
    assert set(official.role) == {"train", "test"}
    # The protocol's splits keep OpenML's test folds exactly and carve validation from train.
    key = ingest.split_key(protocol, 0, ds.checksum, True)
    ours = store.query("SELECT repeat, fold, row_id, role FROM splits WHERE split_key = ?", [key])
    off = store.query("SELECT repeat, fold, row_id, role FROM splits WHERE split_key = 'official'")
    merged = ours.merge(off, on=["repeat", "fold", "row_id"], suffixes=("", "_official"))
    assert len(merged) == len(off)
    assert (merged.loc[merged.role_official == "test", "role"] == "test").all()
    assert set(merged.loc[merged.role_official == "train", "role"]) == {"train", "valid"}
    import openml

    task = openml.tasks.get_task(1882, download_data=False)
    _train, test = task.get_train_test_split_indices(fold=3, repeat=7)
    got = set(off[(off.repeat == 7) & (off.fold == 3) & (off.role == "test")].row_id)
    assert got == set(test.tolist())


def test_unreachable_openml_is_a_clear_error(tmp_path: Path):
    import openml

    old_cache, old_server = openml.config._root_cache_directory, openml.config.server
    try:
        openml.config.set_root_cache_directory(str(tmp_path / "empty-cache"))
        openml.config.server = "http://127.0.0.1:9/api/v1/xml"  # nothing listens on the discard port
        openml.config.connection_n_retries = 1
        with pytest.raises(DataError, match="unreachable and it is not in the local cache"):
            sources.load(OpenMLTask(openml_task=31))
    finally:
        openml.config.set_root_cache_directory(str(old_cache))
        openml.config.server = old_server


@pytest.mark.slow
def test_task_1882_runs_every_cell_despite_sparse_categoricals(openml_cache: Path, ray_local, tmp_path: Path):
    """anneal (task 1882) has categorical columns with no level, or one, in many folds' training rows:
    XGBoost used to fail 12 of its 20 cells there. One repeat of its 10 official folds × 2 models."""
    from pipeline import runner
    from pipeline.spec import parse_suite

    suite = parse_suite({"name": "anneal", "datasets": [{"openml_task": 1882}],
                         "protocol": {"max_repeats": 1, "sample_sizes": ["all"]},
                         "models": [{"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 20}},
                                    {"name": "catboost", "trials": 1, "fixed": {"iterations": 20}}]})
    db = tmp_path / "r.duckdb"
    summary = runner.run(suite, db, progress=lambda _: None)
    res = Store(db).query("SELECT model, fold, status, error, accuracy FROM results ORDER BY model, fold")
    assert len(res) == 20 and (res.status == "ok").all(), res[res.status != "ok"].error.tolist()[:1]
    assert (summary.n_done, summary.n_failed, summary.suite_failed) == (20, 0, 0)
    assert sorted(res.fold.unique().tolist()) == list(range(10)) and (res.accuracy > 0.8).all()


def test_a_file_entry_whose_file_is_not_there_takes_its_openml_dataset_and_checks_its_rows(openml_cache: Path,
                                                                                          tmp_path: Path):
    """The study's suites read ../shared; a user with the repository alone gets the same rows from OpenML
    (here the recorded cache: dataset 2, anneal), refused when they are not the rows the suite names."""
    from pipeline.suite_datasets import LocalFile

    entry = {"name": "anneal", "file": str(tmp_path / "not-here.parquet"), "target": "class", "openml_id": 2}
    raw = sources.load(LocalFile(**entry))
    assert raw.source == "openml-dataset:2" and len(raw.y) == 898 and "loaded from OpenML dataset 2" in raw.notes[-1]
    same = sources.load(LocalFile(**entry, checksum=raw.checksum()))
    assert same.checksum() == raw.checksum()
    with pytest.raises(DataError) as err:
        sources.load(LocalFile(**entry, checksum="0123456789abcdef"))
    assert f"checksum {raw.checksum()}, the entry says 0123456789abcdef" in str(err.value)
    assert "\n" not in str(err.value)


def test_offline_a_missing_file_says_where_its_rows_come_from(tmp_path: Path):
    import openml

    from pipeline.suite_datasets import LocalFile

    old_cache, old_server = openml.config._root_cache_directory, openml.config.server
    try:
        openml.config.set_root_cache_directory(str(tmp_path / "empty-cache"))
        openml.config.server = "http://127.0.0.1:9/api/v1/xml"
        openml.config.connection_n_retries = 1
        entry = LocalFile(name="credit-g", file=str(tmp_path / "31-credit-g.parquet"), target="class",
                          openml_id=31, checksum="8a98795436e34ab7")
        with pytest.raises(DataError) as err:
            sources.load(entry)
    finally:
        openml.config.set_root_cache_directory(str(old_cache))
        openml.config.server = old_server
    text = str(err.value)
    assert "31-credit-g.parquet is not there; its rows are OpenML dataset 31 (https://www.openml.org/d/31, checksum " \
           "8a98795436e34ab7)" in text and "put the file at" in text and "\n" not in text


def test_every_shipped_suite_entry_that_reads_shared_names_its_openml_dataset_and_rows(shared_data: Path):
    """So that a user who cloned only the repository gets the same rows, or a refusal naming them."""
    import csv

    from pipeline.spec import load_suite
    from pipeline.suite_datasets import LocalFile

    suites = Path(__file__).resolve().parents[1] / "suites"
    checked = 0
    for path in sorted(suites.glob("*.yaml")):
        for d in load_suite(path).datasets:
            if isinstance(d, LocalFile) and "/shared/" in d.file:
                # A file whose INDEX.csv names no OpenML dataset (../shared/data/large: weatherAUS, cardio_train,
                # … come from CRAN and Kaggle) has none to name; every other one names its own.
                index = Path(d.file).parent / "INDEX.csv"
                rows = {r["file"]: r for r in csv.DictReader(index.open())} if index.is_file() else {}
                has_openml = bool(rows.get(Path(d.file).name, {}).get("openml_dataset_id", "x"))
                assert d.checksum is not None and (d.openml_id is not None or not has_openml), (path.name, d.name)
                assert sources.load(d).checksum() == d.checksum, (path.name, d.name)
                checked += 1
    assert checked >= 40  # dev, dev-lite, study, study-lite, claims, zoo


def test_suites_check_says_a_missing_file_comes_from_openml(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from pipeline.cli import main

    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ndatasets:\n  - {name: credit-g, file: gone.parquet, target: class, openml_id: 31, "
                     "checksum: 8a98795436e34ab7}\n  - {file: also-gone.csv, target: y}\nmodels:\n  - {name: xgboost}\n")
    assert main(["suites", "check", str(suite)]) == 2  # the second has no OpenML dataset to come from
    out, err = capsys.readouterr()
    assert "also-gone.csv does not exist" in err and "gone.parquet does not exist" not in err
    suite.write_text(suite.read_text().replace("  - {file: also-gone.csv, target: y}\n", ""))
    assert main(["suites", "check", str(suite)]) == 0
    out, _ = capsys.readouterr()
    assert "gone.parquet is not there; a run takes its rows from OpenML dataset 31 and refuses any but checksum " \
           "8a98795436e34ab7" in out


def test_an_openml_suites_dataset_names_are_checked_once_it_lists_its_tasks(openml_cache: Path, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    """The names an entry's ``datasets_at`` and ``protocol.more_repeats`` give cannot be checked against an
    OpenML suite until OpenML lists its tasks; the run checks them then, and refuses a name that is none of
    them in one line, before anything is written. (The recorded cache holds tasks, not suites: here the
    suite's listing is task 1882, anneal, which the cache holds; the rest is the real client and runner.)"""
    from pipeline import runner
    from pipeline.errors import SpecError
    from pipeline.spec import load_suite, parse_suite

    monkeypatch.setattr(sources, "openml_suite_tasks", lambda suite_id: [1882])

    def suite(at: str, more: str) -> dict:
        return {"name": "tasks-of-99", "datasets": [{"openml_suite": 99}],
                "protocol": {"sample_sizes": [128, "all"], "more_repeats": {"repeats": 2, "datasets": [more]}},
                "models": [{"name": "xgboost", "trials": 1, "datasets_at": {128: [at]}}]}

    task = "openml-task-1882"  # the name a task of a suite gets
    assert parse_suite(suite(task, task)).names_problem([task]) is None
    for at, more, words in (("anneal", task, "model entry 'xgboost': datasets_at names ['anneal'], not datasets of "
                                              "the suite"),
                            (task, "anneal", "protocol.more_repeats.datasets: ['anneal'] are not datasets of the "
                                             "suite")):
        (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite(at, more)))
        loaded = load_suite(tmp_path / "s.yaml")  # accepted as written: the suite's tasks are not known yet
        with pytest.raises(SpecError) as err:
            runner.run(loaded, tmp_path / "r.duckdb", progress=lambda _: None)
        assert str(err.value) == f"{tmp_path / 's.yaml'}: invalid suite: {words}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["openml-cache", "s.yaml"]  # no results file, nothing else
