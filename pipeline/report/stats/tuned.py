"""Tuned beside defaults: where one results file holds a model at its defaults (an entry whose every
cell ran one trial) and searched (an entry of the same registered model and kind whose cells ran
several, such as study-tuned-slice's ``ft_transformer-tuned`` beside study-every-dataset's
``ft_transformer``), the two side by side, and each family's gap to gradient boosting at defaults and
tuned.

Like for like: the gaps compare the same models both ways, the entries at defaults of the models that
were searched against those models' searched entries (a default XGBoost better than the default
CatBoost is not what tuning CatBoost changes). Split by split: a tuned slice runs one fold of a task
whose defaults ran on three, so every figure is over the splits (dataset, split key, size, repeat, fold,
seed) where a searched entry finished, never a task's mean over folds one side did not run. A searched
cell that failed is counted as failed, never dropped. A tuned entry's score is the configuration its
search selected by validation; where a side holds several entries of a family, its best is the one with
the best validation score (:mod:`pipeline.report.stats.standing`). Within the standings' margin is level.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.models.kinds import BOOSTING
from pipeline.records import Status
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import standing as st

PAIR_COLUMNS = ["model", "tuned", "splits", "default", "tuned_score", "diff", "low", "high", "better", "level",
                "worse", "failed"]
NOT_FAILED = (Status.OK.value, Status.MISSING.value)  # a cell with a score, or none yet


@dataclass(frozen=True)
class Entries:
    """The file's entries (report names) by (registered model, kind): at their defaults, and searched."""

    default: dict[tuple[str, str], list[str]]
    searched: dict[tuple[str, str], list[str]]

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """(entry at defaults, searched entry) of each model that has both."""
        return [(d, t) for key in sorted(set(self.default) & set(self.searched))
                for d in self.default[key] for t in self.searched[key]]

    def side(self, family_of_model: Callable[[str], str], family: str, searched: bool) -> list[str]:
        """The paired entries of a family on one side: its searched entries, or the defaults of the models
        that were searched."""
        paired = sorted({t if searched else d for d, t in self.pairs})
        return [m for m in paired if family_of_model(m) == family]


def entries(cells: pd.DataFrame, trials: pd.DataFrame) -> Entries:
    """An entry is searched when some finished cell of it (ok or failed) ran more than one trial, at its
    defaults when it finished cells and none did. ``trials``: ReportData.trials (n_trials per cell)."""
    done = cells[cells.status != Status.MISSING].dropna(subset=["model_name"])
    many = set(trials.cell_id[trials.n_trials > 1]) if len(trials) else set()
    searched = done.cell_id.isin(many).groupby(done.model).any()
    keys = done.groupby("model")[["model_name", "model_kind"]].first()
    default: dict[tuple[str, str], list[str]] = {}
    tuned: dict[tuple[str, str], list[str]] = {}
    for model, r in keys.iterrows():
        side = tuned if searched[model] else default
        side.setdefault((str(r.model_name), str(r.model_kind)), []).append(str(model))
    return Entries({k: sorted(v) for k, v in default.items()}, {k: sorted(v) for k, v in tuned.items()})


def slice_cells(cells: pd.DataFrame, found: Entries) -> pd.DataFrame:
    """The cells, of every entry, on the splits where a searched entry finished (ok or failed)."""
    tuned = [t for _, t in found.pairs]
    done = cells[(cells.status != Status.MISSING) & cells.model.isin(tuned)]
    return cells.merge(done[agg.SPLIT].drop_duplicates(), on=agg.SPLIT)


def interval(d: np.ndarray) -> tuple[float, float]:
    """The 95% t-interval of the mean of ``d`` (NaN for fewer than two values)."""
    if len(d) < 2:
        return float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    return float(d.mean()) - half, float(d.mean()) + half


