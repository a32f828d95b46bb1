"""Bad input through the real command line: exit code 2, one clear line on stderr, no traceback, no
half-written rows, and no Ray: every case fails before Ray starts (``--address`` points at a port where
nothing listens, so reaching Ray at all would end in a connection error, not exit 2)."""

from __future__ import annotations

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

    Store(db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE attnbench_meta SET value = '999' WHERE key = 'schema_version'")


def name_taken(db: Path) -> None:
    """A database in which the name 'd' (the default name of d.csv) already holds scikit-learn's wine."""
    from pipeline.data.ingest import ingest
    from pipeline.data.store import Store
    from pipeline.spec import Protocol, SklearnDataset

    ingest(Store(db), SklearnDataset(sklearn="wine", name="d"), Protocol(folds=3), 0)


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
}


SPEC_CASES = {"malformed_yaml", "unknown_key", "wrong_type", "unknown_model"}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2_with_one_clear_line(case: str, tmp_path: Path):
    make_suite, words, prepare_db = CASES[case]
    spec = make_suite(tmp_path)
    path = tmp_path / "suite.yaml"
    path.write_text(spec if isinstance(spec, str) else yaml.safe_dump(spec, sort_keys=False))
    db = tmp_path / "r.duckdb"
    if prepare_db:
        prepare_db(db)
    before = db.read_bytes() if db.exists() else None
    (tmp_path / "openml-cache").mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "run", str(path), "--db", str(db), "--no-report",
         "--address", "127.0.0.1:9", "--openml-server", "http://127.0.0.1:9/api/v1/xml",
         "--openml-cache", str(tmp_path / "openml-cache")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    err = out.stderr.strip()
    assert out.returncode == 2, f"rc {out.returncode}\n{out.stdout[-2000:]}\n{err[-3000:]}"
    assert "Traceback" not in out.stderr + out.stdout
    assert err.startswith("attnbench: error: ") and err.count("attnbench: error:") == 1, err
    # Data and database errors are one line; suite errors list each problem (and YAML's pointer to the
    # spot) on the lines after the first, by design of pipeline/spec.py.
    assert len(err.splitlines()) == 1 or case in SPEC_CASES, err
    assert words.lower() in err.lower(), err
    if before is not None and prepare_db is foreign_db:
        assert db.read_bytes() == before  # a file that is not ours is left as it was
    if db.exists() and prepare_db is None:
        with duckdb.connect(str(db), read_only=True) as con:
            tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            for table in {"results", "trials", "runs", "splits"} & tables:
                assert con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
