"""Where attention stands per dataset (issue 36 item 5, issue 58 item 1): the best attention model against the
best boosting model at the largest size both ran, with the standings view's verdict (ahead, equivalent,
behind, undetermined, not converged: the corrected interval over folds), and the same over datasets."""

from __future__ import annotations

import numpy as np
from tables import standings_of

from pipeline.records import Verdict
from pipeline.report.stats import standing

KINDS = {"ft": "attention", "xgb": "boosting", "lgbm": "boosting"}


def cells(per_dataset: dict[str, dict[str, list[float]]], bound: set[tuple[str, str]] = frozenset(),
          small: bool = True) -> list[dict]:
    """{dataset: {model: scores per fold at 4,096 rows}}; at 256 rows (when ``small``) attention always ahead."""
    rows = []
    for d, models in per_dataset.items():
        for m, scores in models.items():
            for f, v in enumerate(scores):
                if v == v:  # NaN: no score on that fold (the cell failed)
                    rows.append({"dataset": d, "sample_size": "4096", "n_train": 4096, "fold": f, "model": m,
                                 "score": v, "epochs_bound": (d, m) in bound})
                if small:
                    rows.append({"dataset": d, "sample_size": "256", "n_train": 256, "fold": f, "model": m,
                                 "score": 0.9 if m == "ft" else 0.5 + 0.001 * f, "epochs_bound": False})
    return rows


def test_ahead_equivalent_behind_undetermined_and_not_converged():
    c = cells({
        "ahead": {"ft": [0.90, 0.91, 0.92], "xgb": [0.85, 0.86, 0.86], "lgbm": [0.80, 0.80, 0.80]},
        "tiny_gap": {"ft": [0.803, 0.804, 0.803], "xgb": [0.800, 0.8005, 0.800]},  # +0.003, folds agreeing
        "noisy": {"ft": [0.95, 0.80, 0.90], "xgb": [0.85, 0.85, 0.85]},  # +0.033 but the folds disagree
        "behind": {"ft": [0.70, 0.71, 0.70], "xgb": [0.80, 0.81, 0.80]},
        "unconverged": {"ft": [0.70, 0.71, 0.70], "xgb": [0.80, 0.81, 0.80]},
        "one_fold": {"ft": [0.70], "xgb": [0.80]},
    }, bound={("unconverged", "ft")})
    t = standing.standings(standings_of(c, KINDS)).set_index("dataset")
    assert t.standing.to_dict() == {"ahead": "ahead", "tiny_gap": "equivalent", "noisy": "undetermined",
                                    "behind": "behind", "unconverged": "not converged", "one_fold": "undetermined"}
    # the fold count is data, said with the words, never glued onto them
    assert t.loc["one_fold", "decision"].words() == "undetermined (one fold)" and t.loc["one_fold", "n_folds"] == 1
    assert t.loc["one_fold", "decision"].lean is Verdict.BEHIND and np.isnan(t.loc["one_fold", "low"])
    # compared at the largest size (4,096 rows, where attention is not always ahead), against the best booster
    assert (t.at_n == 4096).all() and t.loc["ahead", "boosting"] == "xgb"
    assert abs(t.loc["ahead", "diff"] - 0.0533333) < 1e-6 and t.loc["ahead", "low"] > 0
    o = standing.overall(t.reset_index())
    assert (o["ahead"], o["equivalent"], o["behind"], o["undetermined"], o["not_converged"], o["n"]) == (1, 1, 1, 2, 1, 6)
    assert o["compared"] == 5 and o["low"] < o["mean"] < o["high"]  # not converged left out of the mean
    # the interval is wider than the plain t over folds: folds share training rows (k = 3)
    plain = 4.303 * np.std([0.05, 0.05, 0.06], ddof=1) / np.sqrt(3)
    assert t.loc["ahead", "high"] - t.loc["ahead", "diff"] > plain


def test_a_dataset_without_both_kinds_has_no_standing():
    c = cells({"only_boosting": {"xgb": [0.8, 0.8]}, "both": {"ft": [0.8, 0.8], "xgb": [0.8, 0.8]}}, small=False)
    t = standing.standings(standings_of(c, KINDS))
    assert t.dataset.tolist() == ["both"] and t.standing.tolist() == ["equivalent"]  # an exact tie, folds agreeing


def test_two_models_with_no_fold_in_common_are_not_compared_and_stay_out_of_the_mean():
    nan = float("nan")
    c = cells({"apart": {"ft": [0.9, nan, nan], "xgb": [nan, 0.8, 0.8]},
               "ahead": {"ft": [0.90, 0.91, 0.92], "xgb": [0.85, 0.86, 0.86]},
               "behind": {"ft": [0.80, 0.81, 0.80], "xgb": [0.85, 0.86, 0.85]}}, small=False)
    t = standing.standings(standings_of(c, KINDS)).set_index("dataset")
    assert t.loc["apart", "standing"] == "not compared" and t.loc["apart", "n_folds"] == 0
    o = standing.overall(t.reset_index())
    assert o["not_compared"] == 1 and np.isfinite(o["mean"]) and abs(o["mean"] - (0.0533333 - 0.05) / 2) < 1e-6


def test_at_least_keeps_the_largest_size_at_or_above_it():
    c = cells({"d": {"ft": [0.90, 0.91, 0.92], "xgb": [0.85, 0.86, 0.86]}})
    rows = standings_of(c, KINDS)
    assert standing.standings(rows, at_least=1000).sample_size.tolist() == ["4096"]
    assert standing.standings(rows, at_least=5000).empty
