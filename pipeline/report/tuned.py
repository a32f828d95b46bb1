"""Tuned beside defaults: where one results file holds a model at its defaults (an entry whose every
cell scored one configuration) and searched (an entry of the same registered model whose cells scored
several, such as study-tuned-slice's ``ft_transformer-tuned`` beside study-every-dataset's
``ft_transformer``), the two side by side, and each family's gap to gradient boosting at defaults and
tuned.

Split by split: a tuned slice runs one fold of a task whose defaults ran on three, so every figure here
is over the splits (dataset, split key, size, repeat, fold, seed) where a searched entry finished, never
a task's mean over folds one side did not run. A tuned entry's score is the configuration its search
selected by validation; a family's best, at defaults or tuned, is its entry with the best validation
score on the split (:mod:`pipeline.report.standing`). A difference within the standings' margin is level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.models.registry import KINDS, family_of
from pipeline.records import Status
from pipeline.report import aggregate as agg
from pipeline.report import standing as st

BOOSTING = KINDS["boosting"]
PAIR_COLUMNS = ["model", "tuned", "splits", "default", "tuned_score", "diff", "low", "high", "better", "level", "worse"]


@dataclass(frozen=True)
class Entries:
    """The results file's entries (report names) by registered model: those at defaults and those searched."""

    default: dict[str, list[str]]
    searched: dict[str, list[str]]

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """(default entry, searched entry) of each model that has both."""
        return [(d, t) for name in sorted(set(self.default) & set(self.searched))
                for d in self.default[name] for t in self.searched[name]]

    def of_family(self, kinds: dict[str, str], family: str, searched: bool) -> list[str]:
        side = self.searched if searched else self.default
        return sorted(m for models in side.values() for m in models if family_of(kinds.get(m)) == family)


def entries(cells: pd.DataFrame, searched_cells: set[str]) -> Entries:
    """An entry is searched when some finished cell of it scored more than one configuration; at its
    defaults when it finished cells and none of them did."""
    ok = cells[cells.status == Status.OK]
    searched = ok.cell_id.isin(searched_cells).groupby(ok.model).any()
    names = ok.groupby("model").model_name.first()
    default: dict[str, list[str]] = {}
    tuned: dict[str, list[str]] = {}
    for model, name in names.items():
        (tuned if searched[model] else default).setdefault(str(name), []).append(str(model))
    return Entries({k: sorted(v) for k, v in default.items()}, {k: sorted(v) for k, v in tuned.items()})


def slice_cells(cells: pd.DataFrame, found: Entries) -> pd.DataFrame:
    """The cells, of every entry, on the splits where a searched entry finished."""
    tuned = [m for models in found.searched.values() for m in models]
    ok = cells[(cells.status == Status.OK) & cells.model.isin(tuned)]
    splits = ok[agg.SPLIT].drop_duplicates()
    return cells.merge(splits, on=agg.SPLIT)


def _interval(d: np.ndarray) -> tuple[float, float]:
    if len(d) < 2:
        return float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    return float(d.mean()) - half, float(d.mean()) + half


def pairs_table(cells: pd.DataFrame, found: Entries, margin: float = st.MARGIN) -> pd.DataFrame:
    """Per (default, tuned) pair of one model: over the splits both finished, the mean test scores, the
    mean of tuned − default with its 95% t-interval over splits, and the splits where tuned was better,
    level or worse (by more than ``margin``)."""
    ok = cells[(cells.status == Status.OK) & cells.score.notna()]
    wide = ok.pivot_table(index=agg.SPLIT, columns="model", values="score", aggfunc="mean")
    rows = []
    for default, tuned in found.pairs:
        if default not in wide or tuned not in wide:
            continue
        both = wide[[default, tuned]].dropna()
        d = (both[tuned] - both[default]).to_numpy()
        if not len(d):
            continue
        low, high = _interval(d)
        rows.append({"model": default, "tuned": tuned, "splits": len(d), "default": float(both[default].mean()),
                     "tuned_score": float(both[tuned].mean()), "diff": float(d.mean()), "low": low, "high": high,
                     "better": int((d > margin).sum()), "level": int((np.abs(d) <= margin).sum()),
                     "worse": int((d < -margin).sum())})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def gaps(cells: pd.DataFrame, kinds: dict[str, str], found: Entries, family: str) -> pd.DataFrame:
    """Per split of the slice: the family's best entry − the best boosting entry, both at defaults and
    both tuned, each with its standing (one fold: level within the margin, else ahead or behind)."""
    sides = []
    for searched, label in ((False, "default"), (True, "tuned")):
        mine, boosting = found.of_family(kinds, family, searched), found.of_family(kinds, BOOSTING, searched)
        if not mine or not boosting:
            return pd.DataFrame()
        rows = []
        for split, g in cells.groupby(agg.SPLIT, sort=True):
            s = st.standings(g, mine, boosting)
            if len(s):
                rows.append({**dict(zip(agg.SPLIT, split)), **s.iloc[0][["at_n", "attention", "boosting", "diff",
                                                                          "standing"]].to_dict()})
        if not rows:
            return pd.DataFrame()
        side = pd.DataFrame(rows).rename(columns={"attention": "model"})
        side["standing"] = side.standing.str.replace(" (one fold)", "", regex=False)
        sides.append(side.set_index(agg.SPLIT).add_prefix(f"{label}_"))
    return sides[0].join(sides[1], how="inner").reset_index()


def gap_summary(g: pd.DataFrame, label: str) -> dict[str, float | int]:
    """Counts of each standing and the mean gap with its 95% t-interval over the splits."""
    d = g[f"{label}_diff"].to_numpy(dtype=float)
    low, high = _interval(d)
    counts = g[f"{label}_standing"].value_counts()
    return {"n": len(d), "mean": float(d.mean()) if len(d) else float("nan"), "low": low, "high": high,
            **{k: int(counts.get(k, 0)) for k in ("ahead", "level", "behind", "not converged")}}
