"""protocol.more_repeats: repeated cross-validation where one repeat cannot decide (issue 58 item 3). The
datasets named get more seeded repeats of their k-fold at their largest size, for every model of the
suite; the first repeat's splits and cells stay exactly as they were, so a study grows into them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pipeline import plan
from pipeline.data import ingest
from pipeline.data.store import Store
from pipeline.errors import SpecError
from pipeline.spec import parse_suite

BASE = {"name": "rep", "seed": 0, "datasets": [{"sklearn": "wine"}, {"sklearn": "breast_cancer"}],
        "protocol": {"folds": 3, "sample_sizes": [32, 64]},
        "models": [{"name": "xgboost", "trials": 1}, {"name": "random_forest", "trials": 1}]}
MORE = {**BASE, "protocol": {**BASE["protocol"], "more_repeats": {"repeats": 3, "datasets": ["wine"]}}}


def cells(suite_dict: dict, store: Store) -> tuple[pd.DataFrame, list[ingest.Prepared]]:
    suite = parse_suite(suite_dict)
    prepared = [ingest.prepare(store, d, suite.protocol, suite.seed) for d in suite.datasets]
    rows = [{"dataset": c.dataset, "repeat": c.repeat, "fold": c.fold, "size": c.sample_size, "model": c.model,
             "cell_id": c.cell_id, "split_key": c.split_key} for c, _ in plan.expand(suite, prepared)]
    return pd.DataFrame(rows), prepared


def test_more_repeats_add_the_largest_sizes_cells_of_every_model_and_keep_the_first_repeats(tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    before, first = cells(BASE, store)
    after, again = cells(MORE, store)
    assert set(before.cell_id) < set(after.cell_id)  # every cell of the first repeat keeps its id
    added = after[~after.cell_id.isin(before.cell_id)]
    assert set(added.dataset) == {"wine"} and set(added["repeat"]) == {1, 2} and set(added["size"]) == {"64"}
    assert set(added.model) == {"xgboost", "random_forest"}
    assert len(added) == 2 * 3 * 2  # repeats × folds × models
    assert set(after.split_key) == set(before.split_key)  # more repeats add splits, they change none
    # the first repeat's rows and orders are the same split, row for row
    for a, b in zip(first, again, strict=True):
        keep = b.parts[b.parts.repeat == 0].reset_index(drop=True)
        assert a.parts.reset_index(drop=True).equals(keep)
        assert a.orders.reset_index(drop=True).equals(b.orders[b.orders.repeat == 0].reset_index(drop=True))
    wine = next(p for p in again if p.name == "wine")
    assert sorted(wine.parts.repeat.unique()) == [0, 1, 2]
    assert sorted(next(p for p in again if p.name == "breast_cancer").parts.repeat.unique()) == [0]


def test_a_stored_dataset_grows_its_repeats_without_changing_the_first(tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    suite = parse_suite(BASE)
    wine = suite.datasets[0]
    first = ingest.prepare(store, wine, suite.protocol, suite.seed)
    ingest.commit(store, first)
    more = parse_suite(MORE)
    grown = ingest.prepare(store, wine, more.protocol, more.seed)
    assert grown.new_splits and sorted(grown.parts.repeat.unique()) == [0, 1, 2]
    ingest.commit(store, grown)
    held = store.query("SELECT repeat, fold, row_id, role FROM splits WHERE dataset = 'wine' AND repeat = 0 "
                       "ORDER BY ALL").reset_index(drop=True)
    ref = first.parts[["repeat", "fold", "row_id", "role"]].sort_values(["repeat", "fold", "row_id", "role"])
    assert held.astype(str).equals(ref.reset_index(drop=True).astype(str))
    again = ingest.prepare(store, wine, more.protocol, more.seed)
    assert not again.new_splits  # the store covers them now


def test_more_repeats_of_a_dataset_the_suite_lacks_is_refused_in_one_line():
    bad = {**BASE, "protocol": {**BASE["protocol"], "more_repeats": {"repeats": 3, "datasets": ["wine", "nope"]}}}
    with pytest.raises(SpecError) as err:
        parse_suite(bad)
    assert "protocol.more_repeats.datasets: ['nope'] are not datasets of the suite" in str(err.value)
    with pytest.raises(SpecError):
        parse_suite({**BASE, "protocol": {**BASE["protocol"], "more_repeats": {"repeats": 1, "datasets": ["wine"]}}})
