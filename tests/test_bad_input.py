"""Bad input through the real command line (its entry point, in this process where no interpreter start is
needed): exit code 2, one clear line on stderr, no traceback, no half-written rows, and no Ray: every case
fails before Ray starts (``--address`` points at a port where nothing listens, so reaching Ray at all would
end in a connection error, not exit 2, where this process has not joined a Ray already; where it has, the
run would go on and write rows)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
MODELS = [{"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 10}}]


def suite(tmp: Path, datasets=None, models=None, **extra) -> dict:
    return {"name": "bad", "datasets": datasets or [{"sklearn": "wine"}], "models": models or MODELS,
            "protocol": {"folds": 3, "max_folds": 1}, **extra}


def csv(tmp: Path, text: str) -> list[dict]:
    (tmp / "d.csv").write_text(text)
    return [{"file": "d.csv", "target": "label"}]


def rows(n: int, label=lambda i: i % 2) -> str:
    return "a,b,label\n" + "".join(f"{i},{i * 2 % 7},{label(i)}\n" for i in range(n))


def truncated_parquet(tmp: Path) -> list[dict]:
    pd.DataFrame({"a": np.arange(200.0), "label": np.arange(200) % 2}).to_parquet(tmp / "d.parquet")
    data = (tmp / "d.parquet").read_bytes()
    (tmp / "d.parquet").write_bytes(data[: len(data) // 2])
    return [{"file": "d.parquet", "target": "label"}]


def foreign_db(db: Path) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE invoices (id INTEGER, amount DOUBLE); INSERT INTO invoices VALUES (1, 9.5)")


def newer_db(db: Path) -> None:
    from pipeline.data.store import Store

    Store(db).init()
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE attnbench_meta SET value = '999' WHERE key = 'schema_version'")


def name_taken(db: Path) -> None:
    """A database in which the name 'd' (the default name of d.csv) already holds scikit-learn's wine."""
    from pipeline.data.ingest import ingest
    from pipeline.data.store import Store
    from pipeline.spec import Protocol
    from pipeline.suite_datasets import SklearnDataset

    ingest(Store(db), SklearnDataset(sklearn="wine", name="d"), Protocol(folds=3), 0)


def continuous(n: int) -> str:
    return "a,b,label\n" + "".join(f"{i},{i % 5},{i * 0.37:.2f}\n" for i in range(n))


def stored_with_label(db: Path) -> None:
    """The suite's d.csv stored with target 'label'; the suite then names another target."""
    from pipeline.data.ingest import ingest
    from pipeline.data.store import Store
    from pipeline.spec import Protocol
    from pipeline.suite_datasets import LocalFile

    ingest(Store(db), LocalFile(file=str(db.parent / "d.csv"), target="label", name="d"), Protocol(folds=3), 0)


