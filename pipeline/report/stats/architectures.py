"""Each attention architecture on its own (issue 59 item 3): per attention entry and training size, its verdicts
against the best gradient-boosting model and against the best other network over datasets, the mean difference
with a t-interval over datasets (the units: the splits of one dataset share rows, datasets do not), on how many
datasets validation picked it as the best attention network, and its mean validation rank among the attention
entries (:mod:`race`). Every figure is a ``standings`` row, the verdict every page reads; the Sample-size page and
``attnbench answer`` show this one table.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from pipeline.models.kinds import ATTENTION, BOOSTING, NETWORK
from pipeline.records import COMPARED_VERDICTS, Verdict
from pipeline.report.stats import race
from pipeline.report.stats.claims import mean_interval
from pipeline.report.stats.verdicts import versus

AGAINST = (versus(BOOSTING), versus(NETWORK))
COUNTED = [Verdict.AHEAD, Verdict.EQUIVALENT, Verdict.BEHIND, Verdict.UNDETERMINED]


def per_entry(standings: pd.DataFrame, planned: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per attention entry and numeric training size, where the rows hold more than one attention
    entry (else empty): ``datasets``, and ``planned``, the datasets its plan holds there (``planned``: the
    ``plan`` view's distinct datasets per ``model`` and ``sample_size``, as ``report.data.PLANNED`` reads them; None
    where not given); for each of :data:`AGAINST`, the verdict counts (``<versus> counts``: a
    dict by verdict), ``<versus> mean``/``low``/``high`` and ``<versus> median``; ``picked`` of ``picked_of`` datasets; ``mean_rank`` of
    ``entries`` over ``rank_datasets``. Sorted by entry, then size."""
    s = standings[(standings.family == ATTENTION) & standings.versus.isin(AGAINST)
                  & (standings.sample_size.astype(str) != "all")]
    if s.model.nunique() < 2:
        return pd.DataFrame()
    plans = datasets_planned(planned) if planned is not None else {}
    compared = [v.value for v in COMPARED_VERDICTS]
    ranks = {size: race.ranks(g).set_index("model") for size, g in s.groupby("sample_size")}
    rows = []
    for (model, size), g in s.groupby(["model", "sample_size"]):
        row: dict = {"model": model, "sample_size": str(size), "datasets": g.dataset.nunique(),
                     "planned": plans.get((str(model), str(size)))}
        for against in AGAINST:
            v = g[g.versus == against]
            row[f"{against} n"] = len(v)
            row[f"{against} counts"] = {x.value: int((v.verdict == x.value).sum()) for x in Verdict}
            diffs = v[v.verdict.isin(compared)]["diff"].to_numpy(dtype=float)
            mean, low, high = mean_interval(diffs)
            # the median beside the mean: one diverged fit (an R² of −10) moves a mean over datasets, not a median
            row |= {f"{against} mean": mean, f"{against} low": low, f"{against} high": high,
                    f"{against} median": float(np.median(diffs)) if len(diffs) else math.nan}
        picked = g[g.versus == AGAINST[0]]
        r = ranks[size]
        row |= {"picked": int(picked.family_best.sum()), "picked_of": picked.dataset.nunique(),
                "mean_rank": float(r.loc[model, "mean_rank"]) if model in r.index else math.nan, "entries": len(r),
                "rank_datasets": int(r.datasets.iloc[0]) if len(r) else 0}
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["model", "sample_size"], key=lambda c: c.map(
        lambda x: int(x) if str(x).isdigit() else x), ignore_index=True)


def datasets_planned(planned: pd.DataFrame) -> dict[tuple[str, str], int]:
    """``report.data.PLANNED``'s rows as (model, training size) → the datasets planned there."""
    return {(str(m), str(z)): int(n) for m, z, n in zip(planned.model, planned.sample_size, planned.datasets)}


