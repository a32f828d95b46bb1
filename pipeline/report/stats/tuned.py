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
the best validation score on the task (:mod:`pipeline.report.stats.pick`). Every verdict is
:func:`pipeline.report.stats.verdicts.decide`'s (the rule the ``standings`` view computes), on the splits of
the slice: a task run on one fold is undetermined, its difference (and where it lies against the margin,
:attr:`Decision.lean`) data beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.models.kinds import BOOSTING
from pipeline.records import Status, Verdict
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import pick
from pipeline.report.stats.verdicts import COMPARED, MARGIN, Decision, decide

PAIR_COLUMNS = ["model", "tuned", "splits", "default", "tuned_score", "diff", "low", "high", "better", "within",
                "worse", "failed", "verdict", "decision"]
GAP_COUNTS = (Verdict.AHEAD, Verdict.EQUIVALENT, Verdict.BEHIND, Verdict.UNDETERMINED, Verdict.NOT_CONVERGED)
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
    """An entry is searched when some finished cell of it (ok or failed) tried more than one configuration (its
    searcher's suggestions: a trial lost to the infrastructure and run again is one), at its defaults when it
    finished cells and none did. ``trials``: ReportData.trials (n_suggestions per cell)."""
    done = cells[cells.status != Status.MISSING].dropna(subset=["model_name"])
    many = set(trials.cell_id[trials.n_suggestions > 1]) if len(trials) else set()
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
    """The 95% t-interval of the mean of ``d`` (NaN for fewer than two values): for values from independent
    units (tasks of different datasets), never for the splits of one dataset (:func:`decide` corrects those)."""
    if len(d) < 2:
        return float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    return float(d.mean()) - half, float(d.mean()) + half


def pairs_table(cells: pd.DataFrame, found: Entries, folds: int = 2, margin: float = MARGIN) -> pd.DataFrame:
    """Per (default, searched) pair of one model, over the splits where the default has a score and the
    search finished: the mean test scores and tuned − default with its verdict and 95% corrected interval over
    the splits both scored (:func:`decide`, ``folds`` the k of the designs: the smallest of the datasets', which
    corrects most); the splits where tuned was better, within ``margin`` or worse; and those where the search
    failed."""
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
        dec = decide(d, folds=folds, margin=margin)
        rows.append({"model": default, "tuned": tuned, "splits": len(d), "default": float(both[default].mean()),
                     "tuned_score": float(both[tuned].mean()), "diff": dec.diff, "low": dec.low, "high": dec.high,
                     "better": int((d > margin).sum()), "within": int((np.abs(d) <= margin).sum()),
                     "worse": int((d < -margin).sum()), "failed": failed, "verdict": dec.verdict, "decision": dec})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def pair(cells: pd.DataFrame, mine: list[str], boosting: list[str], folds: int) -> tuple[str, str, Decision] | None:
    """On one task's cells: ``mine``'s best against ``boosting``'s best (each picked by mean validation score
    there among the entries with a test score), split by split (a fold of a repeat, its seeds averaged), as
    :func:`decide` rules; None where a side has no score."""
    ok = cells[(cells.status == Status.OK) & cells.score.notna()]
    means = ok.groupby("model")[["score", "val_score"]].mean()
    picks = []
    for group in (mine, boosting):
        cols = [m for m in sorted(group) if m in means.index]
        if not cols:
            return None
        test, val = means.loc[cols, ["score"]].T, means.loc[cols, ["val_score"]].T.set_axis(["score"])
        picks.append(pick.by_validation(test, val, cols)[0].iloc[0])
    a, b = picks
    per_split = ok.pivot_table(index=["repeat", "fold"], columns="model", values="score", aggfunc="mean")
    bound = ok.groupby("model").epochs_bound.any() if "epochs_bound" in ok else pd.Series(dtype=bool)
    d = (per_split[a] - per_split[b]).dropna().to_numpy()
    return a, b, decide(d, folds=folds, bound=(bool(bound.get(a, False)), bool(bound.get(b, False))))