# name → (how to write the suite (text or dict), expected words in the message, how to prepare the db)
CASES = {
    "malformed_yaml": (lambda t: "name: bad\ndatasets: [{sklearn: wine}\nmodels: [", "yaml", None),
    "unknown_key": (lambda t: {**suite(t), "colour": "blue"}, "colour", None),
    "wrong_type": (lambda t: suite(t, models=[{"name": "xgboost", "trials": "many"}]), "trials", None),
    "unknown_model": (lambda t: suite(t, models=[{"name": "gpt5"}]), "gpt5", None),
    "empty_dataset": (lambda t: suite(t, datasets=csv(t, "a,b,label\n")), "d.csv", None),
    "missing_target": (lambda t: suite(t, datasets=csv(t, rows(60).replace("label", "y", 1))), "label", None),
    "single_class": (lambda t: suite(t, datasets=csv(t, rows(60, lambda i: 1))), "class", None),
    "nan_target": (lambda t: suite(t, datasets=csv(t, rows(60, lambda i: "" if i % 9 == 0 else i % 2))),
                   "label", None),
    "duplicate_columns": (lambda t: suite(t, datasets=csv(t, rows(60).replace("a,b,", "a,a,", 1))), "a", None),
    "truncated_parquet": (lambda t: suite(t, datasets=truncated_parquet(t)), "d.parquet", None),
    "openml_unreachable": (lambda t: suite(t, datasets=[{"openml_task": 987654321}]), "987654321", None),
    "foreign_duckdb": (lambda t: suite(t), "not written by attnbench", foreign_db),
    "newer_schema": (lambda t: suite(t), "newer attnbench", newer_db),
    "dataset_name_taken": (lambda t: suite(t, datasets=csv(t, rows(60))), "'d' is already used", name_taken),
    "duplicate_key": (lambda t: "name: bad\ndatasets: [{sklearn: wine}]\nmodels:\n  - name: xgboost\n"
                      "    trials: 2\n    trials: 5\n", "'trials' is given twice", None),
    "not_utf8": (lambda t: "name: b\u00e9d\ndatasets: [{sklearn: wine}]\nmodels: [{name: xgboost}]\n".encode("latin-1"),
                 "not UTF-8", None),
    "true_as_a_count": (lambda t: suite(t, models=[{"name": "xgboost", "trials": True}]), "not True", None),
    "string_as_a_count": (lambda t: suite(t, models=[{"name": "xgboost", "trials": "5"}]), "not '5'", None),
    "float_as_a_count": (lambda t: suite(t, models=[{"name": "xgboost", "trials": 1.0}]), "not 1.0", None),
    "string_as_a_fold_count": (lambda t: {**suite(t), "protocol": {"folds": "3"}}, "protocol.folds", None),
    "rare_class": (lambda t: suite(t, datasets=csv(t, rows(60, lambda i: "rare" if i == 7 else i % 2))),
                   "class 'rare'", None),
    "binary_on_a_continuous_target": (lambda t: suite(t, datasets=[{**csv(t, continuous(90))[0],
                                                                     "task_type": "binary"}]), "task_type is binary", None),
    "multiclass_on_a_continuous_target": (lambda t: suite(t, datasets=[{**csv(t, continuous(90))[0],
                                                                         "task_type": "multiclass"}]),
                                          "looks continuous", None),
    "stored_copy_out_of_date": (lambda t: suite(t, datasets=[{**csv(t, rows(60))[0], "target": "a"}]),
                                "--refresh", stored_with_label),
    # A typo'd target is a typo, not a reason to replace the stored copy (which would supersede results).
    "typo_target_on_a_stored_copy": (lambda t: suite(t, datasets=[{**csv(t, rows(60))[0], "target": "lable"}]),
                                     "'lable' is not a column", stored_with_label),
    "drop_not_a_column": (lambda t: suite(t, datasets=[{**csv(t, rows(60))[0], "drop": ["id"]}]),
                          "drop names 'id', not a column of the file; columns: a, b, label", None),
    "quoted_number_where_a_number_goes": (lambda t: "name: bad\ndatasets: [{sklearn: wine}]\nmodels:\n"
                                          "  - name: xgboost\n    fixed: {learning_rate: '1e-1'}\n",
                                          "fixed.learning_rate: '1e-1' is text, not a number", None),
    "no_cell_at_all": (lambda t: {**suite(t), "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": [5000]}},
                       "no cell at all", None),
    # The same with a results file that already holds other work: no dataset or split is added to it.
    "no_cell_at_all_in_an_existing_file": (
        lambda t: {**suite(t), "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": [5000]}},
        "no cell at all", lambda db: name_taken(db)),
}


SPEC_CASES = {"malformed_yaml", "unknown_key", "wrong_type", "unknown_model", "true_as_a_count", "string_as_a_count",
              "float_as_a_count", "string_as_a_fold_count"}


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under root, with its bytes: what a refused command must leave as it was.
    The OpenML client's own cache folder is the client's to manage (it makes empty folders as it looks)."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))
            if "openml-cache" not in p.relative_to(root).parts}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2_with_one_clear_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch):
    make_suite, words, prepare_db = CASES[case]
    spec = make_suite(tmp_path)
    path = tmp_path / "suite.yaml"
    if isinstance(spec, bytes):
        path.write_bytes(spec)
    else:
        path.write_text(spec if isinstance(spec, str) else yaml.safe_dump(spec, sort_keys=False))
    db = tmp_path / "r.duckdb"
    if prepare_db:
        prepare_db(db)
    (tmp_path / "openml-cache").mkdir()
    before = snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    import openml

    monkeypatch.setattr(openml.config, "connection_n_retries", 1)  # not the client's 10 s of retries: its error
    out = in_process(["run", str(path), "--db", str(db), "--no-report", "--address", "127.0.0.1:9",
                      "--openml-server", "http://127.0.0.1:9/api/v1/xml", "--openml-cache", str(tmp_path / "openml-cache")],
                     capsys)
    err = out.stderr.strip()
    assert out.returncode == 2, f"rc {out.returncode}\n{out.stdout[-2000:]}\n{err[-3000:]}"
    assert "Traceback" not in out.stderr + out.stdout
    assert err.startswith("attnbench: error: ") and err.count("attnbench: error:") == 1, err
    # Data and database errors are one line; suite errors list each problem (and YAML's pointer to the
    # spot) on the lines after the first, by design of pipeline/spec.py.
    assert len(err.splitlines()) == 1 or case in SPEC_CASES, err
    assert words.lower() in err.lower(), err
    after = snapshot(tmp_path)
    assert after == before, sorted(set(after) ^ set(before)) or "a file changed"  # nothing created or written
    assert not re.search(r"\brun \d{8}-\d{6}-", out.stdout), out.stdout  # no id of a run the file never records


