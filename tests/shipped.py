"""Built once per test session, shared by the xdist workers: a folder a build fills (``built_once``), and each
shipped reference exported into a results file (``exported``), which a test gets a copy of to read."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.data import references


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole test session: under pytest-xdist, the one its workers share."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(shared: Path, name: str, build: Callable[[Path], None]) -> Path:
    """``shared / name``, a folder ``build`` fills once: by whichever process comes first, while the others wait
    on a lock. Read it; never write into it."""
    root = shared / name
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".built").exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            build(root)
            (root / ".built").touch()
    return root


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder ``build`` fills once for the whole test session, shared by the xdist workers."""
    return once(session_folder(tmp_path_factory), name, build)


def exported(tmp_path_factory: pytest.TempPathFactory, name: str, db: str | Path) -> Path:
    """The shipped reference ``name`` as `attnbench reference export` writes it, copied to ``db``: exported once per
    session (an export of study-every-dataset reads all its chunks, seconds each time), each test's copy its own."""
    root = built_once(tmp_path_factory, f"export-{name}", lambda r: references.export_file(name, r / "ref.duckdb"))
    shutil.copyfile(root / "ref.duckdb", db)
    return Path(db)


def exported_through(tmp_path_factory: pytest.TempPathFactory, name: str, chunk: str, db: str | Path) -> Path:
    """The shipped reference ``name`` as it stood once ``chunk`` (``chunk-NNNN``) was added, exported once per
    session as :func:`exported` does, copied to ``db``: what a decision made then was made on."""
    source = references.shipped_root() / name

    def build(root: Path) -> None:
        folder = root / name
        folder.mkdir()
        shutil.copyfile(source / "reference.json", folder / "reference.json")
        for c in sorted(p for p in source.glob("chunk-*") if p.name <= chunk):
            (folder / c.name).symlink_to(c.resolve(), target_is_directory=True)
        references.export_file(str(folder), root / "ref.duckdb")

    root = built_once(tmp_path_factory, f"export-{name}-{chunk}", build)
    shutil.copyfile(root / "ref.duckdb", db)
    return Path(db)