def networks(standings: pd.DataFrame) -> list[str]:
    """The non-attention networks among which "the best other network" is picked (by validation, on each task
    among those that ran it): TabM only where it ran, so the pool differs by size and dataset."""
    return sorted(set(standings.model[standings.family == NETWORK]))


def datasets_text(row: dict) -> str:
    """The datasets a row's figures rest on, and, while the entry has not run on every dataset its plan holds at
    that size, of how many: "2 of 8" (a chunked study's interim row)."""
    planned = row.get("planned")
    n = int(row["datasets"])
    return f"{n} of {int(planned)}" if planned is not None and planned == planned and int(planned) > n else str(n)


def counts_text(counts: dict[str, int]) -> str:
    """ahead–equivalent–behind–undetermined, and the not converged beside them."""
    text = "–".join(str(counts.get(v.value, 0)) for v in COUNTED)
    nc = counts.get(Verdict.NOT_CONVERGED.value, 0)
    return text + (f" (+{nc} not converged)" if nc else "")


def leaders_text(standings: pd.DataFrame, label: Callable[[str], str], n: int = 3) -> str:
    """Per numeric training size (``label`` names it), the ``n`` attention entries that lead the race there
    (:func:`race.leaders`, the rule's one statement), with how many entries it ranked over how many datasets: while entries of a chunked study
    have not run a size's tasks, the race there is among fewer, and says so."""
    s = standings[(standings.family == ATTENTION) & (standings.versus == AGAINST[0])
                  & (standings.sample_size.astype(str) != "all")]
    out = []
    for size, g in sorted(s.groupby("sample_size"), key=lambda kv: int(kv[0])):
        r = race.ranks(g)
        if len(r):
            k, d = len(r), int(r.datasets.iloc[0])
            out.append(f"{label(str(size))}: {', '.join(race.leaders(g, n))} (of {k} entr{'y' if k == 1 else 'ies'} "
                       f"ranked, over {d} dataset{'s' if d != 1 else ''})")
    return "; ".join(out)


BEST_NETWORK = "best other network"  # the row of each task's pick among the other networks (by validation)


def other_networks(standings: pd.DataFrame) -> pd.DataFrame:
    """The other networks against the best gradient-boosting model (issue 82 item 5: is it attention, or any
    network?): one row per other-network entry (TabM, RealMLP, the MLP) and per :data:`BEST_NETWORK` (each task's
    pick among them, by validation) and numeric training size: ``datasets``, ``counts`` (by verdict),
    ``mean``/``low``/``high`` (over datasets compared, t-interval) and ``median``. Empty where no other network
    stands against boosting. Sorted by entry (the best first), then size."""
    s = standings[(standings.family == NETWORK) & (standings.versus == AGAINST[0])
                  & (standings.sample_size.astype(str) != "all")]
    if s.empty:
        return pd.DataFrame()
    compared = [v.value for v in COMPARED_VERDICTS]
    rows = []
    for name, rows_of in ((BEST_NETWORK, s[s.family_best]), *((m, g) for m, g in s.groupby("model"))):
        for size, g in rows_of.groupby("sample_size"):
            diffs = g[g.verdict.isin(compared)]["diff"].to_numpy(dtype=float)
            mean, low, high = mean_interval(diffs)
            rows.append({"model": name, "sample_size": str(size), "datasets": g.dataset.nunique(),
                         "counts": {x.value: int((g.verdict == x.value).sum()) for x in Verdict}, "mean": mean,
                         "low": low, "high": high, "median": float(np.median(diffs)) if len(diffs) else math.nan,
                         "picked": ", ".join(f"{m} {n}" for m, n in g.model.value_counts().sort_index().items())
                         if name == BEST_NETWORK else ""})
    return pd.DataFrame(rows).sort_values(["model", "sample_size"], key=lambda c: c.map(
        lambda x: (x != BEST_NETWORK, x) if not str(x).isdigit() else int(x)), ignore_index=True)