# `attnbench query`: SQL that would read or write anything but the results file, and bad options.
# name → (SQL, extra options, expected words in the message, a path that must not come to exist)
QUERY_CASES = {
    "copy_to_a_file": ("COPY (SELECT 1) TO '{tmp}/evil.csv'", [], "results file only", "evil.csv"),
    "read_csv_elsewhere": ("SELECT * FROM read_csv('/etc/passwd')", [], "results file only", None),
    "read_text_elsewhere": ("SELECT * FROM read_text('/etc/hostname')", [], "results file only", None),
    "glob_the_filesystem": ("SELECT * FROM glob('/root/**')", [], "results file only", None),
    "attach_another_db": ("ATTACH '{tmp}/other.duckdb' AS o", [], "results file only", "other.duckdb"),
    "export_database": ("EXPORT DATABASE '{tmp}/exported'", [], "results file only", "exported"),
    "install_an_extension": ("INSTALL httpfs", [], "results file only", None),
    "load_an_extension": ("LOAD httpfs", [], "results file only", None),
    "reenable_external_access": ("SET enable_external_access = true", [], "locked", None),
    "unlock_the_configuration": ("SET lock_configuration = false", [], "locked", None),
    "delete_rows": ("DELETE FROM results", [], "read-only", None),
    "drop_a_table": ("DROP TABLE results", [], "read-only", None),
    "empty_sql": ("", [], "the SQL is empty", None),
    "blank_sql": ("   ", [], "the SQL is empty", None),
    "syntax_error": ("SELEC 1", [], "syntax", None),
    "unknown_table": ("SELECT * FROM no_such_table", [], "no_such_table", None),
    "misspelt_table": ("SELECT * FROM leaderbord", [], 'did you mean "leaderboard"', None),
    "misspelt_column": ("SELECT modle FROM results", [], 'candidate bindings: "model"', None),
    "negative_max_rows": ("SELECT 1", ["--max-rows", "-1"], "--max-rows -1", None),
    "zero_max_rows": ("SELECT 1", ["--max-rows", "0"], "--max-rows 0", None),
    "out_into_a_missing_directory": ("SELECT 1", ["--out", "{tmp}/no/such/x.csv"], "does not exist", "no"),
    "out_with_an_unknown_suffix": ("SELECT 1", ["--out", "{tmp}/x.txt"], ".csv or .parquet", "x.txt"),
    "no_database_yet": ("SELECT 1", ["--db", "{tmp}/none.duckdb"], "no results database", "none.duckdb"),
    "not_a_database": ("SELECT 1", ["--db", "{tmp}/notes.txt"], "not a duckdb database", None),
    "someone_elses_database": ("SELECT 1", ["--db", "{tmp}/invoices.duckdb"], "not written by attnbench", None),
}


@pytest.fixture(scope="module")
def results_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipeline.data.store import Store
    from pipeline.data.views import install

    db = tmp_path_factory.mktemp("query") / "results.duckdb"
    install(Store(db))  # an empty results file as a run leaves it: tables, and the views in the file
    return db


