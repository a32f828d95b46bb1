"""The report's aggregates on tiny cases worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import crossover as xo
from pipeline.report.stats import elo

NAN = float("nan")


def matrix(rows: list[list[float]], models: str = "abc") -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(models), index=[f"t{i}" for i in range(len(rows))])


# Three tasks: a clear order, a tie, and one only c finished.
S = matrix([[0.9, 0.8, 0.5], [0.7, 0.7, 0.6], [NAN, NAN, 0.5]])


def test_ranks_ties_share_and_failures_rank_last():
    r = agg.ranks(S)
    assert r.to_numpy().tolist() == [[1, 2, 3], [1.5, 1.5, 3], [2.5, 2.5, 1]]
    assert r.mean().to_dict() == pytest.approx({"a": 5 / 3, "b": 2.0, "c": 7 / 3})


def test_normalized_scores_min_max_failures_zero():
    n = agg.normalized_scores(S)
    # t0: (s − 0.5) / (0.9 − 0.5); t1: best 0.7 = 1, worst 0.6 = 0; t2: one score → 1, failures 0.
    np.testing.assert_allclose(n.to_numpy(), [[1, 0.75, 0], [1, 1, 0], [0, 0, 1]])
    assert n.mean().to_dict() == pytest.approx({"a": 2 / 3, "b": 1.75 / 3, "c": 1 / 3})


def test_normalized_scores_against_a_baseline_model_clip_at_zero():
    n = agg.normalized_scores(S.iloc[:1], baseline="b")
    assert n.iloc[0].tolist() == pytest.approx([1.0, 0.0, 0.0])  # c is below b: (0.5 − 0.8)/0.1 → clipped


def test_win_rates_count_ties_half_and_skip_double_failures():
    wins, n = agg.pairwise_wins(S)
    # a–b: a wins t0, ties t1, neither has t2 → 1.5 of 2. a–c and b–c: 2 of 3 (c wins t2).
    assert wins.loc["a", "b"] == 1.5 and n.loc["a", "b"] == 2
    assert wins.loc["b", "a"] == 0.5
    assert wins.loc["a", "c"] == 2 and wins.loc["c", "a"] == 1 and n.loc["a", "c"] == 3
    rates = agg.win_rates(S)
    assert rates.loc["a", "b"] == 0.75 and rates.loc["b", "c"] == pytest.approx(2 / 3)
    assert math.isnan(rates.loc["a", "a"])
    assert (rates + rates.T).fillna(1).eq(1).all().all()  # each pair's rates add to 1


def test_bradley_terry_three_wins_in_four_is_400_log10_3_points():
    theta = elo.bradley_terry(np.array([[0, 3], [1, 0]]))
    assert elo.ELO_SCALE * (theta[0] - theta[1]) == pytest.approx(400 * math.log10(3), abs=1e-3)  # 190.85
    # A sweep stays finite (TabArena's ridge), far apart: thousands of points, not infinity.
    theta = elo.bradley_terry(np.array([[0, 5], [0, 0]]))
    assert np.isfinite(theta).all() and elo.ELO_SCALE * (theta[0] - theta[1]) > 2000
    assert theta.sum() == pytest.approx(0.0, abs=1e-9)


def test_the_bootstraps_draws_solved_at_once_are_each_draw_solved_alone():
    """The bootstrap solves its draws in one batch (``bradley_terry_many``): each draw steps, halves its
    step and stops on its own, so its strengths are what it gives alone (to 1e-12), on a batch that mixes
    draws of a few steps, sweeps (a model that never lost: its strength rests on the ridge alone) and
    draws of thousands of games, where some steps overshoot and are halved."""
    rng = np.random.default_rng(0)
    scale = rng.choice([1.0, 10.0, 1000.0], size=(300, 1, 1))
    wins = rng.integers(0, 3, size=(300, 6, 6)) * scale * (rng.random((300, 6, 6)) < rng.choice([0.2, 0.5, 0.9]))
    wins[:, np.arange(6), np.arange(6)] = 0
    together = elo.bradley_terry_many(wins)
    alone = np.stack([elo.bradley_terry(w) for w in wins])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-12)
    swept = (wins[:, 1:, 0] == 0).all(axis=1) & (wins[:, 0, 1:] > 0).all(axis=1)  # 0 beat all, never lost
    assert swept.any() and (elo.ELO_SCALE * (together[swept, 0] - together[swept, 1:].max(axis=1)) > 1000).all()


def test_elo_from_scores_and_bootstrap_interval():
    scores = matrix([[0.9, 0.5], [0.9, 0.5], [0.9, 0.5], [0.1, 0.5]], "AB")
    res = elo.elo(scores, n_bootstrap=0)
    e = res.table.set_index("model").elo
    assert e["A"] == pytest.approx(1000 + 200 * math.log10(3), abs=1e-3)  # 1095.42
    assert e["B"] == pytest.approx(1000 - 200 * math.log10(3), abs=1e-3)  # 904.58
    boot = elo.elo(scores, n_bootstrap=100, seed=3).table.set_index("model")
    assert (boot.elo_low <= boot.elo).all() and (boot.elo <= boot.elo_high).all()
    assert boot.equals(elo.elo(scores, n_bootstrap=100, seed=3).table.set_index("model"))  # seeded
    assert boot.elo.mean() == pytest.approx(1000)


def test_elo_of_a_cycle_is_flat():
    cycle = matrix([[0.9, 0.5, 0.1], [0.1, 0.9, 0.5], [0.5, 0.1, 0.9]])  # a>b>c, b>c>a, c>a>b
    e = elo.elo(cycle, n_bootstrap=0).table.elo
    assert e.tolist() == pytest.approx([1000, 1000, 1000], abs=1e-6)


@pytest.mark.parametrize(("k", "q"), [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (6, 2.850)])
def test_nemenyi_q_matches_demsar_table(k, q):
    # Demšar (2006), table 5(a): CD = q_0.05 √(k(k+1)/6N); with N = k(k+1)/6 the root is 1.
    assert agg.nemenyi_cd(k, k * (k + 1) / 6) == pytest.approx(q, abs=1e-3)


def test_critical_difference_friedman_and_cliques():
    scores = matrix([[0.9, 0.8, 0.7]] * 4)
    cd = agg.critical_difference(scores)
    assert cd.avg_ranks.to_dict() == {"a": 1.0, "b": 2.0, "c": 3.0}
    # χ²_F = 12N/(k(k+1)) · (Σ R_j² − k(k+1)²/4) = 12·4/12 · (14 − 12) = 8; p = e^(−8/2) for 2 df.
    assert cd.friedman_stat == pytest.approx(8.0)
    assert cd.friedman_p == pytest.approx(math.exp(-4))
    assert cd.cd == pytest.approx(2.3437 * math.sqrt(12 / 24), abs=1e-3)  # 1.657
    assert cd.cliques == [["a", "b"], ["b", "c"]]  # neighbours 1 apart; a and c 2 apart > CD


def fold_rows(dataset: str, model: str, scores: list[float], sizes=("32", "128", "all"), n=(32, 128, 800),
              spread=(-0.002, 0.0, 0.002)):
    """Three folds per size around each mean, the same offsets for every model unless ``spread`` says
    otherwise: a difference the folds agree on."""
    return [{"dataset": dataset, "model": model, "sample_size": s, "n_train": float(k), "fold": f, "score": v + o}
            for s, k, v in zip(sizes, n, scores) for f, o in enumerate(spread)]


KINDS = {"xgb": "boosting", "ft": "attention", "cat": "attention"}


def test_crossover_sizes():
    """The crossover reads the verdict at each size (the standings view's): ahead for good from some size on,
    never (behind at the largest), or the verdict there where it is neither."""
    from tables import standings_of

    rows = standings_of(
        fold_rows("overtakes", "xgb", [0.80, 0.84, 0.88]) + fold_rows("overtakes", "ft", [0.74, 0.81, 0.90])
        + fold_rows("dips", "xgb", [0.80, 0.84, 0.88]) + fold_rows("dips", "ft", [0.81, 0.83, 0.90])
        + fold_rows("never", "xgb", [0.80, 0.84, 0.88]) + fold_rows("never", "ft", [0.81, 0.85, 0.87])
        + fold_rows("ahead", "xgb", [0.80, 0.84, 0.88]) + fold_rows("ahead", "ft", [0.81, 0.85, 0.89])
        + fold_rows("ahead", "cat", [0.79, 0.80, 0.81])
        + fold_rows("close", "xgb", [0.80, 0.84, 0.88]) + fold_rows("close", "ft", [0.81, 0.85, 0.882])
        # at 800 rows +0.02 on average, but the folds disagree (+0.08, −0.04, +0.02): the folds cannot tell
        + fold_rows("noisy", "xgb", [0.80, 0.84, 0.88]) + fold_rows("noisy", "ft", [0.81, 0.85, 0.90], spread=(
            0.058, -0.062, 0.004)), KINDS)
    lines = pd.concat([xo.model_lines(rows, ["ft", "cat"]), xo.family_line(rows, "attention network", "best attention")])
    out = xo.crossover(lines).set_index(["dataset", "model"])
    assert out.loc[("overtakes", "ft"), ["verdict", "crossover_n", "behind_at", "before"]].tolist() == [
        "crossover", 800, 128, "behind"]
    assert out.loc[("dips", "ft"), ["crossover_n", "behind_at"]].tolist() == [800, 128]  # must stay ahead
    never = out.loc[("never", "ft")]
    assert never.verdict == "never" and pd.isna(never.crossover_n) and never.behind_at == 800
    ahead = out.loc[("ahead", "ft")]
    assert ahead.crossover_n == 32 and ahead.ahead_everywhere and pd.isna(ahead.behind_at)
    assert pd.isna(out.loc[("ahead", "cat"), "crossover_n"])
    assert out.loc[("ahead", "best attention"), "crossover_n"] == 32  # ft, the better on validation, at each size
    # one challenger there: the best is that one (a family's row is on every dataset any of it ran)
    assert out.loc[("overtakes", "best attention"), ["crossover_n", "challenger_at"]].tolist() == [800, "ft"]
    # The models at the size the verdict rests on, and the verdict there.
    assert out.loc[("overtakes", "ft"), ["at_size", "challenger_at", "incumbent_at"]].tolist() == ["all", "ft", "xgb"]
    assert out.loc[("overtakes", "ft"), "decision"].verdict == "ahead"
    assert out.loc[("never", "ft"), "at_size"] == "all"
    assert out.loc[("ahead", "best attention"), ["at_size", "challenger_at"]].tolist() == ["32", "ft"]
    # +0.002 at 800 rows with folds that agree: equivalent there, neither ahead nor behind; +0.02 on folds that
    # disagree: undetermined, never "level"
    assert out.loc[("close", "ft"), "verdict"] == "equivalent" and pd.isna(out.loc[("close", "ft"), "behind_at"])
    assert out.loc[("noisy", "ft"), "verdict"] == "undetermined"
    assert "level" not in set(out.verdict)


def test_curve_intervals_are_t_intervals_within_a_dataset():
    curves = pd.DataFrame({"score_mean": [0.8, 0.7, 0.6, 0.98, 0.1], "score_std": [0.1, 0.2, NAN, 0.02, 0.2],
                           "n_ok": [4, 2, 1, 3, 3], "metric": ["accuracy"] * 4 + ["r2"]})
    out = xo.curve_intervals(curves)
    assert out.score_high[3] == 1.0 and out.score_low[3] < 0.98  # accuracy never drawn above 1
    assert out.score_low[4] < 0 < out.score_high[4] < 1  # R² may be negative
    # t(0.975, 3) = 3.182: 0.8 ± 3.182 · 0.1 / 2; t(0.975, 1) = 12.706: 0.7 ± 12.706 · 0.2 / √2 = ± 1.80
    assert out.score_low[0] == pytest.approx(0.8 - 3.1824 * 0.05, abs=1e-4)
    assert out.score_low[1] == 0.0  # 0.7 − 1.80 clipped at 0
    assert out.score_high[1] == 1.0  # 0.7 + 1.80 clipped
    assert math.isnan(out.score_low[2]) and math.isnan(out.score_high[2])  # one split: no interval


def test_normalized_by_size_keeps_all_a_label_and_counts_failures_as_zero():
    rows = []
    for size in ("32", "all"):
        for ds, scores in (("d1", {"a": 0.9, "b": 0.7}), ("d2", {"a": 0.6, "b": None})):
            for m, v in scores.items():
                rows.append({"split_key": "k", "dataset": ds, "sample_size": size, "model": m, "repeat": 0, "fold": 0,
                             "seed": 0, "status": "ok" if v is not None else "error", "score": v})
    out = agg.normalized_by_size(pd.DataFrame(rows), ["32", "all"]).set_index(["sample_size", "model"])
    assert list(out.index.get_level_values(0).unique()) == ["32", "all"]  # no number of rows for 'all'
    assert out.loc[("all", "a"), "normalized_score"] == 1.0
    assert out.loc[("all", "b"), "normalized_score"] == 0.0  # worst on d1, failed on d2
    assert out.loc[("32", "b"), ["n_scored", "n_tasks"]].tolist() == [1, 2]


def test_improvability_is_the_error_gap_as_a_share_of_own_error():
    s = matrix([[0.9, 0.8, 1.0], [0.5, 0.75, NAN]])
    imp = agg.improvability(s)
    # t0: best error 0 → a (0.1 − 0)/0.1 = 1, b 1, c 0; t1: best error 0.25 → a (0.5 − 0.25)/0.5, b 0, c failed 1
    assert imp.to_dict() == pytest.approx({"a": 0.75, "b": 0.5, "c": 0.5})


def test_wilson_interval():
    low, high = agg.wilson(8, 10)
    assert (low, high) == pytest.approx((0.4902, 0.9433), abs=1e-4)  # the textbook 8/10 case
    low, high = agg.wilson(0, 4)
    assert low == 0.0 and high == pytest.approx(0.4899, abs=1e-4)
    assert all(math.isnan(v) for v in agg.wilson(0, 0))


def test_task_scores_and_coverage():
    cells = pd.DataFrame([
        # dataset, split key, size, repeat, fold, seed, model, status, score
        ("s", "T1", "all", 0, 0, 0, "m1", "ok", 0.8), ("s", "T1", "all", 0, 1, 0, "m1", "ok", 0.6),
        ("s", "T2", "all", 0, 0, 0, "m1", "ok", 0.5), ("s", "T2", "all", 0, 1, 0, "m1", "error", None),
        ("s", "T1", "all", 0, 0, 0, "m2", "error", None), ("s", "T1", "all", 0, 1, 0, "m2", "timeout", None),
        ("s", "T2", "all", 0, 0, 0, "m2", "missing", None), ("s", "T2", "all", 0, 1, 0, "m2", "missing", None),
    ], columns=[*agg.SPLIT, "model", "status", "score"])
    s = agg.task_scores(cells)
    assert s.m1.tolist() == pytest.approx([0.7, 0.5]) and s.m2.isna().all()
    cov = agg.coverage(cells).set_index("model")
    assert cov.loc["m1"].to_dict() == {"cells": 4, "cells_ok": 3, "cells_failed": 1, "cells_missing": 0, "tasks": 2,
                                       "tasks_ok": 1, "tasks_partial": 1, "tasks_unfinished": 0, "tasks_failed": 0,
                                       "tasks_missing": 0, "tasks_total": 2}
    # m2 ran T1 (and failed it); on T2 nothing is recorded yet: not run, counted apart, not a task it ran.
    assert cov.loc["m2"].to_dict() == {"cells": 4, "cells_ok": 0, "cells_failed": 2, "cells_missing": 2, "tasks": 1,
                                       "tasks_ok": 0, "tasks_partial": 0, "tasks_unfinished": 0, "tasks_failed": 1,
                                       "tasks_missing": 1, "tasks_total": 2}
    assert agg.task_ran(cells).to_dict("list") == {"m1": [True, True], "m2": [True, False]}


def test_a_study_in_chunks_scores_a_model_only_on_the_tasks_it_has_run():
    """A model planned on 3 tasks whose cells on 2 of them have not run yet: its normalised score, rank,
    improvability and record rest on the 1 task it ran (it was best there), not on 0s for the other 2;
    a model that ran a task and failed every cell still loses it."""
    rows = []
    for task, a, b, c in [("T1", 0.9, 0.8, "error"), ("T2", "missing", 0.7, 0.6), ("T3", "missing", 0.5, 0.4)]:
        for model, v in (("a", a), ("b", b), ("c", c)):
            status = v if isinstance(v, str) else "ok"
            rows.append(("s", task, "10000", 0, 0, 0, model, status, None if isinstance(v, str) else v))
    cells = pd.DataFrame(rows, columns=[*agg.SPLIT, "model", "status", "score"])
    scores, ran = agg.task_scores(cells), agg.task_ran(cells)
    norm = agg.normalized_scores(scores, ran=ran)
    assert norm.mean().to_dict() == pytest.approx({"a": 1.0, "b": 2 / 3, "c": 0.0})
    assert agg.ranks(scores, ran).mean().to_dict() == pytest.approx({"a": 1.0, "b": 4 / 3, "c": 7 / 3})
    assert agg.improvability(scores, ran)["a"] == 0.0
    rec = agg.pairwise_record(scores, ran)
    assert rec.text("a", "b") == "won 1, tied 0, lost 0 of 1 task"
    assert rec.text("b", "c") == "won 3, tied 0, lost 0 of 3 tasks"
    by_size = agg.normalized_by_size(cells, ["10000"]).set_index("model")
    assert by_size.loc["a", ["n_ran", "n_tasks"]].tolist() == [1, 3]


def test_tuning_summary_mean_and_band_over_orders():
    rows = []
    # (shuffle, cell, n_trials, best_val_norm, cum_seconds)
    for sh, c, n, v, sec in [(0, "c1", 1, 0.2, 1), (0, "c1", 2, 0.6, 3), (0, "c2", 1, 0.4, 2), (0, "c2", 2, 0.8, 4),
                             (1, "c1", 1, 0.2, 1), (1, "c1", 2, 0.5, 2), (1, "c2", 1, 0.4, 2), (1, "c2", 2, 0.4, 5)]:
        rows.append({"sample_size": "all", "model": "m", "shuffle": sh, "cell_id": c, "n_trials": n,
                     "best_val_norm": v, "best_test_norm": v / 2, "cum_seconds": float(sec)})
    out = agg.tuning_summary(pd.DataFrame(rows), level=0.8).set_index("n_trials")
    # Per order, means over cells: order 0 → 0.3, 0.7; order 1 → 0.3, 0.45.
    assert out.score.tolist() == pytest.approx([0.3, 0.575])
    assert out.loc[2, "score_low"] == pytest.approx(0.45 + 0.1 * 0.25)  # 10% quantile of {0.45, 0.7}
    assert out.loc[2, "score_high"] == pytest.approx(0.45 + 0.9 * 0.25)
    assert out.seconds.tolist() == pytest.approx([1.5, 3.5]) and out.n_cells.tolist() == [2, 2]
    assert out.test.tolist() == pytest.approx([0.15, 0.2875]) and out.loc[2, "test_low"] == pytest.approx(0.2375)


def test_pareto_front_and_size_order():
    front = agg.pareto_front(pd.Series([1.0, 2, 3, 4]), pd.Series([0.5, 0.7, 0.6, 0.9]))
    assert front.tolist() == [True, True, False, True]
    assert agg.size_order(["all", "128", "32", "1024"]) == ["32", "128", "1024", "all"]


def test_uniformity_tells_a_flat_map_from_a_focused_one():
    k = 31
    flat = np.full((k, k), 1 / k) + np.random.default_rng(0).uniform(-0.0002, 0.0002, (k, k))
    u = agg.uniformity(flat)
    assert u.uniform and u.tv < 0.01 and 0.99 < u.ratio_low < 1 < u.ratio_high < 1.01
    focused = np.full((4, 4), 0.5 / 3)
    focused[:, 0] = 0.5  # every row gives half its attention to feature 0
    f = agg.uniformity(focused)
    assert not f.uniform and f.tv == pytest.approx(0.25) and f.ratio_high == pytest.approx(2.0)
    assert agg.uniform_ratio(focused)[:, 0] == pytest.approx([2.0] * 4)
    # A row that keeps part of its attention for a [CLS] token is rescaled before comparing.
    assert agg.uniformity(flat * 0.8).tv == pytest.approx(u.tv)


def test_a_number_that_rounds_to_zero_has_no_minus_sign():
    from pipeline.report.markup import num

    assert num(-0.00001, "+.4f") == "+0.0000" and num(-0.0, ".3f") == "0.000"
    assert num(-0.00051, "+.3f") == "-0.001" and num(-2e-7, ".2e") == "-2.00e-07"
    assert num(0.25, "+.2f") == "+0.25" and num(None) == "—"


# ------------------------------------------------------------------- not run is not a loss
# Two tasks: on t0 every model ran; on t1 c was never planned (not run) and b ran without a score.
NR = matrix([[0.9, 0.8, 0.95], [0.7, NAN, NAN]])
RAN = pd.DataFrame([[True, True, True], [True, True, False]], index=NR.index, columns=NR.columns)


def test_a_model_not_run_on_a_task_is_left_out_of_it_not_scored_zero():
    r = agg.ranks(NR, RAN)
    assert r.loc["t0"].tolist() == [2, 3, 1]
    assert r.loc["t1", "a"] == 1 and r.loc["t1", "b"] == 2 and math.isnan(r.loc["t1", "c"])
    assert r.mean().to_dict() == pytest.approx({"a": 1.5, "b": 2.5, "c": 1.0})
    n = agg.normalized_scores(NR, ran=RAN)
    # t0: (s − 0.8) / 0.15; t1: a alone has a score (1), b ran and failed (0), c did not run (NaN).
    assert n.loc["t0"].tolist() == pytest.approx([2 / 3, 0.0, 1.0])
    assert n.loc["t1", "a"] == 1 and n.loc["t1", "b"] == 0 and math.isnan(n.loc["t1", "c"])
    assert n.mean()["c"] == 1.0  # over the one task it ran
    imp = agg.improvability(NR, RAN)
    assert imp["c"] == 0.0 and imp["b"] == pytest.approx((0.75 + 1.0) / 2)
    # Without the mask, the old reading: c failed t1 and loses it.
    assert agg.normalized_scores(NR).mean()["c"] == 0.5


def test_pairwise_records_count_only_the_tasks_both_ran_as_won_tied_lost():
    scores = matrix([[0.9, 0.9, 0.8], [0.7, 0.6, NAN], [0.5, 0.6, 0.4]])
    ran = pd.DataFrame([[True] * 3, [True, True, False], [True] * 3], index=scores.index, columns=scores.columns)
    rec = agg.pairwise_record(scores, ran)
    assert (rec.won.loc["a", "b"], rec.tied.loc["a", "b"], rec.lost.loc["a", "b"]) == (1, 1, 1)
    assert rec.text("a", "b") == "won 1, tied 1, lost 1 of 3 tasks"
    assert rec.text("a", "c") == "won 2, tied 0, lost 0 of 2 tasks"  # t1: c never ran it
    wins, n = agg.pairwise_wins(scores, ran)
    assert wins.loc["a", "b"] == 1.5 and n.loc["a", "b"] == 3 and n.loc["b", "c"] == 2
    # A tie is never a win: two tied tasks give 0 won.
    tied = agg.pairwise_record(matrix([[0.8, 0.8], [0.6, 0.6]], "xy"))
    assert tied.text("x", "y") == "won 0, tied 2, lost 0 of 2 tasks"


def test_elo_plays_only_the_games_of_tasks_both_ran():
    scores = matrix([[0.9, 0.8, 0.95], [0.9, 0.8, NAN], [0.9, 0.8, NAN]])
    ran = pd.DataFrame([[True] * 3, [True, True, False], [True, True, False]], index=scores.index,
                       columns=scores.columns)
    with_mask = elo.elo(scores, n_bootstrap=0, ran=ran).table.set_index("model")
    assert with_mask.n_tasks.to_dict() == {"a": 3, "b": 3, "c": 1}
    # c won its one game against each: ahead of both; without the mask it would lose two more to each.
    assert with_mask.elo["c"] > with_mask.elo["a"] > with_mask.elo["b"]
    without = elo.elo(scores, n_bootstrap=0).table.set_index("model")
    assert without.elo["c"] < without.elo["a"]


def test_critical_difference_rests_on_the_tasks_every_model_ran():
    scores = matrix([[0.9, 0.8, 0.7], [0.9, 0.8, 0.7], [0.5, 0.6, NAN]])
    ran = pd.DataFrame([[True] * 3, [True] * 3, [True, True, False]], index=scores.index, columns=scores.columns)
    assert agg.critical_difference(scores, ran=ran).n_tasks == 2
    assert agg.common_tasks(ran).tolist() == ["t0", "t1"]


def test_coverage_says_how_many_tasks_a_model_ran():
    cells = pd.DataFrame([
        ("bc", "k", "all", 0, 0, 0, "xgb", "ok", 0.9), ("wine", "k", "all", 0, 0, 0, "xgb", "ok", 0.95),
        ("bc", "k", "all", 0, 0, 0, "mlp", "ok", 0.93),
    ], columns=[*agg.SPLIT, "model", "status", "score"])
    cov = agg.coverage(cells).set_index("model")
    assert cov.loc["mlp", ["tasks", "tasks_ok", "tasks_missing", "tasks_total"]].tolist() == [1, 1, 0, 2]
    assert cov.loc["mlp", "cells_missing"] == 0  # not planned on wine: not missing
    assert agg.ran_text(1, 2) == "ran 1 of 2 tasks" and agg.ran_text(2, 2) == "all 2 tasks"
    ran = agg.task_ran(cells)
    assert ran.loc[("wine", "k", "all")].to_dict() == {"mlp": False, "xgb": True}


def crossover_of(rows: list[dict], kinds: dict[str, str] = KINDS, folds: int = 3) -> pd.Series:
    from tables import standings_of

    return xo.crossover(xo.model_lines(standings_of(rows, kinds, folds), ["ft"])).iloc[0]


def test_crossover_needs_two_sizes_and_says_the_verdict_at_the_largest():
    from pipeline.report.stats.answer import crossover_text

    one = crossover_of(fold_rows("d", "xgb", [0.8], sizes=("all",), n=(364,))
                       + fold_rows("d", "ft", [0.81], sizes=("all",), n=(364,)))
    assert one.verdict == "one size" and pd.isna(one.crossover_n) and not one.ahead_everywhere
    # equal at the largest size, on folds that agree: equivalent, neither ahead nor behind
    tie = crossover_of(fold_rows("d", "xgb", [0.80, 0.84, 0.88]) + fold_rows("d", "ft", [0.75, 0.82, 0.88]))
    assert tie.verdict == "equivalent" and pd.isna(tie.behind_at) and tie.at_size == "all"
    # 0.004 behind, the folds agreeing: within the margin, equivalent; 0.006 behind: past it, and the folds agree
    near = crossover_of(fold_rows("d", "xgb", [0.80, 0.84, 0.88]) + fold_rows("d", "ft", [0.75, 0.82, 0.876]))
    assert near.verdict == "equivalent"
    past = crossover_of(fold_rows("d", "xgb", [0.80, 0.84, 0.88]) + fold_rows("d", "ft", [0.75, 0.82, 0.874]))
    assert past.verdict == "never" and past.decision.verdict == "behind"
    # 0.006 behind on average, the folds disagreeing: the folds cannot tell, undetermined (never "level")
    noisy = crossover_of(fold_rows("d", "xgb", [0.80, 0.84, 0.88])
                         + fold_rows("d", "ft", [0.75, 0.82], sizes=("32", "128"), n=(32, 128))
                         + fold_rows("d", "ft", [0.874], sizes=("all",), n=(800,), spread=(-0.03, 0.03, 0.0)))
    assert noisy.verdict == "undetermined"
    equal_before = crossover_of(fold_rows("d", "xgb", [0.80, 0.84, 0.88]) + fold_rows("d", "ft", [0.75, 0.84, 0.90]))
    assert (equal_before.verdict, equal_before.crossover_n, equal_before.before, equal_before.n_splits) == (
        "crossover", 800, "equivalent", 3)
    assert crossover_text(one) == "not measured: one training size (364 rows)"
    assert crossover_text(tie) == "equivalent at 800 rows, the largest size"
    assert crossover_text(noisy) == "undetermined at 800 rows, the largest size"
    assert crossover_text(equal_before) == "800 rows (equivalent at 128)"
    # One fold: no interval, so every size is undetermined, and the text says it rests on one fold
    single = crossover_of(fold_rows("d", "xgb", [0.80, 0.84, 0.88], spread=(0.0,))
                          + fold_rows("d", "ft", [0.75, 0.84, 0.90], spread=(0.0,)))
    assert single.verdict == "undetermined" and single.n_splits == 1 and single.decision.lean == "ahead"
    assert crossover_text(single) == "undetermined (one fold) at 800 rows, the largest size"


def test_behind_at_the_largest_size_while_still_improving_is_not_converged_not_never():
    """Behind at the largest size while the challenger was still improving when its budget ran out
    (epochs_bound) is not converged; one that stopped on its own is behind there: never."""
    from pipeline.report.stats.answer import crossover_text

    rows = fold_rows("d", "xgb", [0.80, 0.84, 0.88]) + fold_rows("d", "ft", [0.81, 0.83, 0.85])
    for r in rows:
        r["epochs_bound"] = r["model"] == "ft" and r["sample_size"] == "all"
    bound = crossover_of(rows)
    assert bound.verdict == "not converged" and bound.bound and bound.behind_at == 800
    assert crossover_text(bound) == "not converged (behind at 800 rows, still improving ⚑)"
    for r in rows:
        r["epochs_bound"] = False
    settled = crossover_of(rows)
    assert settled.verdict == "never" and not settled.bound
    assert crossover_text(settled) == "never (behind at 800 rows)"


def test_a_size_planned_but_not_run_yet_is_no_point_of_the_curve():
    """A study run in chunks: its smaller sizes are planned but have no score yet; the crossover reads the
    sizes that ran."""
    rows = [r for r in fold_rows("d", "xgb", [0.80, 0.84, 0.88]) + fold_rows("d", "ft", [0.75, 0.82, 0.90])
            if not (r["sample_size"] == "32" and r["model"] == "ft")]
    r = crossover_of(rows)
    assert r.verdict == "crossover" and r.crossover_n == 800 and r.n_sizes == 2


def test_the_answer_at_a_size_says_how_many_of_its_tasks_have_run_yet():
    """A study in chunks: at 10,000 rows 3 tasks are planned and only T1 has run. The sentence says so, and
    the leader's mean rests on T1 (it is 1.00 there, not 0.33 from two 0s)."""
    from pipeline.report.stats.answer import size_answer, summary_sentences

    rows = []
    for task, status in (("T1", "ok"), ("T2", "missing"), ("T3", "missing")):
        for model, score in (("ft", 0.9), ("xgb", 0.8)):
            rows.append(("s", task, "10000", 0, 0, 0, model, status, score if status == "ok" else None))
    cells = pd.DataFrame(rows, columns=[*agg.SPLIT, "model", "status", "score"]).assign(
        train_s_per_1k=1.0, predict_s_per_1k=0.1, epochs_bound=False, search_bound=False)
    cells["val_score"] = cells.score
    a = size_answer("10000", cells, {"ft": "attention", "xgb": "boosting"})
    assert (a.n_tasks, a.n_run) == (3, 1)
    assert a.leaders["attention network"].normalized_score == 1.0
    text = summary_sentences([a], pd.DataFrame(columns=["family"]), {"datasets": 3, "sizes": 1, "splits": 1, "cells": 6, "cells_ok": 2})
    assert any("At 10,000 training rows (3 tasks planned, 1 run so far), attention network leads" in t for t in text), text


def test_a_model_with_nothing_run_yet_has_no_elo_and_does_not_empty_the_critical_difference():
    rows = []
    for task, (a, b) in zip(("T1", "T2", "T3"), ((0.9, 0.8), (0.7, 0.75), (0.6, 0.5))):
        rows += [("s", task, "10000", 0, 0, 0, "a", "ok", a), ("s", task, "10000", 0, 0, 0, "b", "ok", b),
                 ("s", task, "10000", 0, 0, 0, "c", "missing", None)]
    cells = pd.DataFrame(rows, columns=[*agg.SPLIT, "model", "status", "score"])
    scores, ran = agg.task_scores(cells), agg.task_ran(cells)
    table = elo.elo(scores, n_bootstrap=20, ran=ran).table.set_index("model")
    assert table.loc["c", ["elo", "elo_low", "elo_high"]].isna().all() and table.loc["c", "n_tasks"] == 0
    assert table.loc["a", "elo"] > 1000 > table.loc["b", "elo"]  # a won 2 of 3: the two rated models centre on 1000
    assert table.loc["a", "elo"] + table.loc["b", "elo"] == pytest.approx(2000)
    cd = agg.critical_difference(scores, ran=ran)
    assert cd.n_tasks == 3 and sorted(cd.avg_ranks.index) == ["a", "b"]


def test_the_budget_bound_count_is_out_of_the_cells_that_finished_not_those_not_run_yet():
    """A study in chunks: 1 of ft's 3 planned cells at this size has finished, and it kept its last epoch.
    The sentence says 1 of 1, not 1 of 3 (two cells not run yet are not cells that converged)."""
    from pipeline.report.stats.answer import size_answer, summary_sentences

    rows = [("s", task, "10000", 0, 0, 0, model, status, score if status == "ok" else None)
            for task, status in (("T1", "ok"), ("T2", "missing"), ("T3", "missing"))
            for model, score in (("ft", 0.9), ("xgb", 0.8))]
    cells = pd.DataFrame(rows, columns=[*agg.SPLIT, "model", "status", "score"]).assign(
        train_s_per_1k=1.0, predict_s_per_1k=0.1, search_bound=False)
    cells["val_score"], cells["epochs_bound"] = cells.score, (cells.model == "ft") & (cells.status == "ok")
    a = size_answer("10000", cells, {"ft": "attention", "xgb": "boosting"})
    text = " ".join(summary_sentences([a], pd.DataFrame(columns=["family"]), {"datasets": 3, "sizes": 1, "splits": 1,
                                                                               "cells": 6, "cells_ok": 2}))
    assert "ft kept its last epoch or round in 1 of 1 cells" in text, text


def test_the_answer_counts_each_familys_verdicts_per_dataset():
    """The overview's counts: each family's best on each dataset against boosting's best there, by the
    standings view's verdict: 0.900 against 0.897 on folds that agree is equivalent, not a win; 0.91 ahead;
    the same 0.91 on folds that disagree is undetermined."""
    from tables import standings_of

    from pipeline.report.stats.answer import size_answer

    exact = agg.pairwise_record(pd.DataFrame({"a": [0.900, 0.910, np.nan], "b": [0.897, 0.897, 0.8]}))
    assert (exact.won.loc["a", "b"], exact.tied.loc["a", "b"], exact.lost.loc["a", "b"]) == (2, 0, 1)
    folds = [{"dataset": task, "sample_size": "10000", "n_train": 10000.0, "fold": f, "model": model,
              "score": score + (spread[f] if model == "ft" else 0.0)}
             for task, (ft, xgb), spread in (("T1", (0.900, 0.897), (0, 0, 0)), ("T2", (0.91, 0.897), (0, 0, 0)),
                                             ("T3", (0.91, 0.897), (0.05, -0.05, 0)))
             for model, score in (("ft", ft), ("xgb", xgb)) for f in range(3)]
    rows = standings_of(folds, {"ft": "attention", "xgb": "boosting"})
    cells = pd.DataFrame([("s", r["dataset"], "10000", 0, r["fold"], 0, r["model"], "ok", r["score"]) for r in folds],
                         columns=[*agg.SPLIT, "model", "status", "score"]).assign(
        train_s_per_1k=1.0, predict_s_per_1k=0.1, epochs_bound=False, search_bound=False)
    cells["val_score"] = cells.score
    t = size_answer("10000", cells, {"ft": "attention", "xgb": "boosting"}, rows).vs_boosting["attention network"]
    assert (t["ahead"], t["equivalent"], t["behind"], t["undetermined"], t.n) == (1, 1, 0, 1, 3)
    assert t.short() == "1–1–0–1"
