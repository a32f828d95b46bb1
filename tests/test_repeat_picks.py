"""The pick runs the repeats (issue 82 item 1): where validation picks an entry of the first repeat only as its
family's best at a dataset's largest size, that entry runs the dataset's remaining repeats (a suite's
``every_repeat_on``), so that the verdict there reads every split the dataset was repeated to."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from shipped import exported_through

from pipeline import plan
from pipeline.data import ingest
from pipeline.data.store import Store
from pipeline.errors import SpecError
from pipeline.report.stats import repeat_picks
from pipeline.spec import load_suite, parse_suite

REPO = Path(__file__).resolve().parents[1]
DECIDED_AFTER = "chunk-0043"  # the rule was applied to the shipped chunks through this one (the suite's header)

BASE = {"name": "rep", "seed": 0, "datasets": [{"sklearn": "wine"}, {"sklearn": "breast_cancer"}],
        "protocol": {"folds": 3, "sample_sizes": [32, 64], "more_repeats": {"repeats": 3, "datasets": ["wine"]}},
        "models": [{"name": "xgboost", "trials": 1}, {"name": "random_forest", "trials": 1, "repeats": 1}]}


def _cells(suite_dict: dict, store: Store) -> pd.DataFrame:
    suite = parse_suite(suite_dict)
    prepared = [ingest.prepare(store, d, suite.protocol, suite.seed) for d in suite.datasets]
    return pd.DataFrame([{"dataset": c.dataset, "repeat": c.repeat, "size": c.sample_size, "model": c.model,
                          "cell_id": c.cell_id} for c, _ in plan.expand(suite, prepared)])


def test_every_repeat_on_adds_the_entrys_repeats_on_its_datasets_and_changes_no_id(tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    before = _cells(BASE, store)
    assert set(before[before.model == "random_forest"]["repeat"]) == {0}
    more = {**BASE, "models": [BASE["models"][0], {**BASE["models"][1], "every_repeat_on": ["wine"]}]}
    after = _cells(more, store)
    assert set(before.cell_id) < set(after.cell_id)  # no cell changes its id
    added = after[~after.cell_id.isin(before.cell_id)]
    assert set(added.model) == {"random_forest"} and set(added.dataset) == {"wine"}
    assert set(added["repeat"]) == {1, 2} and set(added["size"]) == {"64"} and len(added) == 2 * 3
    # the same splits as the model that runs every repeat there
    xgb = after[(after.model == "xgboost") & (after.dataset == "wine") & (after["repeat"] > 0)]
    assert sorted(map(tuple, xgb[["repeat", "size"]].values)) == sorted(map(tuple, added[["repeat", "size"]].values))


def test_every_repeat_on_a_dataset_the_suite_lacks_is_refused_in_one_line():
    bad = {**BASE, "models": [BASE["models"][0], {**BASE["models"][1], "every_repeat_on": ["nope"]}]}
    with pytest.raises(SpecError) as err:
        parse_suite(bad)
    assert "model entry 'random_forest': every_repeat_on names ['nope'], not datasets of the suite" in str(err.value)


def _standings_row(dataset, size, n_train, family, model, n_splits, best=True, versus="best gradient boosting"):
    return {"dataset": dataset, "sample_size": size, "n_train": n_train, "family": family, "model": model,
            "family_best": best, "versus": versus, "n_splits": n_splits}


def test_the_rule_takes_each_familys_pick_at_the_largest_size_where_it_read_fewer_splits():
    att, net = "attention network", "other network"
    rows = pd.DataFrame([
        _standings_row("a", "64", 64, att, "x", 3), _standings_row("a", "64", 64, att, "y", 9, best=False),
        _standings_row("a", "32", 32, att, "x", 3),  # a smaller size: not the largest
        _standings_row("a", "64", 64, net, "tabm", 3), _standings_row("a", "64", 64, att, "x", 3, versus="best other network"),
        _standings_row("b", "64", 64, att, "y", 9), _standings_row("b", "64", 64, net, "mlp", 9),  # already all
        _standings_row("c", "32", 32, att, "x", 3)])  # not repeated: 3 of 3
    expected = pd.DataFrame([{"dataset": d, "sample_size": s, "repeat": r, "fold": f, "model_kind": "boosting"}
                             for d, s, reps in (("a", "64", 3), ("b", "64", 3), ("c", "32", 1))
                             for r in range(reps) for f in range(3)])
    got = repeat_picks.picks(rows, expected)
    assert got[["dataset", "family", "model", "n_splits", "planned_splits"]].values.tolist() == [
        ["a", att, "x", 3, 9], ["a", net, "tabm", 3, 9]]
    assert repeat_picks.by_entry(got) == {"tabm": ["a"], "x": ["a"]}
    cost = pd.DataFrame([{"dataset": "a", "sample_size": "64", "model": "x", "seconds": 360.0},
                         {"dataset": "a", "sample_size": "64", "model": "tabm", "seconds": 720.0}])
    assert repeat_picks.price(got, cost) == pytest.approx((360 * 6 + 720 * 6) / 3600)


def test_the_study_runs_the_repeats_of_exactly_the_picks_its_rule_made(tmp_path_factory):
    """Computed again from the shipped chunks through DECIDED_AFTER: the entries and datasets the study's suite
    names in every_repeat_on, and the price its header quotes."""
    db = exported_through(tmp_path_factory, "study-every-dataset", DECIDED_AFTER,
                          tmp_path_factory.mktemp("picks") / "then.duckdb")
    store = Store(db, create=False)
    table = repeat_picks.picks(store.query("SELECT * FROM standings"),
                               store.query("SELECT dataset, sample_size, repeat, fold, model_kind FROM expected_cells"))
    assert len(table) == 17 and table.dataset.nunique() == 11 and set(table.n_splits) == {3}
    suite = load_suite(REPO / "suites" / "study-every-dataset.yaml")
    named = {m.key: sorted(m.every_repeat_on) for m in suite.models if m.every_repeat_on}
    assert named == repeat_picks.by_entry(table)
    seconds = store.query("SELECT r.dataset, r.sample_size, r.model, sum(t.seconds) AS seconds FROM results r "
                          "JOIN trials t USING (cell_id) GROUP BY r.cell_id, r.dataset, r.sample_size, r.model")
    header = " ".join(line.lstrip("# ") for line in
                      (REPO / "suites" / "study-every-dataset.yaml").read_text(encoding="utf-8").splitlines())
    assert f"{repeat_picks.price(table, seconds):.1f} trial-hours" in header
    assert f"{len(table)} picks on {table.dataset.nunique()} datasets, {int((table.planned_splits - table.n_splits).sum())} cells" in header
