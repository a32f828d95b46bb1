"""The code that splits is part of every split key: ``SPLIT_VERSION`` (pipeline/data/splits.py) goes into
it, a change to that file's code fails here until the version is raised, and a raised version makes
new splits and new cells in a results file that holds the old ones (version 1 keeps today's keys)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pipeline import plan
from pipeline.data import ingest, splits
from pipeline.data.store import Store
from pipeline.models.versions import syntax_digest
from pipeline.spec import parse_suite

SPLITS = Path(splits.__file__)
# SPLIT_VERSION → the digest of splits.py's code at that version (``code_digest``).
SPLIT_CODE = {
    1: "bdbaeaac0ee111e676a1bb0f768d8b3f803423ed88e23fb3f8edf8c970d716e7",
}


def code_digest(source: str) -> str:
    """The digest of splits.py's code (:func:`pipeline.models.versions.syntax_digest`), without the
    ``SPLIT_VERSION = …`` line itself: raising it is not a change of code."""
    return syntax_digest(source, ignore=("SPLIT_VERSION",))


def test_splits_py_is_not_changed_without_raising_split_version():
    digest = code_digest(SPLITS.read_text())
    assert splits.SPLIT_VERSION in SPLIT_CODE and digest == SPLIT_CODE[splits.SPLIT_VERSION], (
        f"pipeline/data/splits.py's code changed (its digest is now {digest}): bump SPLIT_VERSION and record the "
        f"new hash here (SPLIT_CODE in {Path(__file__).name}), so that results files split by the old code get new "
        "splits and new cells. If no row can land elsewhere (a rename, a refactor), record the new hash under the "
        "current version instead.")


def test_the_digest_ignores_comments_docstrings_and_layout_but_not_code():
    source = SPLITS.read_text()
    same = source.replace('"""Labels to stratify on', '"""Labels (reworded) to stratify on').replace(
        "\nfrom pipeline.errors", "\n# a comment\n\nfrom pipeline.errors")
    assert same != source and code_digest(same) == code_digest(source)
    changed = source.replace("n_bins: int = 10", "n_bins: int = 5")
    assert changed != source and code_digest(changed) != code_digest(source)
    bumped = source.replace("SPLIT_VERSION = 1", "SPLIT_VERSION = 2")
    assert bumped != source and code_digest(bumped) == code_digest(source)  # the version is not the code


def test_a_new_split_version_makes_new_splits_and_new_cells_and_version_1_keeps_todays(tmp_path: Path, monkeypatch):
    suite = parse_suite({"name": "v", "seed": 0, "datasets": [{"sklearn": "wine"}],
                         "protocol": {"folds": 3, "sample_sizes": [32, "all"]},
                         "models": [{"name": "xgboost", "trials": 1}]})
    store = Store(tmp_path / "r.duckdb")
    spec, protocol = suite.datasets[0], suite.protocol

    def prepared() -> ingest.Prepared:
        p = ingest.prepare(store, spec, protocol, suite.seed)
        ingest.commit(store, p)
        return p

    first = prepared()
    # Version 1 gives the key as it was before there was a version (results files keep their cells).
    today = hashlib.sha256(json.dumps({"folds": 3, "val": protocol.validation_fraction, "seed": 0,
                                       "data": first.dataset.checksum}, sort_keys=True).encode()).hexdigest()[:12]
    assert splits.SPLIT_VERSION == 1 and first.split_key == today and first.new_splits
    cells = {c.cell_id for c, _ in plan.expand(suite, [first])}

    monkeypatch.setattr(splits, "SPLIT_VERSION", 2)
    second = prepared()
    assert second.split_key != first.split_key
    assert second.new_splits  # split anew by the new code, not read back from the file
    new_cells = {c.cell_id for c, _ in plan.expand(suite, [second])}
    assert len(new_cells) == len(cells) and not new_cells & cells  # every cell is new: none is done yet
    held = store.query("SELECT DISTINCT split_key FROM train_order ORDER BY 1").split_key.tolist()
    assert held == sorted([first.split_key, second.split_key])  # the old splits stay, as history

    monkeypatch.setattr(splits, "SPLIT_VERSION", 1)
    again = prepared()
    assert again.split_key == first.split_key and not again.new_splits
    assert {c.cell_id for c, _ in plan.expand(suite, [again])} == cells


@pytest.mark.parametrize("version", [2, 3])
def test_each_split_version_above_1_has_a_key_of_its_own(version, monkeypatch):
    from pipeline.spec import Protocol

    keys = set()
    for v in (1, version):
        monkeypatch.setattr(splits, "SPLIT_VERSION", v)
        keys.add(ingest.split_key(Protocol(), 0, "abc", official=False))
        keys.add(ingest.split_key(Protocol(), 0, "abc", official=True))
    assert len(keys) == 4
