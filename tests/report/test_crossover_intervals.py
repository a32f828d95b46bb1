"""Crossovers with intervals (issue 36): the crossover size's bootstrap interval over folds, and learning
curves that fall as the training set grows."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from pipeline.report.stats import crossover as xo

SIZES = {"256": 256, "1024": 1024, "4096": 4096}


def cells(scores: dict[tuple[str, str, int], float], dataset: str = "d") -> pd.DataFrame:
    """Cells from {(model, size, fold): score}, one subset seed each."""
    return pd.DataFrame([{"dataset": dataset, "split_key": "k", "sample_size": size, "n_train": SIZES[size],
                          "repeat": 0, "fold": fold, "seed": 0, "model": model, "status": "ok", "score": v,
                          "val_score": v} for (model, size, fold), v in scores.items()])


def test_a_clear_crossover_has_a_tight_interval_and_a_noisy_one_spans_never():
    clear, noisy = {}, {}
    rng = np.random.default_rng(0)
    for fold in range(5):
        for size, ft, xgb in (("256", 0.70, 0.80), ("1024", 0.78, 0.82), ("4096", 0.90, 0.84)):
            clear[("ft", size, fold)], clear[("xgb", size, fold)] = ft + rng.normal(0, 0.002), xgb
            # At 4,096 rows FT-Transformer is ahead on average (0.851 vs 0.84, past the 0.005 margin) but behind
            # on two folds of five: a resample with three or more of those is not ahead (p about 0.32).
            noisy[("ft", size, fold)] = (0.80 if fold < 2 else 0.885) if size == "4096" else ft
            noisy[("xgb", size, fold)] = xgb
    both = pd.concat([cells(clear, "clear"), cells(noisy, "noisy")], ignore_index=True)
    out = xo.crossover_intervals(both, {"ft": ["ft"]}, ["xgb"]).set_index("dataset")
    assert out.loc["clear", ["cross_low", "cross_high", "p_never"]].tolist() == [4096, 4096, 0.0]
    assert out.loc["clear", "n_folds"] == 5
    # Resamples with both bad folds twice put FT-Transformer behind at 4,096 rows: never, in some of them.
    noisy_row = out.loc["noisy"]
    assert noisy_row.cross_low == 4096 and np.isinf(noisy_row.cross_high) and 0.02 < noisy_row.p_never < 0.5
    assert xo.interval_text(noisy_row.cross_low, noisy_row.cross_high, 4096) == "[4,096, never up to 4,096 rows]"
    assert xo.interval_text(4096.0, 4096.0, 4096) == "[4,096]"
    # The verdicts on the same cells: the clear crossover is ahead at 4,096 rows by the corrected interval over
    # its five folds; the noisy one's folds disagree there, so its verdict is undetermined, not a crossover,
    # while the interval says where the mean curves cross in resamples.
    from tables import standings_of

    rows = standings_of(both[["dataset", "sample_size", "n_train", "model", "fold", "score"]].to_dict("records"),
                        {"ft": "attention", "xgb": "boosting"}, folds=5)
    point = xo.crossover(xo.model_lines(rows, ["ft"])).set_index("dataset")
    assert point.loc["clear", ["verdict", "crossover_n"]].tolist() == ["crossover", 4096]
    assert point.loc["noisy", "verdict"] == "undetermined" and pd.isna(point.loc["noisy", "crossover_n"])


def test_a_failed_cell_is_not_a_loss_in_any_resample():
    """Ahead on every fold, one fold's cell at the largest size failed: a resample that drew only that fold
    has no score there; it is drawn again, not counted as 'never'. Adding a dataset moves no other's interval."""
    scores = {(m, s, f): v for f in range(3) for m, s, v in
              (("ft", "256", 0.9), ("xgb", "256", 0.8), ("ft", "1024", 0.95), ("xgb", "1024", 0.85))}
    failed = cells(scores, "d")
    failed.loc[(failed.model == "ft") & (failed.sample_size == "1024") & (failed.fold == 0), "status"] = "error"
    out = xo.crossover_intervals(failed, {"ft": ["ft"]}, ["xgb"]).iloc[0]
    assert (out.cross_low, out.cross_high, out.p_never, out.n_boot, out.largest_n) == (256, 256, 0.0, xo.N_BOOT, 1024)
    noisy = {**scores, ("ft", "1024", 0): 0.70}  # behind on one fold of three: 'never' in some resamples
    alone = xo.crossover_intervals(cells(noisy, "e"), {"ft": ["ft"]}, ["xgb"])
    beside = xo.crossover_intervals(pd.concat([cells(noisy, "e"), failed]), {"ft": ["ft"]}, ["xgb"])
    assert 0 < alone.p_never.iloc[0] < 1
    assert alone.iloc[0].to_dict() == beside.set_index("dataset").loc["e"].to_dict() | {"dataset": "e"}


