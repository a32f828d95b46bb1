"""`attnbench price PILOT STUDY` (issue 59 item 2): each entry the study does not run yet, priced on a pilot's
cells against the study's own entry on the same splits, scaled by that entry's cost over the study."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import pytest
import synthetic
from processes import in_process

from pipeline.report import price_text
from pipeline.report.stats.price import Price, prices


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The study: FT-Transformer and XGBoost, three folds at 32 and 128 rows. The pilot: fold 0 of the same
    split, FT-Transformer, XGBoost (the study's, not priced) and 'ft-192', three times FT-Transformer's trial
    time; its cell on beta at 128 rows failed, so FT-Transformer's cell there must not count either."""
    root = tmp_path_factory.mktemp("price")
    study = synthetic.Synth(models={k: synthetic.MODELS[k] for k in ("xgboost", "ft_transformer")},
                            sizes=("32", "128"), folds=(0, 1, 2))
    study.missing, study.failed = set(), set()
    pilot = synthetic.Synth(models={k: synthetic.MODELS[k] for k in ("xgboost", "ft_transformer")}
                            | {"ft-192": ("ft_transformer", 0.76, 0.035, 6.0)}, sizes=("32", "128"), folds=(0,))
    pilot.missing, pilot.failed = set(), {("beta", "128", 0, "ft-192")}
    return (str(synthetic.build(root / "pilot.duckdb", pilot)), str(synthetic.build(root / "study.duckdb", study)))


def test_an_entry_is_priced_by_its_ratio_on_the_cells_both_finished(files):
    pilot, study = price_text.entries_and_cells(*files, base="ft_transformer")
    assert set(pilot.model) == {"ft_transformer", "ft-192"}  # XGBoost is the study's own: no price
    rows = {p.sample_size: p for p in prices(pilot, study, "ft_transformer", extend=[128, 512])}
    assert set(rows) == {32, 128, 512}
    assert (rows[32].cells, rows[128].cells) == (2, 1)
    for size in (32, 128):
        assert rows[size].ratio == pytest.approx(3.0)  # 2.5 at 128 had beta's base cell been counted
        # the base over the study: search_seconds = 3 × 2.0 × n / 32 on each of 2 datasets × 3 folds
        assert rows[size].study_cells == 6
        assert rows[size].study_base_hours == pytest.approx(6 * 3 * 2.0 * size / 32 / 3600)
        assert rows[size].projected == pytest.approx(3.0 * rows[size].study_base_hours)
    assert not rows[512].measured and rows[512].priced_at == 128 and rows[512].study_cells == 0


def test_the_command_prints_the_table_and_its_total(files, capsys: pytest.CaptureFixture[str]):
    out = in_process(["price", *files, "--extend", "512"], capsys)
    assert out.returncode == 0, out.stderr
    assert out.stdout == price_text.markdown(*files, files[0], files[1], extend=[512])
    total = sum(p.projected for p in prices(*price_text.entries_and_cells(*files, "ft_transformer"), "ft_transformer"))
    assert f"Projected: {total:.1f} trial-hours" in out.stdout
    # 512 rows: priced by the ratio at 128, but the study has no base cell there to scale: said, never a zero
    assert "| ft-192 | 512 | (ratio at 128) not priced |" in out.stdout
    assert "Not priced (no pilot cell both finished, or no cell of the base in the study at that size): ft-192 at 512" \
        in out.stdout


def test_a_size_no_pilot_cell_of_an_entry_finished_is_named_not_zero():
    import pandas as pd

    pilot = pd.DataFrame([("d", "32", 0, 0, 0, "base", 10.0), ("d", "32", 0, 0, 0, "new", 30.0),
                          ("d", "128", 0, 0, 0, "base", 40.0)],
                         columns=["dataset", "sample_size", "repeat", "fold", "seed", "model", "seconds"])
    study = pd.DataFrame({"dataset": ["d", "d"], "sample_size": ["32", "128"], "seconds": [3600.0, 7200.0]})
    rows = {p.sample_size: p for p in prices(pilot, study, "base")}
    assert rows[32].projected == pytest.approx(3.0) and rows[128].cells == 0 and rows[128].projected != rows[128].projected
    text = price_text.totals(list(rows.values()))
    assert text.startswith("Projected: 3.0 trial-hours") and "Not priced" in text and "new at 128" in text
    with pytest.raises(ValueError, match="the study holds no finished cell of the base entry 'base'"):
        prices(pilot, study.iloc[:0], "base")


