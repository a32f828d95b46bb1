"""Fixtures for the report tests: synthetic results databases and their written reports."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import synthetic

from pipeline.report.pages import write_report


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder ``build`` fills once for the whole test session: under pytest-xdist, in the temporary folder its
    workers share, by whichever worker comes first while the others wait on a lock. Read it; never write into it."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / name
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".built").exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            build(root)
            (root / ".built").touch()
    return root


@pytest.fixture(scope="session")
def evil_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(database, reports dir) of the synthetic data with HTML in a dataset, a feature and a model name (built once
    per session: the browser tests and the page tests run on different workers)."""

    def build(root: Path) -> None:
        write_report(synthetic.build(root / "results.duckdb", synthetic.evil()), root / "reports")

    root = built_once(tmp_path_factory, "evil", build)
    return root / "results.duckdb", root / "reports"