def test_one_fold_has_no_interval_and_a_best_row_takes_the_best_member():
    one = {(m, s, 0): v for m, s, v in (("ft", "256", 0.7), ("xgb", "256", 0.8), ("ft", "1024", 0.9), ("xgb", "1024", 0.8))}
    out = xo.crossover_intervals(cells(one), {"ft": ["ft"]}, ["xgb"])
    assert out.n_folds.tolist() == [1] and np.isnan(out.cross_low.iloc[0])
    assert xo.interval_text(float("nan"), float("nan"), 1024) == "one fold: no interval"
    two = {**one, **{(m, s, 1): v for (m, s, _), v in one.items()}, ("tt", "256", 0): 0.85, ("tt", "256", 1): 0.85,
           ("tt", "1024", 0): 0.5, ("tt", "1024", 1): 0.5}
    best = xo.crossover_intervals(cells(two), {"best attention": ["ft", "tt"]}, ["xgb"]).iloc[0]
    # ahead at 256 rows through tt (0.85 > 0.8) and at 1,024 through ft: ahead everywhere, from 256
    assert (best.cross_low, best.cross_high, best.p_never) == (256, 256, 0.0)


def test_a_curve_that_falls_clearly_is_flagged_and_noise_is_not():
    rows = []
    for model, means in (("falls", (0.80, 0.70, 0.85)), ("noisy", (0.80, 0.79, 0.85))):
        for (size, n), mean in zip(SIZES.items(), means):
            rows.append({"dataset": "d", "split_key": "k", "model": model, "sample_size": size, "n_train": n,
                         "score_mean": mean, "score_std": 0.01, "n_ok": 5, "metric": "accuracy"})
    rows.append({"dataset": "d", "split_key": "k", "model": "one", "sample_size": "256", "n_train": 256,
                 "score_mean": 0.9, "score_std": np.nan, "n_ok": 1, "metric": "accuracy"})
    rows.append({"dataset": "d", "split_key": "k", "model": "one", "sample_size": "1024", "n_train": 1024,
                 "score_mean": 0.5, "score_std": np.nan, "n_ok": 1, "metric": "accuracy"})
    flagged = xo.ill_behaved(xo.curve_intervals(pd.DataFrame(rows)))
    assert flagged.model.tolist() == ["falls"]  # one split has no interval: not flagged, whatever its drop
    assert flagged.iloc[0][["at_n", "from_n"]].tolist() == [1024, 256] and abs(flagged.iloc[0]["drop"] - 0.10) < 1e-9



def test_a_study_s_ill_behaved_points_name_the_largest_drops_and_count_the_rest():
    from pipeline.report.pages.sample_size import FALLS_SHOWN, falls_note

    falls = pd.DataFrame([{"dataset": f"d{i}", "split_key": "k", "model": "m", "at_n": 1024, "from_n": 256,
                           "drop": 0.001 * (i + 1)} for i in range(FALLS_SHOWN + 5)])
    said = falls_note(falls, lambda d, _: d)
    assert said.startswith(f"{FALLS_SHOWN + 5} curve points") and said.endswith("; and 5 more, none larger.")
    assert said.count(" lower at ") == FALLS_SHOWN and f"d{FALLS_SHOWN + 4} m: 0.015" in said and "d4 m:" not in said
    assert falls_note(falls.head(2), lambda d, _: d).count(" lower at ") == 2


