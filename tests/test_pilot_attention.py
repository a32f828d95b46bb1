"""suites/pilot-attention.yaml prices issue 59's entries on the study's own splits: its cells of the study's
FT-Transformer entry are the study's cells, id for id (done already in the study's file: nothing runs twice),
and its datasets are the ones its stated rule picks from the shipped reference's costs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import plan
from pipeline.data import ingest, references
from pipeline.data.store import Store
from pipeline.spec import load_suite

REPO = Path(__file__).resolve().parents[1]


def _ids(suite, store: Store) -> dict[tuple, str]:
    prepared = [ingest.prepare(store, d, suite.protocol, suite.seed) for d in suite.datasets]
    return {(c.dataset, c.repeat, c.fold, c.sample_size, c.model): c.cell_id for c, _ in plan.expand(suite, prepared)}


def test_the_pilots_reference_cells_are_the_studys(tmp_path: Path):
    pilot = load_suite(REPO / "suites" / "pilot-attention.yaml")
    study = load_suite(REPO / "suites" / "study-every-dataset.yaml")
    names = {d.name for d in pilot.datasets}
    same = study.model_copy(update={"datasets": [d for d in study.datasets if getattr(d, "name", None) in names]})
    store = Store(tmp_path / "r.duckdb")
    mine, theirs = _ids(pilot, store), _ids(same, store)
    ft = {k: v for k, v in mine.items() if k[4] == "ft_transformer"}
    assert len(ft) == 17  # five datasets at 128, 1,024 and 4,096 rows; Mercedes at 128 and 1,024
    assert all(theirs[k] == v for k, v in ft.items())
    assert {k[4] for k in mine} == {m.key for m in pilot.models} and len(mine) == 17 * len(pilot.models)


@pytest.fixture(scope="module")
def study_db(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("pilot") / "study.duckdb")
    references.export_file("study-every-dataset", db)
    return db


def test_its_datasets_are_the_ones_its_rule_picks(study_db: str):
    costs = Store(study_db, create=False).query(
        "SELECT r.dataset, r.sample_size, sum(t.seconds) AS s FROM results r JOIN trials t USING (cell_id) "
        "WHERE r.model = 'ft_transformer' AND r.repeat = 0 AND r.fold = 0 GROUP BY ALL")
    at_4096 = costs[costs.sample_size == "4096"].sort_values(["s", "dataset"]).dataset.tolist()
    assert len(at_4096) == 20
    at_1024 = costs[costs.sample_size == "1024"].sort_values("s").dataset.tolist()
    picked = [at_4096[i - 1] for i in (1, 5, 9, 13, 17)] + [at_1024[-1]]
    pilot = load_suite(REPO / "suites" / "pilot-attention.yaml")
    assert [d.name for d in pilot.datasets] == picked
