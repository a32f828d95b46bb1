"""A model entry's ``from_size``: the caps its cells run with from a training size on (issue 81 item 4: the
round, epoch and time caps set for 12,288 rows stop models still improving at 24,576 and more). The cells
below that size keep their ids, so a study gains the rule without re-running a cell; the cells it covers
get ids of their own, and their trials run with its values, through a real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from processes import in_process as cli
from test_more_repeats import BASE, cells

from pipeline.data.store import Store
from pipeline.errors import SpecError
from pipeline.spec import parse_suite

RULE = {64: {"fixed": {"n_estimators": 7}, "trial_timeout_s": 99}}


def _with_rule(rule: dict | None) -> dict:
    models = [dict(m) for m in BASE["models"]]
    models[0] = {**models[0], "fixed": {"n_estimators": 5}, **({"from_size": rule} if rule else {})}
    return {**BASE, "models": models}


def test_a_size_rule_gives_its_cells_new_ids_and_keeps_the_others(tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    before, _ = cells(_with_rule(None), store)
    after, _ = cells(_with_rule(RULE), store)
    assert len(before) == len(after)
    moved = before[~before.cell_id.isin(after.cell_id)]
    assert set(moved.model) == {"xgboost"} and set(moved["size"]) == {"64"}
    assert len(moved) == 2 * 3  # datasets × folds: every xgboost cell at 64 rows, none other
    again, _ = cells(_with_rule({64: {"fixed": {"n_estimators": 8}}}), store)
    at_64 = {name: set(df[(df["size"] == "64") & (df.model == "xgboost")].cell_id) for name, df in
             (("after", after), ("again", again))}
    assert at_64["again"].isdisjoint(at_64["after"])  # another rule, other cells


def test_the_largest_rule_not_above_a_cells_rows_applies():
    entry = parse_suite(_with_rule({16: {"fixed": {"n_estimators": 6}}, 64: {"trial_timeout_s": 50}})).models[0]
    assert entry.at(8).fixed == {"n_estimators": 5} and entry.at(8) is entry
    assert entry.at(32).fixed == {"n_estimators": 6} and entry.at(32).trial_timeout_s == entry.trial_timeout_s
    at_64 = entry.at(64)
    assert at_64.fixed == {"n_estimators": 5} and at_64.trial_timeout_s == 50  # the 64 rule alone, not merged with 16's


@pytest.mark.parametrize("rule, says", [({64: {"fixed": {"n_estimatorz": 7}}}, "n_estimatorz"),
                                        ({4: {"trial_timeout_s": 9}}, "from_size 4"),
                                        ({64: {"trial_timeout_s": -1}}, "trial_timeout_s")])
def test_a_wrong_rule_is_refused_in_one_line(rule: dict, says: str):
    with pytest.raises(SpecError) as err:
        parse_suite(_with_rule(rule))
    assert says in str(err.value) and "\n" not in str(err.value).strip()


@pytest.mark.slow
def test_a_run_trains_each_cell_under_its_sizes_rule(ray_local, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]):
    suite = tmp_path / "rule.yaml"
    suite.write_text(yaml.safe_dump({"name": "rule", "seed": 0, "datasets": [{"sklearn": "wine"}],
                                     "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": [32, 64]},
                                     "models": [_with_rule({64: {"fixed": {"n_estimators": 7,
                                                                           "early_stopping_rounds": 7}}})["models"][0]]}))
    db = str(tmp_path / "r.duckdb")
    out = cli(["run", str(suite), "--db", db, "--no-report"], capsys)
    assert out.returncode == 0, out.stderr
    got = Store(db).query("SELECT r.sample_size, r.spec_hash, t.config FROM results r JOIN trials t USING (cell_id) "
                          "ORDER BY r.sample_size")
    configs = {row.sample_size: json.loads(row.config) if isinstance(row.config, str) else row.config
               for row in got.itertuples()}
    assert configs["32"]["n_estimators"] == 5 and configs["64"]["n_estimators"] == 7
    assert configs["64"]["early_stopping_rounds"] == 7
    assert got.spec_hash.nunique() == 2  # each size's version of the entry is its own
    again = cli(["run", str(suite), "--db", db, "--no-report"], capsys)
    assert "2 cells, 2 already done, 0 to run" in again.stdout, again.stdout


def test_all_is_planned_only_where_the_whole_part_adds_rows_and_not_above_the_cap(tmp_path: Path):
    """all_min_gain and all_max_rows (issue 81 item 1): each dataset at its own largest size, not a near copy of a
    listed size, nor past the study's largest; more_repeats at: grid keeps the repeats where they ran."""
    store = Store(tmp_path / "r.duckdb")
    protocol = {"folds": 3, "sample_sizes": [32, 64, "all"]}  # wine's training part: 94 rows; breast_cancer's: 303
    plain, _ = cells({**BASE, "protocol": protocol}, store)
    assert set(plain[plain["size"] == "all"].dataset) == {"wine", "breast_cancer"}
    gain, _ = cells({**BASE, "protocol": {**protocol, "all_min_gain": 0.5}}, store)  # 94 < 1.5 × 64
    assert set(gain[gain["size"] == "all"].dataset) == {"breast_cancer"}
    assert set(gain.cell_id) < set(plain.cell_id)  # the cells it keeps keep their ids
    cap, _ = cells({**BASE, "protocol": {**protocol, "all_max_rows": 200}}, store)
    assert set(cap[cap["size"] == "all"].dataset) == {"wine"}
    more = {"repeats": 2, "datasets": ["wine"]}
    largest, _ = cells({**BASE, "protocol": {**protocol, "more_repeats": more}}, store)
    grid, _ = cells({**BASE, "protocol": {**protocol, "more_repeats": {**more, "at": "grid"}}}, store)
    assert set(largest[largest["repeat"] == 1]["size"]) == {"all"}
    assert set(grid[grid["repeat"] == 1]["size"]) == {"64"}


def test_sizes_of_reads_a_dataset_at_its_own_sizes_and_keeps_the_other_cells(tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    protocol = {"folds": 3, "sample_sizes": [32, 64]}
    every, _ = cells({**BASE, "protocol": protocol}, store)
    some, _ = cells({**BASE, "protocol": {**protocol, "sizes_of": {"wine": [64]}}}, store)
    assert set(some[some.dataset == "wine"]["size"]) == {"64"}
    assert set(some[some.dataset == "breast_cancer"]["size"]) == {"32", "64"}
    assert set(some.cell_id) < set(every.cell_id)


@pytest.mark.parametrize("sizes_of, says", [({"wine": [128]}, "sizes_of.wine: [128] are not among"),
                                            ({"nope": [32]}, "protocol.sizes_of: ['nope'] are not datasets")])
def test_a_wrong_sizes_of_is_refused_in_one_line(sizes_of: dict, says: str):
    with pytest.raises(SpecError) as err:
        parse_suite({**BASE, "protocol": {"folds": 3, "sample_sizes": [32, 64], "sizes_of": sizes_of}})
    assert says in str(err.value) and "\n" not in str(err.value).strip()
