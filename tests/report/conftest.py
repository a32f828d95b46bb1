"""Fixtures for the report tests: synthetic results databases and their written reports."""

from __future__ import annotations

from pathlib import Path

import pytest
import synthetic

from pipeline.report.pages import write_report


@pytest.fixture(scope="session")
def evil_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(database, reports dir) of the synthetic data with HTML in a dataset, a feature and a model name."""
    root = tmp_path_factory.mktemp("evil")
    db = synthetic.build(root / "results.duckdb", synthetic.evil())
    write_report(db, root / "reports")
    return db, root / "reports"