def test_a_base_the_pilot_never_ran_is_one_line(files, capsys: pytest.CaptureFixture[str]):
    out = in_process(["price", *files, "--base", "tabm"], capsys)
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr.strip().count("\n") == 0 and "no finished cell of the base entry 'tabm'" in out.stderr


def _price(model: str, size: int, ratio: float, base_hours: float) -> Price:
    return Price(model, size, 1, ratio, 1.0, ratio, size, 3, base_hours, ratio * base_hours)


def test_the_cut_thins_the_largest_size_first_keeping_every_kth_by_the_base_cost():
    import pandas as pd

    from pipeline.report.stats.price import cut

    # at 100 rows five datasets whose base cost 1 to 5 hours, their names out of cost order; at 10 rows three of 1
    costs = {"e": 1, "b": 2, "d": 3, "a": 4, "c": 5}
    study = pd.DataFrame([(d, "100", h * 3600.0) for d, h in costs.items()] + [(d, "10", 3600.0) for d in "xyz"],
                         columns=["dataset", "sample_size", "seconds"])
    rows = [_price("new", 100, 1.0, 15.0), _price("new", 10, 1.0, 3.0)]
    plan = cut(rows, study, 100.0, [100, 10])
    assert plan.within and plan.every == {100: 1, 10: 1} and plan.total == pytest.approx(18.0)
    assert plan.reach[100] == ["e", "b", "d", "a", "c"]  # cheapest first
    plan = cut(rows, study, 12.0, [100, 10])  # every second at 100 rows: ranks 1, 3, 5 cost 1 + 3 + 5
    assert plan.every == {100: 2, 10: 1} and plan.kept(100) == ["e", "d", "c"]
    assert plan.by_size == pytest.approx({100: 9.0, 10: 3.0})
    plan = cut(rows, study, 11.5, [100, 10])  # then every second at 10 rows, before every third anywhere
    assert plan.every == {100: 2, 10: 2} and plan.kept(10) == ["x", "z"] and plan.total == pytest.approx(11.0)
    plan = cut(rows, study, 8.0, [100, 10])  # every third at 100 rows: ranks 1 and 4
    assert plan.every == {100: 3, 10: 2} and plan.kept(100) == ["e", "a"] and plan.within
    plan = cut(rows, study, 0.5, [100, 10])  # no budget it can meet: it stops with one dataset at each size cut
    assert not plan.within and (plan.kept(100), len(plan.kept(10))) == (["e"], 1)
    assert cut([_price("new", 100, 2.0, 15.0)], study, 100.0, [100]).total == pytest.approx(30.0)  # ratio × base


def test_a_raced_size_prices_the_k_dearest_attention_entries_and_every_other_entry():
    from pipeline.report.stats.price import raced

    families = {"a": "attention network", "b": "attention network", "c": "attention network",
                "tabm": "other network"}
    rows = [_price("a", 10_000, 5.0, 1.0), _price("b", 10_000, 3.0, 1.0), _price("c", 10_000, 1.0, 1.0),
            _price("tabm", 10_000, 9.0, 1.0), _price("c", 4096, 1.0, 1.0)]
    kept = raced(rows, families, {10_000: 2})
    assert {(p.model, p.sample_size) for p in kept} == {("a", 10_000), ("b", 10_000), ("tabm", 10_000), ("c", 4096)}


