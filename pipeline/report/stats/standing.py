"""Where attention stands per dataset (issue 36 item 5): at the largest size both kinds ran, the best
attention model against the best boosting model, fold by fold, as "ahead", "level" or "behind" rather
than a raw win; and the same over datasets, with an interval.

A dataset's difference is the mean over its folds of (best attention − best boosting) test score, the
two picked by their mean validation score at that size (:mod:`pipeline.report.stats.pick`). It is *level* when that difference lies within ``MARGIN`` or its
95% t-interval over folds holds zero (the folds cannot tell the two apart); *ahead* or *behind* when it
is past the margin and the interval excludes zero. A loss by a model still improving when its epochs,
rounds or time ran out is *not converged*, neither ahead nor behind. One fold gives no interval: past the
margin it reads ahead or behind "(one fold)". Where the two finished no fold in common at that size, *not
compared*. Only ahead, level and behind enter the mean over datasets (``COMPARED``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.records import Status
from pipeline.report.stats import pick

MARGIN = 0.005  # accuracy or R²: a difference this small is level, whatever the folds say
COMPARED = ("ahead", "level", "behind")  # the standings whose difference counts (a one-fold one included)
COLUMNS = ["dataset", "split_key", "at_n", "attention", "boosting", "diff", "low", "high", "n_folds", "standing"]


def standings(cells: pd.DataFrame, attention: list[str], boosting: list[str], margin: float = MARGIN) -> pd.DataFrame:
    """Per dataset: ``standing`` at the largest size both kinds have scores (``at_n`` rows), with the two
    models compared, the mean difference and its interval over folds. ``cells`` has ReportData.cells'
    columns (status, score, val_score, n_train, epochs_bound, repeat, fold)."""
    ok = cells[(cells.status == Status.OK.value) & cells.score.notna()]
    rows = []
    for (dataset, split_key), g in ok.groupby(["dataset", "split_key"], sort=True):
        means = g.groupby(["sample_size", "model"]).score.mean().unstack()
        val = g.groupby(["sample_size", "model"]).val_score.mean().unstack().reindex_like(means)
        a_cols, b_cols = [m for m in attention if m in means], [m for m in boosting if m in means]
        if not a_cols or not b_cols:
            continue
        both = means[a_cols].notna().any(axis=1) & means[b_cols].notna().any(axis=1)
        if not both.any():
            continue
        size = g[g.sample_size.isin(both[both].index)].groupby("sample_size").n_train.mean().idxmax()
        at, at_val = means.loc[[size]], val.loc[[size]]
        a, b = (pick.by_validation(at, at_val, cols)[0].iloc[0] for cols in (a_cols, b_cols))
        here = g[g.sample_size == size]
        per_fold = here.pivot_table(index=["repeat", "fold"], columns="model", values="score", aggfunc="mean")
        d = (per_fold[a] - per_fold[b]).dropna().to_numpy()
        bound = here[here.model.isin([a, b])].groupby("model").epochs_bound.any() if "epochs_bound" in here else None
        rows.append({"dataset": dataset, "split_key": split_key, "at_n": float(here.n_train.mean()), "attention": a,
                     "boosting": b, **_verdict(d, margin, bound, a, b)})
    return pd.DataFrame(rows, columns=COLUMNS)


def _verdict(d: np.ndarray, margin: float, bound: Any, a: str, b: str) -> dict[str, Any]:
    if not len(d):  # the two never finished on the same fold at this size: nothing to compare
        return {"diff": float("nan"), "low": float("nan"), "high": float("nan"), "n_folds": 0,
                "standing": "not compared"}
    mean = float(d.mean())
    low = high = float("nan")
    if len(d) >= 2:
        half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
        low, high = mean - half, mean + half
    loser = a if mean < 0 else b
    if abs(mean) <= margin or (len(d) >= 2 and low <= 0 <= high):
        standing = "level"
    elif bound is not None and bool(bound.get(loser, False)):
        standing = "not converged"
    else:
        standing = ("ahead" if mean > 0 else "behind") + (" (one fold)" if len(d) < 2 else "")
    return {"diff": mean, "low": low, "high": high, "n_folds": len(d), "standing": standing}


def overall(table: pd.DataFrame) -> dict[str, Any]:
    """Counts of each standing, and the mean difference over datasets with its 95% t-interval (the
    datasets are the units; only ahead, level and behind ones enter it)."""
    base = table.standing.str.replace(" (one fold)", "", regex=False)
    counts = base.value_counts().to_dict()
    d = table.loc[base.isin(COMPARED), "diff"].to_numpy(dtype=float)
    low = high = float("nan")
    if len(d) >= 2:
        half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
        low, high = float(d.mean()) - half, float(d.mean()) + half
    return {"n": len(table), "ahead": counts.get("ahead", 0), "level": counts.get("level", 0),
            "behind": counts.get("behind", 0), "not_converged": counts.get("not converged", 0),
            "not_compared": counts.get("not compared", 0),
            "mean": float(d.mean()) if len(d) else float("nan"), "low": low, "high": high}
