"""Upgrades said (issue 84 item 7): the schema number moves whenever the tables do, and opening a file an older
attnbench wrote says in one line what changed in it (its schema number, the tables, columns and views added) and
which done cells run again and why (their entry or attnbench's code for it changed), or that none does."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
import yaml
from processes import in_process as cli

from pipeline.data import schema

pytestmark = pytest.mark.slow


def test_the_schema_number_moves_with_the_shape():
    assert schema.SHAPES.get(schema.SCHEMA_VERSION) == schema.shape(), (
        "the tables changed: give them a new SCHEMA_VERSION and its SHAPES entry (pipeline/data/schema.py)")


def _suite(path: Path, n_estimators: int) -> None:
    path.write_text(yaml.safe_dump({"name": "up", "seed": 0, "datasets": [{"sklearn": "wine"}],
                                    "protocol": {"folds": 3, "max_folds": 2, "sample_sizes": ["all"]},
                                    "models": [{"name": "xgboost", "trials": 1, "fixed": {"n_estimators": n_estimators}}]}))


def _make_older(db: Path) -> None:
    """The file as schema 6 left it: a column and a view this version adds, missing."""
    with duckdb.connect(str(db)) as con:
        con.execute("DROP VIEW IF EXISTS superseded")
        con.execute("ALTER TABLE runs DROP COLUMN plan_notes")
        con.execute("UPDATE attnbench_meta SET value = '6' WHERE key = 'schema_version'")
        con.execute("UPDATE attnbench_meta SET value = 'older' WHERE key IN ('shape', 'views')")


def test_opening_an_older_file_says_what_changed_and_what_runs_again(ray_local, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]):
    suite, db = tmp_path / "up.yaml", tmp_path / "r.duckdb"
    run = ["run", str(suite), "--db", str(db), "--no-report"]
    _suite(suite, 5)
    first = cli(run, capsys)
    assert first.returncode == 0, first.stderr
    assert "older attnbench" not in first.stdout and "views added" not in first.stdout  # a new file: nothing to say

    _make_older(db)
    same = cli(run, capsys)
    assert same.returncode == 0, same.stderr
    assert (f"r.duckdb: written by an older attnbench (schema 6), upgraded to schema {schema.SCHEMA_VERSION}: column "
            "runs.plan_notes added, every result kept") in same.stdout, same.stdout
    assert "no done cell runs again: no recorded code version of their entries changed" in same.stdout
    assert "views added to the file: superseded" in same.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT value FROM attnbench_meta WHERE key = 'schema_version'").fetchone()[0] == str(
            schema.SCHEMA_VERSION)
    again = cli(run, capsys)
    assert "older attnbench" not in again.stdout and "views added" not in again.stdout  # said once

    _make_older(db)
    _suite(suite, 6)  # the entry changed: its cells run again, and the line says so
    changed = cli(run, capsys)
    assert changed.returncode == 0, changed.stderr
    assert "2 of them ran before under another id and run again" in changed.stdout, changed.stdout
    assert "(xgboost 2)" in changed.stdout