def in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess:
    """The command line's own entry point, in this process (no interpreter start per case): an uncaught
    exception fails the test as a traceback would."""
    import openml

    from pipeline import cli

    capsys.readouterr()
    settings = openml.config._root_cache_directory, openml.config.server  # the root, not the server's folder in it
    try:
        rc = cli.main(argv)
    except SystemExit as done:  # argparse's exit
        rc = int(done.code or 0)
    finally:  # --openml-cache and --openml-server set the client's settings for the process
        openml.config.set_root_cache_directory(str(settings[0]))
        openml.config.server = settings[1]
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(argv, rc, out, err)


@pytest.mark.parametrize("case", list(QUERY_CASES))
def test_query_refuses_with_one_clear_line_and_changes_nothing(case: str, results_db: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]):
    sql, extra, words, must_not_exist = QUERY_CASES[case]
    (tmp_path / "notes.txt").write_text("not a database\n")
    foreign_db(tmp_path / "invoices.duckdb")
    watched = [results_db, tmp_path / "invoices.duckdb", tmp_path / "notes.txt"]
    before = [p.read_bytes() for p in watched]
    options = [o.format(tmp=tmp_path) for o in extra]
    if "--db" not in options:
        options += ["--db", str(results_db)]
    out = in_process(["query", sql.format(tmp=tmp_path), *options], capsys)
    err = out.stderr.strip()
    assert out.returncode == 2, f"rc {out.returncode}\n{out.stdout[-2000:]}\n{err[-3000:]}"
    assert "Traceback" not in out.stderr + out.stdout
    assert err.startswith("attnbench: error: ") and len(err.splitlines()) == 1, err
    assert words.lower() in err.lower(), err
    assert [p.read_bytes() for p in watched] == before  # the database (and the files beside it) as it was
    if must_not_exist:
        assert not (tmp_path / must_not_exist).exists()


def test_query_reads_the_results_file_and_the_duckdb_cli_reads_it_too(results_db: Path, tmp_path: Path):
    """The sealed connection still answers ordinary SQL over tables and views, --out writes where asked,
    and the `duckdb` CLI users install from PyPI (duckdb-cli 1.5) opens the file read-only."""
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "query", "--db", str(results_db), "--out",
                          str(tmp_path / "lb.csv"), "SELECT count(*) AS n FROM leaderboard"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and (tmp_path / "lb.csv").read_text().splitlines() == ["n", "0"], out.stderr
    cli = Path(sys.executable).with_name("duckdb")
    version = subprocess.run([str(cli), "--version"], capture_output=True, text=True).stdout
    assert version.startswith("v1.5."), version
    read = subprocess.run([str(cli), "-readonly", "-noheader", "-list", str(results_db),
                           "SELECT value FROM attnbench_meta WHERE key = 'app'; SELECT count(*) FROM tuning_curves"],
                          capture_output=True, text=True, timeout=60)
    assert read.returncode == 0 and read.stdout.split() == ["attnbench", "0"], read.stdout + read.stderr


# `attnbench run` options: a Ray address that cannot work ends in seconds, bad numbers before anything.
# name → (options, expected words in the message)
RUN_OPTION_CASES = {
    "address_where_nothing_listens": (["--address", "127.0.0.1:9"], "cannot connect"),
    "ray_client_address_where_nothing_listens": (["--address", "ray://127.0.0.1:9"], "cannot connect"),
    "address_not_an_address": (["--address", "not-a-host"], "not an address ray can join"),
    "address_of_the_job_api": (["--address", "http://127.0.0.1:8265"], "job api"),
    "address_host_unresolvable": (["--address", "no-such-host.invalid:6379"], "cannot resolve"),
    "address_port_out_of_range": (["--address", "127.0.0.1:70000"], "not an address ray can join"),
    "zero_cpus": (["--num-cpus", "0"], "give at least 1"),
    "negative_cpus": (["--num-cpus", "-1"], "give at least 1"),
    "negative_gpus": (["--num-gpus", "-1"], "give at least 0"),
    "cpus_not_a_number": (["--num-cpus", "two"], "not a whole number"),
    "unknown_option": (["--colour", "blue"], "unrecognized arguments: --colour"),
}