def _side(cells: pd.DataFrame, mine: list[str], boosting: list[str], label: str,
          folds: Callable[[str, str], int]) -> pd.DataFrame:
    """One side's verdict per task of the slice: the family's best − the best boosting entry over the
    task's splits; 'failed' where one of them failed there and so no difference exists."""
    rows = []
    for task, g in cells.groupby(agg.TASK, sort=True):
        row = dict(zip(agg.TASK, task))
        found = pair(g, mine, boosting, folds(task[0], task[1]))
        if found is not None and found[2].verdict is not Verdict.NOT_COMPARED:
            a, b, dec = found
            rows.append({**row, "at_n": float(g.n_train.mean()), "model": a, "boosting": b, "diff": dec.diff,
                         "standing": dec.verdict, "decision": dec})
        elif (g.model.isin(mine + boosting) & ~g.status.isin(NOT_FAILED)).any():
            rows.append({**row, "at_n": float(g.n_train.mean()), "model": "", "boosting": "",
                         "diff": float("nan"), "standing": FAILED, "decision": None})
    side = pd.DataFrame(rows, columns=[*agg.TASK, "at_n", "model", "boosting", "diff", "standing", "decision"])
    return side.set_index(agg.TASK).add_prefix(f"{label}_")


FAILED = "failed"  # a searched cell failed on the task: no difference to decide


def gaps(cells: pd.DataFrame, family_of_model: Callable[[str], str], found: Entries, family: str,
         folds: Callable[[str, str], int] = lambda dataset, split_key: 2) -> pd.DataFrame:
    """Per task of the slice: the family's paired entry − the paired boosting entry, at defaults and tuned,
    each with its verdict over the task's splits (:func:`decide`; ``folds(dataset, split_key)`` the design's
    k; one fold: undetermined), 'failed' where a searched cell failed)."""
    sides = [(found.side(family_of_model, family, s), found.side(family_of_model, BOOSTING, s)) for s in (False, True)]
    if not all(mine and boosting for mine, boosting in sides):
        return pd.DataFrame()
    default, tuned = (_side(cells, *sides[i], label, folds) for i, label in ((0, "default"), (1, "tuned")))
    out = default.join(tuned, how="inner").reset_index()
    return out if len(out) else pd.DataFrame()


def gap_summary(g: pd.DataFrame, label: str) -> dict[str, float | int]:
    """Counts of each verdict (and failed), where the one-fold ones lean (past the margin ahead, within it,
    past it behind: ``lean_ahead``, ``lean_within``, ``lean_behind``), and the mean gap with its 95% t-interval
    over the tasks (different datasets: independent) whose verdict has a difference (``COMPARED``) both at
    defaults and tuned: the two means cover the same tasks."""
    compared = g[g.default_standing.isin(COMPARED) & g.tuned_standing.isin(COMPARED)]
    d = compared[f"{label}_diff"].to_numpy(dtype=float)
    low, high = interval(d)
    said = g[f"{label}_standing"]
    one = [x for x in g[f"{label}_decision"] if isinstance(x, Decision) and x.one_split]
    leans = [x.lean for x in one]
    return {"n": len(d), "mean": float(d.mean()) if len(d) else float("nan"), "low": low, "high": high,
            **{str(v): int((said == v).sum()) for v in GAP_COUNTS}, FAILED: int((said == FAILED).sum()),
            "one_fold": len(one), "lean_ahead": leans.count(Verdict.AHEAD),
            "lean_within": leans.count(Verdict.EQUIVALENT), "lean_behind": leans.count(Verdict.BEHIND)}


def gap_words(s: dict[str, float | int]) -> str:
    """A side's verdicts over the slice's tasks (:func:`gap_summary`), and where the one-fold ones lean."""
    text = (", ".join(f"{v} {s[str(v)]}" for v in GAP_COUNTS[:4])
            + "".join(f", {k} {s[k]}" for k in (str(Verdict.NOT_CONVERGED), FAILED) if s[k]))
    if s["one_fold"]:
        text += (f"; of the {s['one_fold']} on one fold, past +{MARGIN:g}: {s['lean_ahead']}, within: "
                 f"{s['lean_within']}, past −{MARGIN:g}: {s['lean_behind']}")
    return text
