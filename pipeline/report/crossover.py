"""Learning curves against boosting: where a challenger overtakes the best boosting model for good
(the crossover size, with what its verdict rests on), and each curve point's confidence interval.
Pure pandas/numpy/scipy on the ``learning_curves`` view."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

CROSSOVER_COLUMNS = ["dataset", "split_key", "model", "verdict", "crossover_n", "behind_at", "before", "n_sizes",
                     "ahead_everywhere", "at_size", "at_n", "challenger_at", "incumbent_at", "n_splits"]
LEVEL = 1e-12  # mean scores closer than this are equal: level, neither ahead nor behind


def crossover(curves: pd.DataFrame, challengers: list[str], incumbents: list[str],
              best_label: str = "best attention") -> pd.DataFrame:
    """Per dataset and challenger: the training size from which it beats the best incumbent for good.

    ``curves`` has the columns of the ``learning_curves`` view. At each size the best incumbent is the
    incumbent (boosting) model with the highest mean score. ``verdict``:

    - ``one size``: the two were compared at one size only: no crossover can be told (none is given);
    - ``never``: the challenger is behind at the largest size compared (``behind_at``);
    - ``level``: the two are level (equal means) at the largest size: neither ahead nor behind;
    - ``crossover``: ahead at ``crossover_n`` and at every larger size, not ahead at the size just
      before (``behind_at``; ``before`` says whether it was behind or level there);
    - ``ahead``: ahead at every size compared (``crossover_n`` is the smallest).

    A row ``best_label`` compares the best challenger at each size (when there are several).
    ``at_size`` is the size the verdict rests on (the crossover's; else the largest compared), with
    the two models compared there (``challenger_at``, ``incumbent_at``) and ``n_splits``, the fewest
    finished splits of the two there: what a paired test checks.
    """
    rows = []
    if curves.empty or not challengers or not incumbents:
        return pd.DataFrame(columns=CROSSOVER_COLUMNS)
    for (dataset, split_key), g in curves.groupby(["dataset", "split_key"], sort=True):
        wide = g.pivot_table(index="sample_size", columns="model", values="score_mean", aggfunc="mean")
        n_ok = g.pivot_table(index="sample_size", columns="model", values="n_ok", aggfunc="sum")
        n = g.groupby("sample_size").n_train.mean()
        wide = wide.loc[n.sort_values().index]
        inc_cols = [m for m in incumbents if m in wide]
        inc = wide[inc_cols].max(axis=1, skipna=True)
        chal = {m: wide[m] for m in challengers if m in wide}
        chal_cols = [c for c in challengers if c in wide]
        if len(chal) > 1:
            chal[best_label] = wide[chal_cols].max(axis=1, skipna=True)
        if inc.isna().all():
            continue
        for m, s in chal.items():
            both = s.notna() & inc.notna()
            diff = (s - inc)[both]
            sizes = n[diff.index]
            if diff.empty:
                continue
            ahead = (diff > LEVEL).to_numpy()
            level = (diff.abs() <= LEVEL).to_numpy()
            cross: float | None = None
            behind: float | None = None
            before: str | None = None
            if len(diff) < 2:
                verdict, at = "one size", diff.index[-1]
            elif level[-1]:
                verdict, at = "level", diff.index[-1]
            elif not ahead[-1]:
                verdict, at = "never", diff.index[-1]
                behind = float(sizes.iloc[-1])
            else:
                first = len(ahead) - int(np.argmin(ahead[::-1])) if not ahead.all() else 0
                verdict = "ahead" if first == 0 else "crossover"
                cross = float(sizes.iloc[first])
                if first > 0:
                    behind = float(sizes.iloc[first - 1])
                    before = "level" if level[first - 1] else "behind"
                at = diff.index[first]
            who = wide.loc[at, chal_cols].idxmax() if m == best_label else m
            against = wide.loc[at, inc_cols].idxmax()
            splits = min(n_ok.loc[at].get(who, 0), n_ok.loc[at].get(against, 0))
            rows.append({"dataset": dataset, "split_key": split_key, "model": m, "verdict": verdict,
                         "crossover_n": cross, "behind_at": behind, "before": before, "n_sizes": len(diff),
                         "ahead_everywhere": verdict == "ahead", "at_size": at, "at_n": float(sizes[at]),
                         "challenger_at": who, "incumbent_at": against, "n_splits": int(splits)})
    return pd.DataFrame(rows, columns=CROSSOVER_COLUMNS)


def curve_intervals(curves: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """``curves`` (the ``learning_curves`` view) with ``score_low``/``score_high``: a Student-t
    confidence interval for the mean over the folds and subset seeds of one dataset and size, clipped
    to the score's range; NaN where fewer than two splits finished (one split has no interval)."""
    out = curves.copy()
    n = out.n_ok.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = stats.t.ppf(0.5 + level / 2, n - 1) * out.score_std / np.sqrt(n)
    half = half.where(n >= 2)
    # Clipped to what the score can be: accuracy within [0, 1], R² at most 1.
    floor = np.where(out.get("metric", pd.Series("accuracy", index=out.index)) == "r2", -np.inf, 0.0)
    out["score_low"] = np.maximum(out.score_mean - half, floor)
    out["score_high"] = np.minimum(out.score_mean + half, 1.0)
    return out
