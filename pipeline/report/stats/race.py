"""Which entries of a family lead at a training size by validation alone: the race that decides which attention
entries run on at a larger size (issue 59: the three that lead at 4,096 rows go on to 10,000), stated before any
of them ran and read from validation scores only, never test.

Per dataset, each entry's mean validation score over the splits every entry of the family that ran the task
finished (the ``standings`` view's ``val_mean``) is ranked among the family's entries (1 best; a tie shares the
mean of its ranks). An entry's standing is its mean rank over the datasets where every entry has a validation
score, so that no entry gains by missing a dataset the others found hard. The leaders are the lowest mean ranks;
a tie goes to the entry validation picked as its family's best on more of those datasets, then to the first by
name.
"""

from __future__ import annotations

import pandas as pd

COLUMNS = ["model", "mean_rank", "datasets", "picked"]


def ranks(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows``: one family's standings rows at one size, one per (dataset, model) (``dataset``, ``model``,
    ``val_mean``, ``family_best``). Per entry (:data:`COLUMNS`): the mean rank over the datasets every entry
    has a validation score on, how many those are, and on how many of them it was picked; best first."""
    one = rows.drop_duplicates(["dataset", "model"])
    wide = one.pivot(index="dataset", columns="model", values="val_mean").dropna()
    picked = one[one.dataset.isin(wide.index)].groupby("model").family_best.sum()  # on the ranked datasets only
    if wide.empty:
        return pd.DataFrame(columns=COLUMNS)
    rank = wide.round(12).rank(axis=1, ascending=False, method="average").mean()
    out = pd.DataFrame({"model": rank.index, "mean_rank": rank.to_numpy(), "datasets": len(wide),
                        "picked": [int(picked.get(m, 0)) for m in rank.index]})
    return out.sort_values(["mean_rank", "picked", "model"], ascending=[True, False, True], ignore_index=True)


def leaders(rows: pd.DataFrame, n: int) -> list[str]:
    """The ``n`` entries that lead the race (:func:`ranks`)."""
    return ranks(rows).model.head(n).tolist()
