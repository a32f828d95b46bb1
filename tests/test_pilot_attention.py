"""suites/pilot-attention.yaml prices issue 59's entries on the study's own splits: its cells of the study's
FT-Transformer entry are the study's cells, id for id (done already in the study's file: nothing runs twice),
and its datasets are the ones its stated rule picks from the shipped reference's costs."""

from __future__ import annotations

from pathlib import Path

import pytest
from shipped import exported, exported_through

from pipeline import plan
from pipeline.data import ingest
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
    assert {k[4] for k in mine} == {m.key for m in pilot.models} and len(mine) == 17 * len(pilot.models)
    # every entry the pilot priced is one of the study's, and each of its cells the study plans has the pilot's id
    # (the study takes them over, `attnbench merge`, and runs none again); the rest are the 4,096-row cells on
    # the dataset the study's stated cut leaves out (sulfur and diamonds too, until the plan was cut again)
    assert {m.key for m in pilot.models} <= {m.key for m in study.models}
    assert all(theirs[k] == v for k, v in mine.items() if k in theirs)
    left = {k for k in mine if k not in theirs}
    assert {(k[0], k[3]) for k in left} == {("MagicTelescope", "4096")}
    assert {k[4] for k in left} == {m.key for m in pilot.models} - {"ft_transformer"}


@pytest.fixture(scope="module")
def study_db(tmp_path_factory) -> str:
    return str(exported(tmp_path_factory, "study-every-dataset", tmp_path_factory.mktemp("pilot") / "study.duckdb"))


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


ENTRIES = ["cbam_cnn", "cnn_attention", "cnn_transformer", "cross_attention_se", "ft_transformer-192",
           "single_head_attention", "tab_transformer", "tabm"]


# The plan was cut again part way, on the shipped chunks through the first of these, from every dataset; then
# thinned on the chunks through each later one (docs/STUDY.md, "The plan against the budget, part way"; the
# suite's header).
REPLANNED_AFTER = "chunk-0031"
THINNED_AFTER = ["chunk-0032", "chunk-0034"]


def test_the_studys_new_entries_run_where_the_stated_cut_keeps(study_db: str, tmp_path: Path, tmp_path_factory):
    """Each new entry's datasets_at in the study is what the stated cut keeps (docs/STUDY.md), computed again here
    from the shipped pilot and study: before any chunk, on the pilot's price (TabM and the race's three, priced as
    the dearest, at 10,000 rows; the budget of 80 trial-hours; 10,000 then 4,096 rows thinned); then part way, on
    the chunks through REPLANNED_AFTER, at what their cells cost, where the plan stood over the budget. The suite
    header quotes both totals, and where the plan stood."""
    from pipeline.models.kinds import family_of
    from pipeline.report import price_text
    from pipeline.report.stats import price

    pilot_db = str(exported(tmp_path_factory, "pilot-attention", tmp_path / "pilot.duckdb"))
    cells, study = price_text.entries_and_cells(pilot_db, study_db, "ft_transformer", ENTRIES)
    rows = price.prices(cells, study, "ft_transformer", extend=[10000])
    families = {m: family_of(k) for m, k in cells.drop_duplicates("model")[["model", "model_kind"]].itertuples(index=False)}
    first = price.cut(price.raced(rows, families, {10000: 3}), study, 80.0, [10000, 4096])
    assert first.within and first.every == {10000: 2, 4096: 2}
    then = str(exported_through(tmp_path_factory, "study-every-dataset", REPLANNED_AFTER, tmp_path / "then.duckdb"))
    got, planned, base = price_text.part_way(then, "ft_transformer", rows)
    stood = sum(x.hours for x in got) + sum(price.to_run(rows, families, {10000: 3}, got, planned, base)(
        price.planned_datasets(planned, [10000, 4096])).values())
    assert stood > 80.0  # over the budget: cut again
    assert price.planned_datasets(planned, [4096])[4096] == sorted(first.kept(4096))  # it stood as first planned
    plan = price.replan(rows, families, {10000: 3}, got, planned, base, study, 80.0, [10000, 4096])
    assert plan.within and plan.every == {10000: 4, 4096: 3}
    totals = [(stood, plan.total)]
    for chunk in THINNED_AFTER:  # then thinned: the plan as it stood then is the last cut's, thinned if over
        then = str(exported_through(tmp_path_factory, "study-every-dataset", chunk, tmp_path / f"{chunk}.duckdb"))
        got, planned, base = price_text.part_way(then, "ft_transformer", rows)
        now = price.planned_datasets(planned, [10000, 4096])
        assert {s: sorted(plan.kept(s)) for s in (10000, 4096)} == now
        stood = sum(x.hours for x in got) + sum(price.to_run(rows, families, {10000: 3}, got, planned, base)(now)
                                                .values())
        assert stood > 80.0
        plan = price.replan(rows, families, {10000: 3}, got, planned, base, study, 80.0, [10000, 4096], now)
        assert plan.within and set(plan.kept(10000)) < set(now[10000]) and set(plan.kept(4096)) <= set(now[4096])
        totals.append((stood, plan.total))
    suite = load_suite(REPO / "suites" / "study-every-dataset.yaml")
    new = {m.key: m for m in suite.models if m.key in ENTRIES}
    assert sorted(new) == ENTRIES and all(m.repeats == 1 for m in new.values())
    leaders = race_leaders(study_db)
    for key, m in new.items():
        assert m.datasets_at is not None and m.datasets_at[4096] == plan.kept(4096), key
        # at 10,000 rows: TabM, and the race's leaders once it is decided (none of them before)
        on = key == "tabm" or key in (leaders or [])
        assert m.sample_sizes == [128, 1024, 4096, *([10000] if on else [])], (key, leaders)
        assert not on or m.datasets_at[10000] == plan.kept(10000), key
    header = " ".join(line.lstrip("# ") for line in
                      (REPO / "suites" / "study-every-dataset.yaml").read_text(encoding="utf-8").splitlines())
    assert f"planned {first.total:.1f} trial-hours" in header
    for stood, total in totals:
        assert f"the plan stood at {stood:.1f} trial-hours in all" in header
        assert f"planned {total:.1f} trial-hours in all" in header


