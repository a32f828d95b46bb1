"""A model entry's own ``sample_sizes`` (and ``repeats``): an entry that runs at some of the protocol's sizes (issue 59: attention
architectures at 128, 1,024 and 4,096 rows, and at 10,000 only for those that lead). Which cells exist, not how
one runs: the cells it keeps have the ids they have without it, so widening it later adds cells and re-runs
none; sizes the protocol does not have are refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_more_repeats import BASE, MORE, cells

from pipeline.data.store import Store
from pipeline.errors import SpecError
from pipeline.spec import parse_suite


def _with_sizes(suite: dict, sizes: list | None) -> dict:
    models = [dict(m) for m in suite["models"]]
    if sizes is not None:
        models[0]["sample_sizes"] = sizes
    return {**suite, "models": models}


def test_an_entry_runs_at_its_own_sizes_and_keeps_its_cells_ids(tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    every, _ = cells(BASE, store)
    some, _ = cells(_with_sizes(BASE, [64]), store)
    xgb = some[some.model == "xgboost"]
    assert set(xgb["size"]) == {"64"} and len(xgb) == 2 * 3  # datasets × folds
    assert set(some[some.model == "random_forest"]["size"]) == {"32", "64"}  # the other entry: every size
    assert set(some.cell_id) < set(every.cell_id)  # each cell it keeps has the id it has without the key
    assert set(every.cell_id) - set(some.cell_id) == set(every[(every.model == "xgboost") & (every["size"] == "32")].cell_id)


def test_more_repeats_run_an_entry_only_where_its_sizes_reach_the_largest(tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    at_top, _ = cells(_with_sizes(MORE, [64]), store)
    below, _ = cells(_with_sizes(MORE, [32]), store)
    assert set(at_top[(at_top.model == "xgboost") & (at_top.dataset == "wine")]["repeat"]) == {0, 1, 2}
    assert set(below[(below.model == "xgboost") & (below.dataset == "wine")]["repeat"]) == {0}


def test_an_entry_runs_its_own_repeats_and_keeps_its_cells_ids(tmp_path: Path):
    """repeats: 1 beside more_repeats: the entry runs its folds once at every size, the other entry keeps the
    repeats at the largest; the cells it keeps have their ids. repeats: 3 is every repeat the suite plans."""
    store = Store(tmp_path / "r.duckdb")
    every, _ = cells(MORE, store)
    once, _ = cells({**MORE, "models": [{**MORE["models"][0], "repeats": 1}, *MORE["models"][1:]]}, store)
    xgb, other = once[once.model == "xgboost"], once[once.model != "xgboost"]
    assert set(xgb["repeat"]) == {0} and set(every[every.model == "xgboost"]["repeat"]) == {0, 1, 2}
    assert set(xgb.cell_id) == set(every[(every.model == "xgboost") & (every["repeat"] == 0)].cell_id)
    assert set(other.cell_id) == set(every[every.model != "xgboost"].cell_id)
    three, _ = cells({**MORE, "models": [{**MORE["models"][0], "repeats": 3}, *MORE["models"][1:]]}, store)
    assert set(three.cell_id) == set(every.cell_id)


@pytest.mark.parametrize("sizes", [[128], [32, "all"], []])
def test_sizes_the_protocol_lacks_are_refused_in_one_line(sizes: list):
    with pytest.raises(SpecError) as err:
        parse_suite(_with_sizes(BASE, sizes))
    text = str(err.value)
    assert "model entry 'xgboost': sample_sizes" in text and "must be some of the protocol's [32, 64]" in text
    assert len(text.strip().splitlines()) == 1


def test_a_suite_that_takes_a_references_sizes_is_checked_against_them():
    """A suite run --against a reference may leave protocol.sample_sizes out to take the reference's: its
    entries' sizes are checked once it has them, never against the default ['all']."""
    from pipeline.data import references
    from pipeline.data.references import ReferenceError

    base = {"name": "mine", "datasets": [{"sklearn": "wine"}], "models": [{"name": "xgboost", "sample_sizes": [1024]}]}
    suite = parse_suite(base)  # no protocol sizes given: nothing to check yet
    ref = references.load("study-lite")
    adopted = ref.adopt_protocol(suite)
    assert adopted.models[0].sample_sizes == [1024] and 1024 in adopted.protocol.sample_sizes
    wrong = parse_suite({**base, "models": [{"name": "xgboost", "sample_sizes": [999]}]})
    with pytest.raises(ReferenceError) as err:
        ref.adopt_protocol(wrong)
    assert "model entry 'xgboost': sample_sizes [999] must be some of the protocol's" in str(err.value)
    assert "(the reference 'study-lite''s)" in str(err.value) and len(str(err.value).splitlines()) == 1


def test_an_entry_runs_only_the_datasets_a_cut_keeps_at_a_size_and_keeps_its_cells_ids(tmp_path: Path):
    """datasets_at: at 64 rows the entry runs wine alone (a stated cut's), every dataset at 32; its cells have
    the ids they have without the key, so a cut relaxed later adds cells and re-runs none."""
    store = Store(tmp_path / "r.duckdb")
    every, _ = cells(BASE, store)
    models = [{**BASE["models"][0], "datasets_at": {64: ["wine"]}}, *BASE["models"][1:]]
    cut, _ = cells({**BASE, "models": models}, store)
    xgb = cut[cut.model == "xgboost"]
    assert set(xgb[xgb["size"] == "64"].dataset) == {"wine"} and set(xgb[xgb["size"] == "32"].dataset) == {"wine", "breast_cancer"}
    assert set(cut.cell_id) == set(every.cell_id) - set(every[(every.model == "xgboost") & (every["size"] == "64")
                                                              & (every.dataset == "breast_cancer")].cell_id)


@pytest.mark.parametrize(("at", "says"), [({64: ["iris"]}, "datasets_at names ['iris'], not datasets of the suite"),
                                          ({128: ["wine"]}, "datasets_at [128] are not sizes it runs at")])
def test_a_cut_naming_what_the_suite_lacks_is_refused_in_one_line(at: dict, says: str):
    with pytest.raises(SpecError) as err:
        parse_suite({**BASE, "models": [{**BASE["models"][0], "datasets_at": at}, *BASE["models"][1:]]})
    assert says in str(err.value) and len(str(err.value).strip().splitlines()) == 1
