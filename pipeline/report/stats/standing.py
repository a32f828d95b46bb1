"""Where attention stands per dataset (issue 36 item 5): at the largest size both kinds ran, the best
attention model against the best boosting model, with the verdict of the ``standings`` view (ahead,
equivalent, behind, undetermined or not converged: :mod:`pipeline.report.stats.verdicts`), and the same
over datasets, with an interval.

A dataset's difference is the mean over its splits of (best attention − best boosting) test score, the two
picked by their mean validation score at that size (:mod:`pipeline.report.stats.pick`); its verdict is the
view's row for that pair, so that this page, the overview, the crossovers and the claims read one verdict
for it. Where the two finished no split in common at that size, *not compared*. The verdicts with a
difference (``COMPARED``: all but not converged and not compared) enter the mean over datasets, whose
t-interval is over datasets: they are independent, unlike the splits of one dataset.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.models.kinds import ATTENTION, BOOSTING
from pipeline.report.stats.verdicts import COMPARED, MARGIN, ORDER, Tally, from_row, versus

__all__ = ["COLUMNS", "COMPARED", "MARGIN", "best_rows", "overall", "standings"]

COLUMNS = ["dataset", "split_key", "sample_size", "at_n", "attention", "boosting", "diff", "low", "high", "n_folds",
           "standing", "n_valid", "decision"]


def best_rows(rows: pd.DataFrame, family: str = ATTENTION, against: str = BOOSTING) -> pd.DataFrame:
    """The rows of the ``standings`` view (``rows``) of ``family``'s best model against ``against``'s best,
    one per task where both have a score."""
    if rows.empty:
        return rows
    return rows[(rows.family == family) & rows.family_best & (rows.versus == versus(against))]


def standings(rows: pd.DataFrame, family: str = ATTENTION, at_least: float = 0.0) -> pd.DataFrame:
    """Per dataset: the verdict (``standing``, a :class:`Verdict`; ``decision`` what it rests on) of
    ``family``'s best model against the best boosting model at the largest size where both have scores
    (of ``at_least`` training rows or more), the two models, the mean difference and its corrected
    interval over splits. ``rows``: the ``standings`` view."""
    here = best_rows(rows, family)
    here = here[here.n_train >= at_least] if len(here) else here
    if here.empty:
        return pd.DataFrame(columns=COLUMNS)
    largest = here.sort_values(["dataset", "split_key", "n_train"], kind="stable").groupby(
        ["dataset", "split_key"], sort=True).tail(1)
    out = []
    for r in largest.itertuples(index=False):
        d = from_row(r)
        out.append({"dataset": r.dataset, "split_key": r.split_key, "sample_size": r.sample_size,
                    "at_n": float(r.n_train), "attention": r.model, "boosting": r.versus_model, "diff": d.diff,
                    "low": d.low, "high": d.high, "n_folds": d.n_splits, "standing": d.verdict,
                    "n_valid": float(r.n_valid) if pd.notna(r.n_valid) else float("nan"), "decision": d})
    return pd.DataFrame(out, columns=COLUMNS)


def overall(table: pd.DataFrame) -> dict[str, Any]:
    """Counts of each verdict (``tally``, and each by its name), and the mean difference over datasets with
    its 95% t-interval (the datasets are the units; only those in ``COMPARED`` enter it)."""
    tally = Tally.of(table.standing) if len(table) else Tally.of([])
    d = table.loc[table.standing.isin(COMPARED), "diff"].to_numpy(dtype=float) if len(table) else np.array([])
    d = d[~np.isnan(d)]
    low = high = float("nan")
    if len(d) >= 2:
        half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
        low, high = float(d.mean()) - half, float(d.mean()) + half
    return {"n": len(table), "tally": tally, **{str(v).replace(" ", "_"): tally[v] for v in ORDER},
            "not_compared": tally.not_compared, "compared": len(d),
            "mean": float(d.mean()) if len(d) else float("nan"), "low": low, "high": high}