def attention_entries(store: Store) -> list[str]:
    """The file's planned entries of the attention family, by their stored kind."""
    from pipeline.models.kinds import ATTENTION, family_of

    kinds = store.query("SELECT DISTINCT model, model_kind FROM expected_cells")
    return sorted(m for m, k in kinds.itertuples(index=False) if family_of(k) == ATTENTION)


def waiting_at_4096(store: Store, entries: list[str]) -> int:
    from pipeline.records import Status

    # the race's cells: the first repeat's (the repeats a pick runs later, issue 82 item 1, are not the race's)
    return int(store.query("SELECT count(*) AS n FROM expected_cells WHERE sample_size = '4096' AND status = ? "
                           "AND repeat = 0 AND list_contains(?, model)", [Status.MISSING.value, entries]).n[0])


def race_leaders(study_db: str) -> list[str] | None:
    """The race's three leaders at 4,096 rows (docs/STUDY.md, pipeline/report/stats/race.py), read as the answer
    reads them, once every planned 4,096-row cell of the attention entries has an outcome; None before."""
    from pipeline.data.views import temporary_views
    from pipeline.models.kinds import ATTENTION
    from pipeline.report.stats import architectures, race

    store = Store(study_db, create=False)
    if waiting_at_4096(store, attention_entries(store)):
        return None
    s = store.query("SELECT * FROM standings WHERE sample_size = '4096'", prepare=temporary_views)
    return race.leaders(s[(s.family == ATTENTION) & (s.versus == architectures.AGAINST[0])], 3)


def test_the_race_is_decided_only_once_every_4096_row_attention_cell_ran(study_db: str):
    """While any planned 4,096-row cell of an attention entry is still to run, the race has no leaders (the
    suite then plans none of them at 10,000 rows: the test above); once every one has, three of them lead."""
    store = Store(study_db, create=False)
    attention = attention_entries(store)
    assert {"ft_transformer", "ft_transformer-192", "tab_transformer"} <= set(attention) and "tabm" not in attention
    assert len(attention) == 8
    leaders = race_leaders(study_db)
    assert (leaders is None) == (waiting_at_4096(store, attention) > 0), leaders
    assert leaders is None or (len(leaders) == 3 and set(leaders) <= set(attention))
