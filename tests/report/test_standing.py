"""Where attention stands per dataset (issue 36 item 5): ahead, level or behind the best boosting model at
the largest size both ran, fold by fold; not converged where the one behind was still improving."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.report.stats import standing


def cells(per_dataset: dict[str, dict[str, list[float]]], bound: set[tuple[str, str]] = frozenset(),
          small: bool = True) -> pd.DataFrame:
    """{dataset: {model: scores per fold at 4,096 rows}}; at 256 rows (when ``small``) attention always ahead."""
    rows = []
    for d, models in per_dataset.items():
        for m, scores in models.items():
            for f, v in enumerate(scores):
                rows.append({"dataset": d, "split_key": "k", "sample_size": "4096", "n_train": 4096, "repeat": 0,
                             "fold": f, "model": m, "status": "ok", "score": v, "val_score": v,
                             "epochs_bound": (d, m) in bound})
                if small:
                    rows.append({"dataset": d, "split_key": "k", "sample_size": "256", "n_train": 256, "repeat": 0,
                                 "fold": f, "model": m, "status": "ok", "score": 0.9 if m == "ft" else 0.5,
                                 "val_score": 0.9 if m == "ft" else 0.5, "epochs_bound": False})
    return pd.DataFrame(rows)


def test_ahead_level_behind_and_not_converged():
    c = cells({
        "ahead": {"ft": [0.90, 0.91, 0.92], "xgb": [0.85, 0.86, 0.86], "lgbm": [0.80, 0.80, 0.80]},
        "tiny_gap": {"ft": [0.803, 0.804, 0.803], "xgb": [0.800, 0.800, 0.801]},  # 0.003: within the margin
        "noisy": {"ft": [0.95, 0.80, 0.90], "xgb": [0.85, 0.85, 0.85]},  # +0.033 but the folds disagree
        "behind": {"ft": [0.70, 0.71, 0.70], "xgb": [0.80, 0.81, 0.80]},
        "unconverged": {"ft": [0.70, 0.71, 0.70], "xgb": [0.80, 0.81, 0.80]},
        "one_fold": {"ft": [0.70], "xgb": [0.80]},
    }, bound={("unconverged", "ft")})
    t = standing.standings(c, ["ft"], ["xgb", "lgbm"]).set_index("dataset")
    assert t.standing.to_dict() == {"ahead": "ahead", "tiny_gap": "level", "noisy": "level", "behind": "behind",
                                    "unconverged": "not converged", "one_fold": "behind (one fold)"}
    # compared at the largest size (4,096 rows, where attention is not always ahead), against the best booster
    assert (t.at_n == 4096).all() and t.loc["ahead", "boosting"] == "xgb"
    assert abs(t.loc["ahead", "diff"] - 0.0533333) < 1e-6 and t.loc["ahead", "low"] > 0
    assert np.isnan(t.loc["one_fold", "low"]) and t.loc["one_fold", "n_folds"] == 1
    o = standing.overall(t.reset_index())
    assert (o["ahead"], o["level"], o["behind"], o["not_converged"], o["n"]) == (1, 2, 2, 1, 6)
    assert o["low"] < o["mean"] < o["high"]


def test_a_dataset_without_both_kinds_has_no_standing():
    c = cells({"only_boosting": {"xgb": [0.8, 0.8]}, "both": {"ft": [0.8, 0.8], "xgb": [0.8, 0.8]}}, small=False)
    t = standing.standings(c, ["ft"], ["xgb"])
    assert t.dataset.tolist() == ["both"] and t.standing.tolist() == ["level"]  # an exact tie is level, not a win


def test_two_models_with_no_fold_in_common_are_not_compared_and_stay_out_of_the_mean():
    c = cells({"apart": {"ft": [0.9, np.nan, np.nan], "xgb": [np.nan, 0.8, 0.8]},
               "ahead": {"ft": [0.90, 0.91, 0.92], "xgb": [0.85, 0.86, 0.86]},
               "behind": {"ft": [0.80, 0.81, 0.80], "xgb": [0.85, 0.86, 0.85]}}, small=False)
    c.loc[c.score.isna(), "status"] = "error"
    t = standing.standings(c, ["ft"], ["xgb"]).set_index("dataset")
    assert t.loc["apart", "standing"] == "not compared" and t.loc["apart", "n_folds"] == 0
    o = standing.overall(t.reset_index())
    assert o["not_compared"] == 1 and np.isfinite(o["mean"]) and abs(o["mean"] - (0.0533333 - 0.05) / 2) < 1e-6
