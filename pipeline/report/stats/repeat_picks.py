"""The pick runs the repeats (issue 82 item 1): a verdict at a dataset's largest size reads as many splits as the
dataset was repeated to, whichever entry validation picks. The rule, stated 2026-12-07 before any of its cells ran:

At each dataset's largest size (the largest where the best attention model and the best boosting model both have
scores: the size the answer reads), for the attention family and the other networks, the entry validation picks as
the family's best (the ``standings`` view's ``family_best``: each entry's mean validation score on the splits every
entry of the family finished, which for a family holding entries of the first repeat only is the first repeat's)
runs the remaining repeats the dataset has there, on the same splits the boosting models ran, where it ran fewer
(a suite's ``every_repeat_on``). Validation only: no test score enters the pick.

Once it has run them, the pick itself may read more splits: where every entry of a family ran every repeat (the
other networks, once TabM has), the family's best is picked on all of them and may be another entry, which ran
them too. Either way no verdict reads fewer splits than the dataset's.
"""

from __future__ import annotations

import pandas as pd

from pipeline.models.kinds import ATTENTION, BOOSTING, NETWORK
from pipeline.report.stats.standing import best_rows

FAMILIES = (ATTENTION, NETWORK)
COLUMNS = ["dataset", "sample_size", "family", "model", "n_splits", "planned_splits"]


def planned_splits(expected: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, size), the splits (repeat, fold) the plan holds for the boosting models there: how many the
    dataset was repeated to. ``expected``: rows of the ``expected_cells`` view (``dataset``, ``sample_size``,
    ``repeat``, ``fold``, ``model_kind`` or ``family``)."""
    from pipeline.models.kinds import family_of

    fam = expected.family if "family" in expected else expected.model_kind.map(family_of)
    b = expected[fam == BOOSTING]
    return (b.drop_duplicates(["dataset", "sample_size", "repeat", "fold"]).groupby(["dataset", "sample_size"])
            .size().rename("planned_splits").reset_index())


def picks(standings: pd.DataFrame, expected: pd.DataFrame) -> pd.DataFrame:
    """Every family pick at a dataset's largest size that reads fewer splits than the dataset has there
    (:data:`COLUMNS`), by dataset and family: the entries the rule runs the remaining repeats of."""
    top = best_rows(standings, ATTENTION)
    if top.empty:
        return pd.DataFrame(columns=COLUMNS)
    largest = top.sort_values(["dataset", "n_train"], kind="stable").groupby("dataset").tail(1)[["dataset", "sample_size"]]
    against = f"best {BOOSTING}"
    rows = standings[standings.family.isin(FAMILIES) & standings.family_best & (standings.versus == against)]
    rows = rows.merge(largest, on=["dataset", "sample_size"]).merge(planned_splits(expected),
                                                                    on=["dataset", "sample_size"])
    short = rows[rows.n_splits < rows.planned_splits]
    return (short[COLUMNS].sort_values(["dataset", "family"], ignore_index=True)
            .astype({"n_splits": int, "planned_splits": int}))


def by_entry(table: pd.DataFrame) -> dict[str, list[str]]:
    """The rule's picks as a suite names them: per entry, the datasets it runs every repeat on (sorted)."""
    return {m: sorted(g.dataset) for m, g in table.groupby("model")}


def price(table: pd.DataFrame, seconds: pd.DataFrame) -> float:
    """Trial-hours the rule's remaining repeats would take at what each pick's own cells there took: per pick, its
    mean trial-seconds a split so far × the splits it has yet to run. ``seconds``: one row per cell (``dataset``,
    ``sample_size``, ``model``, ``seconds``: its trials' seconds summed)."""
    if table.empty:
        return 0.0
    per = seconds.groupby(["dataset", "sample_size", "model"]).seconds.mean().rename("per_split").reset_index()
    joined = table.merge(per, on=["dataset", "sample_size", "model"], how="left")
    if joined.per_split.isna().any():
        raise ValueError(f"no cost for {joined[joined.per_split.isna()][['dataset', 'model']].values.tolist()}")
    return float((joined.per_split * (joined.planned_splits - joined.n_splits)).sum() / 3600)