def test_the_command_prints_the_plan_and_the_cut_it_took(files, capsys: pytest.CaptureFixture[str]):
    args = ["price", *files, "--race", "128=1", "--budget", "0.0001"]
    out = in_process(args, capsys)
    assert out.returncode == 0, out.stderr
    assert "--race 128=1 --budget 0.0001` -->" in out.stdout
    assert "At 128 rows only the race's 1 leaders among the attention entries run" in out.stdout
    # the default cut: the pilot's largest size, its two datasets; ranks 1, 3: one kept, and still over
    assert "at 128 rows rank 1 only of the 2 that reach it, 1:" in out.stdout
    assert "The rule cannot bring it within 0.0001" in out.stdout
    # argparse's refusal, as the command's own process ends with it (exit 2)
    bad = subprocess.run([sys.executable, "-m", "pipeline.cli", *args[:3], "--race", "128"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "give ROWS=K" in bad.stderr and bad.stdout == ""


def test_named_entries_are_priced_after_the_study_holds_them_and_a_size_not_priced_is_refused(files, capsys: pytest.CaptureFixture[str]):
    """Once the study runs an entry, the default prices nothing new; naming it (--entry) prices it as before
    the study ran it. A --cut or --race size no pilot or --extend priced, and an entry the pilot lacks, are
    one line each, nothing printed."""
    pilot, study = files
    named = price_text.markdown(pilot, pilot, "p", "p", entries=["ft-192"])  # the pilot as its own study holds it
    assert "| ft-192 | 32 |" in named and named.startswith("<!-- printed by `attnbench price p p --entry ft-192` -->")
    assert "holds no finished cell of an entry" in price_text.markdown(pilot, pilot, "p", "p")
    for extra, says in ((["--cut", "999"], "--race/--cut at 999 rows: not a size priced here"),
                        (["--race", "999=3"], "--race/--cut at 999 rows"),
                        (["--race", "999=3", "--so-far"], "--race/--cut at 999 rows"),
                        (["--so-far", "--budget", "5"], "name the sizes the cut may thin (--cut)"),
                        (["--entry", "tabm"], "the pilot holds no finished cell of 'tabm'")):
        out = in_process(["price", pilot, study, *extra], capsys)
        assert out.returncode == 2 and says in out.stderr and out.stdout == "" and len(out.stderr.splitlines()) == 1


def test_so_far_sets_each_cell_against_the_plans_price_of_it_on_the_same_split():
    """A cell that ran is set against its price (the entry's ratio times the base's time on its split) only
    where both have a figure; a failed cell with no time counts as run, costing nothing; a cell still to run
    on a split the base did not finish has no price, and is counted, never priced at zero."""
    import math

    import pandas as pd

    from pipeline.report.stats.price import spent

    split = ["dataset", "sample_size", "repeat", "fold", "seed"]
    cells = pd.DataFrame([("d", "32", 0, 0, 0, "new", True, 100.0), ("d", "32", 0, 1, 0, "new", True, math.nan),
                          ("d", "32", 0, 2, 0, "new", False, math.nan), ("e", "32", 0, 0, 0, "new", False, math.nan),
                          ("d", "32", 0, 0, 0, "unpriced", True, 50.0)],
                         columns=[*split, "model", "run", "seconds"])
    base = pd.DataFrame([("d", "32", 0, f, 0, s) for f, s in ((0, 20.0), (1, 30.0), (2, 40.0))],
                        columns=[*split, "seconds"])
    [x] = spent([_price("new", 32, 2.0, 1.0)], cells, base)  # "unpriced" is no entry of the price: left out
    assert (x.model, x.sample_size, x.planned, x.run, x.unpriced) == ("new", 32, 4, 2, 1)
    assert x.hours == pytest.approx(100 / 3600) and x.matched == pytest.approx(100 / 3600)
    assert x.priced == pytest.approx(2 * 20 / 3600) and x.factor == pytest.approx(2.5)
    assert x.rest == pytest.approx(2 * 40 / 3600)


def test_a_race_not_planned_yet_is_bounded_by_its_k_dearest_attention_entries():
    import pandas as pd

    from pipeline.models.kinds import ATTENTION, NETWORK
    from pipeline.report.stats.price import race_bound

    split = ["dataset", "sample_size", "repeat", "fold", "seed"]
    rows = [_price(m, 10000, r, 1.0) for m, r in (("a", 1.0), ("b", 2.0), ("c", 3.0), ("net", 10.0))]
    families = {"a": ATTENTION, "b": ATTENTION, "c": ATTENTION, "net": NETWORK}
    splits = pd.DataFrame([("d", "10000", 0, f, 0) for f in (0, 1)], columns=split)
    base = pd.DataFrame([("d", "10000", 0, 0, 0, 3600.0), ("d", "10000", 0, 1, 0, 7200.0),
                         ("d", "10000", 0, 2, 0, 99999.0)], columns=[*split, "seconds"])  # fold 2: not planned
    assert race_bound(rows, families, splits, base, 10000, 2) == (["c", "b"], pytest.approx(9.0 + 6.0))
    # In words, on the splits the study plans there (TabM's alone: the race undecided); none once it is decided.
    planned = splits.assign(model="net")
    [_, line] = price_text._race_lines(rows, families, {10000: 2}, planned, base)
    assert line == ("Not planned yet: the race's 2 leaders at 10,000 rows, decided by validation at the size below "
                    "once every cell there has run; on the 2 splits the study plans there, at most 15.0 trial-hours as priced (the 2 attention entries that "
                    "cost most there: c, b).")
    decided = pd.concat([planned, splits.assign(model="c")])
    assert price_text._race_lines(rows, families, {10000: 2}, decided, base) == []


def test_the_command_prints_the_plan_against_its_cost_so_far(files, tmp_path_factory: pytest.TempPathFactory,
                                                             capsys: pytest.CaptureFixture[str]):
    """The study part way through 'ft-192', which costs 1.5 times what the pilot priced it at (×4.5 FT-Transformer
    there, ×3 on the pilot): three of its twelve cells still to run, one failed with no trial time."""
    pilot = files[0]
    study = synthetic.Synth(models={k: synthetic.MODELS[k] for k in ("xgboost", "ft_transformer")}
                            | {"ft-192": ("ft_transformer", 0.76, 0.035, 9.0)}, sizes=("32", "128"), folds=(0, 1, 2))
    study.missing = {("alpha", "128", 1, "ft-192"), ("alpha", "128", 2, "ft-192"), ("beta", "32", 0, "ft-192")}
    study.failed = {("beta", "128", 0, "ft-192")}
    path = str(synthetic.build(tmp_path_factory.mktemp("so-far") / "study.duckdb", study))
    out = in_process(["price", pilot, path, "--entry", "ft-192", "--race", "128=1", "--so-far"], capsys)
    assert out.returncode == 0, out.stderr
    assert out.stdout == price_text.markdown(pilot, path, pilot, path, race={128: 1}, entries=["ft-192"], so_far=True)
    assert out.stdout.splitlines()[0].endswith("--race 128=1 --entry ft-192 --so-far` -->")
    # 32 rows: 5 ran, 3 × 9 s each against the plan's 3 × (3 × 2 s); the rest, beta's fold 0, priced 3 × 6 s.
    # 128 rows: 4 ran (one failed: no time), 3 × 36 s against 3 × (3 × 8 s); the rest, two cells, 3 × 24 s each.
    h = 1 / 3600
    for line in (f"| ft-192 | 32 | 5 of 6 | {135 * h:.2f} | {90 * h:.2f} | ×1.50 | {18 * h:.2f} | {27 * h:.2f} |",
                 f"| ft-192 | 128 | 4 of 6 | {324 * h:.2f} | {216 * h:.2f} | ×1.50 | {144 * h:.2f} | {216 * h:.2f} |"):
        assert line in out.stdout, out.stdout
    assert (f"So far: {459 * h:.1f} trial-hours on 9 of 12 cells (the plan priced them at {306 * h:.1f}; spent ÷ price "
            f"×1.50). Still to run: 3 cells, priced at {162 * h:.1f} trial-hours, {243 * h:.1f} at each") in out.stdout
    assert "Not planned yet" not in out.stdout  # the race at 128 rows: its attention entry is planned there


def _part_way(leaders: tuple[str, ...] = ()):
    """A study part way, by hand. Entries 'a' and 'b' (attention, ratios 1 and 2) and 'net' (ratio 1), one fold, at
    10 and 100 rows, and at 1,000 rows at the ratio of 100 (carried up, as --extend prices it); the race takes 1
    attention entry at 1,000 rows (``leaders``: those the study plans there once it is decided). The base cost 1,
    2, 3, 4 hours at 100 rows on p, q, r, s, and 10 and 20 at 1,000 rows on p and q. At 100 rows every entry ran
    q: 'a' took three times its price (6 h), the others theirs."""
    import pandas as pd

    from pipeline.models.kinds import ATTENTION, NETWORK
    from pipeline.report.stats.price import spent

    split = ["dataset", "sample_size", "repeat", "fold", "seed"]
    rows = [dataclasses.replace(_price(m, n, r, 1.0), priced_at=min(n, 100))
            for m, r in (("a", 1.0), ("b", 2.0), ("net", 1.0)) for n in (10, 100, 1000)]
    families = {"a": ATTENTION, "b": ATTENTION, "net": NETWORK}
    hours = {(100, "p"): 1, (100, "q"): 2, (100, "r"): 3, (100, "s"): 4, (1000, "p"): 10, (1000, "q"): 20, (10, "p"): 1}
    base = pd.DataFrame([(d, str(n), 0, 0, 0, h * 3600.0) for (n, d), h in hours.items()], columns=[*split, "seconds"])
    took = {"a": 6.0, "b": 4.0, "net": 2.0}
    cells = pd.DataFrame([(d, "100", 0, 0, 0, m, d == "q", took[m] * 3600 if d == "q" else math.nan)
                          for d in "pqrs" for m in ("a", "b", "net")]
                         + [(d, "1000", 0, 0, 0, m, False, math.nan) for d in "pq" for m in ("net", *leaders)]
                         + [("p", "10", 0, 0, 0, "net", False, math.nan)], columns=[*split, "model", "run", "seconds"])
    study = base[["dataset", "sample_size", "seconds"]]
    return rows, families, spent(rows, cells, base), cells, base, study


def test_part_way_the_cells_still_to_run_are_priced_at_what_their_entrys_cells_cost():
    from pipeline.report.stats.price import planned_datasets, to_run

    rows, families, got, cells, base, _ = _part_way()
    assert {(x.model, x.sample_size): x.factor for x in got if x.factor == x.factor} == {
        ("a", 100): pytest.approx(3.0), ("b", 100): pytest.approx(1.0), ("net", 100): pytest.approx(1.0)}
    cost = to_run(rows, families, {1000: 1}, got, cells, base)
    # 100 rows on p, r, s (q ran): a 3 × 8, b 2 × 8, net 8. 1,000 rows: net 30 and the dearer attention entry: a,
    # 1 × 3 × 30 (its spent ÷ price at 100 rows, where its ratio came from), over b's 2 × 30. 10 rows, not cut:
    # net's one cell, as planned.
    assert cost(planned_datasets(cells, [1000, 100])) == pytest.approx({10: 1.0, 100: 48.0, 1000: 120.0})
    assert cost({1000: ["p"], 100: ["p", "q"]}) == pytest.approx({10: 1.0, 100: 6.0, 1000: 40.0})
    # the raced size priced as a race where the map leaves it out (on the datasets the study plans there)
    assert cost({100: list("pqrs")})[1000] == pytest.approx(120.0)
    # once the race is decided and its leader planned there, the leader is priced, not the dearest
    rows, families, got, cells, base, _ = _part_way(leaders=("b",))
    assert to_run(rows, families, {1000: 1}, got, cells, base)({1000: ["p", "q"]})[1000] == pytest.approx(90.0)


@pytest.mark.parametrize(("budget", "every", "kept_100", "total"),
                         [(200.0, {1000: 1, 100: 1}, list("pqrs"), 181.0),
                          (110.0, {1000: 2, 100: 1}, list("pqrs"), 101.0),
                          (80.0, {1000: 2, 100: 2}, ["p", "q", "r"], 77.0),
                          (70.0, {1000: 2, 100: 4}, ["p", "q"], 59.0)])
def test_part_way_the_stated_cut_applies_again_counting_what_was_spent(budget, every, kept_100, total):
    """The rule's own steps (1,000 rows, then 100, every second before every third), on the spent 12 hours plus
    the rest at each entry's spent ÷ price; q, where cells at 100 rows had run, stays whatever its rank (every
    third keeps p and s, and q beside them: 83 hours, over 70; every fourth p alone, and q: 59)."""
    from pipeline.report.stats.price import replan

    rows, families, got, cells, base, study = _part_way()
    plan = replan(rows, families, {1000: 1}, got, cells, base, study, budget, [1000, 100])
    assert plan.spent == pytest.approx(12.0) and plan.held == {100: ["q"], 1000: []}
    assert (plan.every, plan.kept(100), plan.total, plan.within) == (every, kept_100, pytest.approx(total), True)
    assert not replan(rows, families, {1000: 1}, got, cells, base, study, 58.0, [1000, 100]).within  # 59 at best


def test_part_way_the_plan_is_said_against_the_budget_and_cut_again_only_over_it():
    rows, families, got, cells, base, study = _part_way()
    stands = price_text.replanned(rows, families, {1000: 1}, got, cells, base, study, 200.0, [1000, 100])
    assert "As it stands: 181.0 trial-hours in all (still to run: 10 rows 1.0, 100 rows 48.0, 1,000 rows 120.0), " \
        "within the budget: it stands." in stands
    again = price_text.replanned(rows, families, {1000: 1}, got, cells, base, study, 80.0, [1000, 100])
    assert "181.0 trial-hours in all" in again and "over the budget: the stated cut applies again" in again
    assert ("It keeps at 1,000 rows rank 1 only of the 2 that reach it, 1: p; at 100 rows ranks 1, 3, 5, … of the 4 "
            "that reach it, and 1 where cells had run (q), 3: p, q, r. Planned: 77.0 trial-hours in all "
            "(still to run: 10 rows 1.0, 100 rows 24.0, 1,000 rows 40.0): for what is left, on 2 cores, at least 32.5 "
            "hours of wall time.") in again
    kept = price_text.replanned(rows, families, {1000: 1}, got, cells, base, study, 70.0, [1000, 100])
    assert "at 100 rows rank 1 only of the 4 that reach it, and 1 where cells had run (q), 2: p, q" in kept


def test_part_way_a_plan_thinned_only_drops_datasets_never_brings_one_back():
    """With ``thin_from`` (--thin) the steps run over the datasets the plan keeps now: p, dropped by an earlier cut,
    stays out (cutting from every dataset would keep it, rank 1), r goes, q (its cells ran) and s stay."""
    from pipeline.report.stats.price import replan

    rows, families, got, cells, base, study = _part_way()
    now = {1000: ["p", "q"], 100: ["q", "r", "s"]}
    plan = replan(rows, families, {1000: 1}, got, cells, base, study, 80.0, [1000, 100], now)
    assert (plan.every, plan.kept(1000), plan.kept(100), plan.total) == (
        {1000: 2, 100: 2}, ["p"], ["q", "s"], pytest.approx(77.0))
    assert "p" in replan(rows, families, {1000: 1}, got, cells, base, study, 80.0, [1000, 100]).kept(100)
    text = price_text.replanned(rows, families, {1000: 1}, got, cells, base, study, 80.0, [1000, 100], thin=True)
    assert "the stated cut's steps thin the datasets it keeps at 1,000, 100 rows" in text and "every dataset" not in text