@pytest.mark.parametrize("case", list(RUN_OPTION_CASES))
def test_run_options_that_cannot_work_exit_2_in_seconds(case: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch):
    options, words = RUN_OPTION_CASES[case]
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite(tmp_path)))
    db = tmp_path / "r.duckdb"
    if "--address" in options:
        # This process may have joined the session's Ray, and a command that has one checks no address: the
        # command here sees none, as a fresh process would. (An address the check let through would reach
        # ray.init, which refuses a second start with another error than the one asserted below.)
        import ray

        monkeypatch.setattr(ray, "is_initialized", lambda: False)
    out = in_process(["run", str(path), "--db", str(db), "--no-report", *options], capsys)
    err = out.stderr.strip()
    assert out.returncode == 2, f"rc {out.returncode}\n{out.stdout[-2000:]}\n{err[-3000:]}"
    assert "Traceback" not in out.stderr + out.stdout
    assert err.startswith("attnbench: error: ") and len(err.splitlines()) == 1, err
    assert words.lower() in err.lower(), err
    assert not re.search(r"\brun \d{8}-\d{6}-", out.stdout), out.stdout  # no id of a run the file never records
    if db.exists():  # the datasets may be in; no run was started and nothing ran
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
            assert con.execute("SELECT count(*) FROM results").fetchone()[0] == 0


def test_suites_check_finds_what_a_run_would_fail_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A valid suite whose data file is missing, or whose fixed architecture cannot be built (a token
    width that 4 heads do not divide), is refused by `suites check`, one line per problem."""
    missing = tmp_path / "missing.yaml"
    missing.write_text(yaml.safe_dump(suite(tmp_path, datasets=[{"file": "nowhere.csv", "target": "y"}])))
    unbuildable = tmp_path / "heads.yaml"
    unbuildable.write_text(yaml.safe_dump(suite(tmp_path, models=[
        {"name": "ft_transformer", "trials": 1, "fixed": {"d_token": 30, "n_heads": 4}}])))
    searched = tmp_path / "searched.yaml"  # a searched width: each trial records its own configuration's error
    searched.write_text(yaml.safe_dump(suite(tmp_path, models=[
        {"name": "ft_transformer", "trials": 1, "space": {"d_token": {"choice": [32, 64]}}, "fixed": {"n_heads": 4}}])))
    out = in_process(["suites", "check", str(missing), str(unbuildable), str(searched)], capsys)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"{missing}: dataset file {tmp_path / 'nowhere.csv'} does not exist" in out.stderr
    assert f"{unbuildable}: model 'ft_transformer': its architecture cannot be built" in out.stderr
    assert "d=30 must be divisible by n_heads=4" in out.stderr and f"{searched}: ok" in out.stdout and "2 of 3 suite files" in out.stderr


def test_suites_check_reports_every_bad_file_and_refuses_to_check_nothing(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(suite(tmp_path)))
    dup = tmp_path / "dup.yaml"
    dup.write_text("name: a\nname: b\ndatasets: [{sklearn: wine}]\nmodels: [{name: xgboost}]\n")
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump({**suite(tmp_path), "modles": []}))
    out = in_process(["suites", "check", str(dup), str(good), str(typo)], capsys)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{good}: ok" in out.stdout
    assert "'name' is given twice" in out.stderr and "modles" in out.stderr and "2 of 3 suite files" in out.stderr
    # The package installed away from a checkout, run in a folder without suites/, no file named: an
    # error, not a silent success over nothing.
    import shutil

    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    shutil.copytree(REPO / "pipeline", site / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere.mkdir()
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "suites", "check"], cwd=elsewhere,
                         env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "no suite files in" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_results_file_the_file_system_will_not_let_us_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """An immutable (root: chattr +i) or read-only (others: chmod) --db: run says the file system refuses
    the write and leaves the file as it was; query still reads it."""
    from pipeline.data.store import Store

    db = tmp_path / "r.duckdb"
    Store(db).init()
    before = db.read_bytes()
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite(tmp_path)))
    root = os.geteuid() == 0
    lock = ["chattr", "+i", str(db)] if root else ["chmod", "0444", str(db)]
    subprocess.run(lock, check=True, capture_output=True)
    try:
        out = in_process(["run", str(path), "--db", str(db), "--no-report"], capsys)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert "the file system does not let attnbench write" in out.stderr, out.stderr
        assert db.read_bytes() == before
        read = in_process(["query", "--db", str(db), "SELECT count(*) AS n FROM results"], capsys)
        assert read.returncode == 0 and read.stdout.split() == ["n", "0"], read.stderr
    finally:
        subprocess.run(["chattr", "-i", str(db)] if root else ["chmod", "0644", str(db)], capture_output=True)


@pytest.mark.parametrize("where", ["a_file_in_the_way", "under_proc"])
def test_a_report_folder_that_cannot_be_written_is_refused_before_the_run(where: str, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite(tmp_path)))
    (tmp_path / "blocker").write_text("")
    reports = str(tmp_path / "blocker") if where == "a_file_in_the_way" else "/proc/attnbench-reports"
    db = tmp_path / "r.duckdb"
    out = in_process(["run", str(path), "--db", str(db), "--reports", reports], capsys)
    assert out.returncode == 2 and f"--reports {reports}" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not db.exists()  # refused before anything ran


def test_an_openml_server_that_never_answers_is_given_up_on(tmp_path: Path):
    """A server that accepts the connection and then says nothing: every attempt times out
    (ATTNBENCH_NET_TIMEOUT_S, 30 s by default) instead of waiting forever."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: [held.append(server.accept()[0]) for _ in range(16)], daemon=True).start()
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite(tmp_path, datasets=[{"openml_task": 987654321}])))
    (tmp_path / "cache").mkdir()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "fetch", str(path), "--db", str(tmp_path / "r.duckdb"),
             "--openml-server", f"http://127.0.0.1:{server.getsockname()[1]}/api/v1/xml",
             "--openml-cache", str(tmp_path / "cache")],
            env={**os.environ, "ATTNBENCH_NET_TIMEOUT_S": "1"}, capture_output=True, text=True, timeout=120)
    finally:
        server.close()
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "987654321" in out.stderr and "timed out" in out.stderr.lower(), out.stderr
    assert held  # the client did connect: it was the silence that ended it


