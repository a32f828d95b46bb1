"""Fixtures for the report tests: synthetic results databases and their written reports."""

from __future__ import annotations

from pathlib import Path

import pytest
import synthetic
from shipped import built_once, session_folder

from pipeline.report.pages import write_report


@pytest.fixture(scope="session", autouse=True)
def synthetic_builds_once(tmp_path_factory: pytest.TempPathFactory):
    """Each synthetic data set built once for the session, copied to each test that builds it (``synthetic.SESSION``)."""
    synthetic.SESSION = session_folder(tmp_path_factory)
    yield
    synthetic.SESSION = None


@pytest.fixture(scope="session")
def evil_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(database, reports dir) of the synthetic data with HTML in a dataset, a feature and a model name (built once
    per session: the browser tests and the page tests run on different workers)."""

    def build(root: Path) -> None:
        write_report(synthetic.build(root / "results.duckdb", synthetic.evil()), root / "reports")

    root = built_once(tmp_path_factory, "evil", build)
    return root / "results.duckdb", root / "reports"