def pairs_table(cells: pd.DataFrame, found: Entries, margin: float = st.MARGIN) -> pd.DataFrame:
    """Per (default, searched) pair of one model, over the splits where the default has a score and the
    search finished: the mean test scores and tuned − default with its 95% t-interval over the splits both
    scored; the splits where tuned was better, level or worse (by more than ``margin``); and those where the
    search failed."""
    wide = cells.pivot_table(index=agg.SPLIT, columns="model", values="score", aggfunc="mean")
    status = cells.pivot_table(index=agg.SPLIT, columns="model", values="status", aggfunc="first")
    rows = []
    for default, tuned in found.pairs:
        if default not in wide or tuned not in status:
            continue
        base = wide[default].notna() & status[tuned].notna() & (status[tuned] != Status.MISSING)
        failed = int((base & ~status[tuned].isin(NOT_FAILED)).sum())
        both = wide.loc[base, [default, tuned]].dropna()
        d = (both[tuned] - both[default]).to_numpy()
        if not len(d) and not failed:
            continue
        low, high = interval(d)
        rows.append({"model": default, "tuned": tuned, "splits": len(d), "default": float(both[default].mean()),
                     "tuned_score": float(both[tuned].mean()), "diff": float(d.mean()) if len(d) else float("nan"),
                     "low": low, "high": high, "better": int((d > margin).sum()),
                     "level": int((np.abs(d) <= margin).sum()), "worse": int((d < -margin).sum()), "failed": failed})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _side(cells: pd.DataFrame, mine: list[str], boosting: list[str], label: str) -> pd.DataFrame:
    """One side's standing per split: the family's best − the best boosting entry; 'failed' where one
    of them failed there and so no difference exists."""
    rows = []
    for split, g in cells.groupby(agg.SPLIT, sort=True):
        s = st.standings(g, mine, boosting)
        row = dict(zip(agg.SPLIT, split))
        if len(s) and s.standing.iloc[0] != "not compared":
            rows.append({**row, **s.iloc[0][["at_n", "attention", "boosting", "diff", "standing"]].to_dict()})
        elif (g.model.isin(mine + boosting) & ~g.status.isin(NOT_FAILED)).any():
            rows.append({**row, "at_n": float(g.n_train.mean()), "attention": "", "boosting": "",
                         "diff": float("nan"), "standing": "failed"})
    side = pd.DataFrame(rows, columns=[*agg.SPLIT, "at_n", "attention", "boosting", "diff", "standing"])
    side["standing"] = side.standing.str.replace(" (one fold)", "", regex=False)
    return side.rename(columns={"attention": "model"}).set_index(agg.SPLIT).add_prefix(f"{label}_")


def gaps(cells: pd.DataFrame, family_of_model: Callable[[str], str], found: Entries, family: str) -> pd.DataFrame:
    """Per split of the slice: the family's paired entry − the paired boosting entry, at defaults and
    tuned, each with its standing (one fold: level within the margin, else ahead or behind, 'not
    converged' where the one behind was still improving, 'failed' where a searched cell failed)."""
    sides = [(found.side(family_of_model, family, s), found.side(family_of_model, BOOSTING, s)) for s in (False, True)]
    if not all(mine and boosting for mine, boosting in sides):
        return pd.DataFrame()
    default, tuned = (_side(cells, *sides[i], label) for i, label in ((0, "default"), (1, "tuned")))
    out = default.join(tuned, how="inner").reset_index()
    return out if len(out) else pd.DataFrame()


def gap_summary(g: pd.DataFrame, label: str) -> dict[str, float | int]:
    """Counts of each standing, and the mean gap with its 95% t-interval over the splits that read
    ahead, level or behind (as the sample-size page's mean over datasets) both at defaults and tuned: the
    two means cover the same splits."""
    compared = g[g.default_standing.isin(st.COMPARED) & g.tuned_standing.isin(st.COMPARED)]
    d = compared[f"{label}_diff"].to_numpy(dtype=float)
    low, high = interval(d)
    counts = g[f"{label}_standing"].value_counts()
    return {"n": len(d), "mean": float(d.mean()) if len(d) else float("nan"), "low": low, "high": high,
            **{k: int(counts.get(k, 0)) for k in ("ahead", "level", "behind", "not converged", "failed")}}