@pytest.mark.parametrize("argv", [
    ["run", "{tmp}/no-such-suite.yaml", "--reports", "{tmp}/out/reports"],
    ["run", "{tmp}/suite.yaml", "--db", "{tmp}/invoices.duckdb", "--reports", "{tmp}/out/reports"],
    ["report", "--db", "{tmp}/none.duckdb", "--reports", "{tmp}/out/reports"],
    ["report", "--db", "{tmp}/invoices.duckdb", "--reports", "{tmp}/out/reports"],
    ["serve", "--db", "{tmp}/none.duckdb", "--reports", "{tmp}/out/reports", "--port", "0"],
    ["serve", "--reports", "{tmp}/out/reports", "--port", "0"],
], ids=["run_missing_suite", "run_foreign_db", "report_missing_db", "report_foreign_db", "serve_missing_db",
        "serve_no_report"])
def test_refused_report_commands_create_no_folder(argv: list[str], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]):
    """`run`, `report` and `serve` refuse before --reports (or a results file) is made: the file system
    is left as it was, byte for byte."""
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite(tmp_path)))
    foreign_db(tmp_path / "invoices.duckdb")
    before = snapshot(tmp_path)
    out = in_process([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert out.returncode == 2 and out.stderr.startswith("attnbench: error:"), out.stderr
    assert snapshot(tmp_path) == before


def test_a_reader_that_goes_away_early_gets_no_traceback():
    """`attnbench models | head -1`: the command stops at the closed pipe, as Unix tools do (exit 141, 128 +
    SIGPIPE), with nothing on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "models"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the command's first line (it takes a second to start)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141 and "Traceback" not in err, err


def test_a_local_ray_that_does_not_start_is_one_line_and_writes_nothing(tmp_path: Path):
    """Ray's temporary folder where a file is (RAY_TMPDIR misset): the local Ray cannot start. A real command in
    a process of its own (its own Ray, none joined): exit 2, one `attnbench: error:` line naming why, no
    traceback, and no results file (nothing is written before Ray is up)."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite(tmp_path)))
    (tmp_path / "not-a-folder").write_text("")
    env = {**os.environ, "RAY_TMPDIR": str(tmp_path / "not-a-folder")}
    env.pop("RAY_ADDRESS", None)
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "s.yaml", "--db", "r.duckdb", "--no-report"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    errors = [line for line in out.stderr.splitlines() if line.startswith("attnbench:")]
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert len(errors) == 1 and errors[0].startswith("attnbench: error: the local Ray did not start (NotADirectoryError")
    assert not (tmp_path / "r.duckdb").exists()