def test_coverage_greys_a_size_not_run_yet_and_reds_only_a_size_whose_cells_failed():
    """A study in chunks has sizes no cell of which has run yet: that is not a failure (it was red)."""
    from pipeline.report.pages.sample_size import curve_coverage

    curves = pd.DataFrame([
        {"model": "m", "sample_size": "128", "n_ok": 0, "n_cells": 3, "n_failed": 0, "n_missing": 3},
        {"model": "m", "sample_size": "256", "n_ok": 0, "n_cells": 3, "n_failed": 3, "n_missing": 0},
        {"model": "m", "sample_size": "1024", "n_ok": 1, "n_cells": 3, "n_failed": 0, "n_missing": 2},
        {"model": "m", "sample_size": "4096", "n_ok": 3, "n_cells": 3, "n_failed": 0, "n_missing": 0}])
    html = curve_coverage(curves, ["128", "256", "1024", "4096"])
    cells = re.findall(r'<td class="([\w ]*)"[^>]*>(\d+/\d+)</td>', html)
    assert cells == [("notrun num", "0/3"), ("missing num", "0/3"), ("partial num", "1/3"), ("num", "3/3")], cells
    assert "0 failed, 3 not run yet" in html


def test_many_datasets_share_one_grid_of_panels_and_one_legend():
    from pipeline.report import curve_figures as curve_figs
    from pipeline.report import figures as figs

    panels = []
    for d in range(8):
        rows = [{"dataset": f"d{d}", "split_key": "k", "model": m, "sample_size": s, "n_train": n,
                 "score_mean": 0.7 + 0.01 * i, "score_low": np.nan, "score_high": np.nan}
                for i, (s, n) in enumerate(SIZES.items()) for m in ("ft", "xgb")]
        panels.append((f"d{d}", pd.DataFrame(rows), "accuracy"))
    fig = curve_figs.learning_curve_grid(panels, figs.Style(["ft", "xgb"], {"ft": "attention network", "xgb": "gradient boosting"}))
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:8] == [f"d{d} · accuracy" for d in range(8)]
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(lines) == 16 and sorted(t.name for t in lines if t.showlegend) == ["ft", "xgb"]  # one entry each
    assert fig.layout.xaxis8.type == "log" and list(fig.layout.xaxis8.tickvals) == [256, 1024, 4096]


def test_each_panel_of_the_grid_has_its_traces_and_a_reference_line_only_where_a_model_scored():
    """Every panel's traces sit on its own axes, and the dotted reference line is drawn on a panel whose data
    reaches near it, on that panel's axes, and not on a panel where no model has a score (as add_vline leaves an
    empty panel)."""
    from pipeline.report import curve_figures as curve_figs
    from pipeline.report import figures as figs

    def panel(name: str, score: float) -> tuple[str, pd.DataFrame, str]:
        rows = [{"dataset": name, "split_key": "k", "model": m, "sample_size": s, "n_train": n, "score_mean": score,
                 "score_low": np.nan, "score_high": np.nan} for s, n in SIZES.items() for m in ("ft", "xgb")]
        return name, pd.DataFrame(rows), "accuracy"

    panels = [panel("a", 0.7), panel("empty", np.nan), panel("c", 0.8)]
    fig = curve_figs.learning_curve_grid(panels, figs.Style(["ft", "xgb"], {}), cols=2, reference_n=10_000)
    assert sorted({(t.xaxis, t.yaxis) for t in fig.data}) == [("x", "y"), ("x3", "y3")]  # none on the empty panel
    assert [(s.xref, s.yref, s.x0) for s in fig.layout.shapes] == [("x", "y domain", 10_000), ("x3", "y3 domain", 10_000)]
