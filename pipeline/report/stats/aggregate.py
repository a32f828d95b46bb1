"""Aggregates behind the report: ranks, normalised scores, win rates, critical differences, crossover
sizes and tuning curves (Elo ratings: :mod:`pipeline.report.stats.elo`). Pure pandas/numpy/scipy on frames read from the SQL views.

The unit of comparison is a *task*: one (dataset, split_key, sample_size), whichever suite ran it. A
model's score on a task is its mean test score over the splits (folds × subset seeds) it finished.
A model that ran a task and finished none of it has *failed* the task: it is never dropped, it loses
the task (ranked last among the task's models, normalised score 0, a loss against every model that has
a score), and :func:`coverage` counts it. A model that did not run a task is left out of that task
altogether (no rank, no normalised score, no win or loss, no Elo game), never scored as a loss: one
never planned on it, and one planned whose cells have no record yet (*missing*: a study still running
in chunks, or stopped), which :func:`coverage` counts apart. Every per-model figure is over the tasks
the model ran, and says how many of the table's tasks that is; every comparison of two models counts
only the tasks both ran.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.records import Status

TASK = ["dataset", "split_key", "sample_size"]
SPLIT = [*TASK, "repeat", "fold", "seed"]


# ---------------------------------------------------------------------------------------- tasks
def task_scores(cells: pd.DataFrame, column: str = "score") -> pd.DataFrame:
    """Task × model matrix of mean scores over ok splits; NaN where a model has no ok split (failed,
    missing, or not run: :func:`task_ran` tells the last apart). ``column="val_score"``: the same of the
    validation scores (what picks a group's best, :mod:`pipeline.report.stats.pick`).

    ``cells`` has the columns of the ``expected_cells`` view (one row per expected cell, ``score``
    NULL unless the cell is ok).
    """
    if cells.empty:
        return pd.DataFrame()
    ok = cells[cells.status == Status.OK]
    wide = ok.pivot_table(index=TASK, columns="model", values=column, aggfunc="mean")
    tasks = pd.MultiIndex.from_frame(cells[TASK].drop_duplicates().sort_values(TASK))
    models = sorted(cells.model.unique())
    return wide.reindex(index=tasks, columns=models).astype(float)


def task_ran(cells: pd.DataFrame) -> pd.DataFrame:
    """Task × model: True where the model ran the task, i.e. at least one of its cells there has a
    record (ok or failed), aligned with :func:`task_scores`. False where it was not planned, and where
    every planned cell is still missing: not run yet is not a loss."""
    if cells.empty:
        return pd.DataFrame()
    tasks = pd.MultiIndex.from_frame(cells[TASK].drop_duplicates().sort_values(TASK))
    models = sorted(cells.model.unique())
    recorded = cells.assign(ran=cells.status != Status.MISSING)
    ran = recorded.pivot_table(index=TASK, columns="model", values="ran", aggfunc="any")
    return ran.reindex(index=tasks, columns=models).fillna(False).astype(bool)


def tasks_planned(cells: pd.DataFrame) -> pd.Series:
    """Per model: the tasks it is planned on, run or not yet (a model waiting on a task in a study in
    chunks has not run fewer tasks); what picks the models that stand for a family or lead a table."""
    return cells[["model", *TASK]].drop_duplicates().groupby("model").size()


def ran_mask(scores: pd.DataFrame, ran: pd.DataFrame | None) -> pd.DataFrame:
    """``ran`` aligned with ``scores``; every model ran every task when it is None."""
    if ran is None:
        return pd.DataFrame(True, index=scores.index, columns=scores.columns)
    return ran.reindex(index=scores.index, columns=scores.columns).fillna(False).astype(bool)


def common_tasks(ran: pd.DataFrame) -> pd.Index:
    """The tasks every model of ``ran`` ran."""
    return ran.index[ran.all(axis=1)] if len(ran) else ran.index


def coverage(cells: pd.DataFrame) -> pd.DataFrame:
    """Per model: cells ok/failed/missing; the tasks it ran (:func:`task_ran`) of all ``tasks_total``,
    and of those the tasks fully ok, partly failed, partly run (ok so far, the rest missing) or failed;
    and apart, ``tasks_missing``: tasks it is planned on with no record yet (not among ``tasks``)."""
    cols = ["model", "cells", "cells_ok", "cells_failed", "cells_missing", "tasks", "tasks_ok", "tasks_partial",
            "tasks_unfinished", "tasks_failed", "tasks_missing", "tasks_total"]
    if cells.empty:
        return pd.DataFrame(columns=cols)
    c = cells.assign(ok=cells.status == Status.OK, missing=cells.status == Status.MISSING)
    c["failed"] = ~c.ok & ~c.missing
    per_task = c.groupby([*TASK, "model"]).agg(n=("ok", "size"), ok=("ok", "sum"), failed=("failed", "sum"),
                                               missing=("missing", "sum"))
    per_task["ran"] = per_task.missing < per_task.n
    per_task["full"] = per_task.ok == per_task.n
    per_task["partial"] = (per_task.ok > 0) & (per_task.failed > 0)
    per_task["unfinished"] = (per_task.ok > 0) & (per_task.failed == 0) & (per_task.missing > 0)
    per_task["task_failed"] = (per_task.ok == 0) & (per_task.failed > 0)
    per_task["task_missing"] = ~per_task.ran
    t = per_task.groupby("model").agg(tasks=("ran", "sum"), tasks_ok=("full", "sum"), tasks_partial=("partial", "sum"),
                                      tasks_unfinished=("unfinished", "sum"), tasks_failed=("task_failed", "sum"),
                                      tasks_missing=("task_missing", "sum"))
    k = c.groupby("model").agg(cells=("ok", "size"), cells_ok=("ok", "sum"), cells_failed=("failed", "sum"),
                               cells_missing=("missing", "sum"))
    out = k.join(t).reset_index()
    out["tasks_total"] = len(c[TASK].drop_duplicates())
    return out.astype({col: int for col in [*k.columns, *t.columns, "tasks_total"]})[cols]


def ran_text(tasks: int, total: int) -> str:
    """'ran 1 of 2 tasks', or 'all 2 tasks'."""
    return f"all {total} task{'s' if total != 1 else ''}" if tasks == total else f"ran {tasks} of {total} tasks"


# ----------------------------------------------------------------------------------------- ranks
def ranks(scores: pd.DataFrame, ran: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rank of each model on each task among the models that ran it, 1 = best; ties share the mean
    rank; a model that ran the task with no score ranks below every score; NaN where it did not run.

    >>> ranks(pd.DataFrame({"a": [0.9, 0.7], "b": [0.8, 0.7], "c": [np.nan, 0.6]})).values.tolist()
    [[1.0, 2.0, 3.0], [1.5, 1.5, 3.0]]
    """
    r_mask = ran_mask(scores, ran).to_numpy()
    # Rounded so that sums equal on paper (0.75 + 0.06 and 0.74 + 0.07) tie, as they do in SQL.
    filled = np.where(r_mask, scores.round(12).fillna(-np.inf).to_numpy(), np.nan)
    r = stats.rankdata(-filled, method="average", axis=1, nan_policy="omit")
    return pd.DataFrame(np.where(r_mask, r, np.nan), index=scores.index, columns=scores.columns)


def normalized_scores(scores: pd.DataFrame, baseline: str | None = None,
                      ran: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each task's scores rescaled so the best model is 1 and the baseline 0, clipped to [0, 1].

    The baseline is the worst model with a score on the task (min-max scaling, as in Grinsztajn et
    al., 2022), or the named model's score. A model that ran the task with no score gets 0; one that
    did not run it NaN (left out of its mean). A task where the best equals the baseline gives 1 to
    every model with a score.
    """
    mask = ran_mask(scores, ran)
    s = scores.where(mask)
    best = s.max(axis=1)
    base = s.min(axis=1) if baseline is None else s[baseline]
    span = (best - base).where(lambda v: v > 0)
    norm = s.sub(base, axis=0).div(span, axis=0).clip(0.0, 1.0)
    ties = span.isna() & best.notna()
    norm.loc[ties] = s.loc[ties].notna().astype(float)
    return norm.fillna(0.0).where(mask)


# -------------------------------------------------------------------------------------- win rate
@dataclass(frozen=True)
class Record:
    """Row model against column model over the tasks both ran: won, tied, lost (each a matrix)."""

    won: pd.DataFrame
    tied: pd.DataFrame
    lost: pd.DataFrame

    @property
    def n(self) -> pd.DataFrame:
        return self.won + self.tied + self.lost

    def text(self, a: str, b: str) -> str:
        """'won 2, tied 1, lost 0 of 3 tasks' (a against b)."""
        w, t, lo = (int(m.loc[a, b]) for m in (self.won, self.tied, self.lost))
        n = w + t + lo
        return f"won {w}, tied {t}, lost {lo} of {n} task{'s' if n != 1 else ''}"


def task_outcomes(scores: pd.DataFrame, ran: pd.DataFrame | None = None, margin: float = 0.0
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task (axis 0), did the row model win, tie or lose against the column model (booleans, tasks × models
    × models): scores within ``margin`` of each other tie (0: equal ones only); a model with a score beats one
    that ran the task without one; where neither has a score, or one did not run the task, they did not meet."""
    x = scores.round(12).to_numpy(dtype=float)  # as in ranks(): equal sums tie
    r = ran_mask(scores, ran).to_numpy()
    has = ~np.isnan(x)
    filled = np.where(has, x, -np.inf)
    with np.errstate(invalid="ignore"):  # -inf − -inf: two without a score, never met
        gap = filled[:, :, None] - filled[:, None, :]
    met = (has[:, :, None] | has[:, None, :]) & r[:, :, None] & r[:, None, :]
    met[:, np.arange(x.shape[1]), np.arange(x.shape[1])] = False  # no model meets itself
    return (gap > margin) & met, (np.abs(gap) <= margin) & met, (gap < -margin) & met


def pairwise_record(scores: pd.DataFrame, ran: pd.DataFrame | None = None, margin: float = 0.0) -> Record:
    """Won / tied / lost of each model against each other over the tasks both ran (:func:`task_outcomes`)."""
    cols = scores.columns
    return Record(*(pd.DataFrame(m.sum(axis=0).astype(float), index=cols, columns=cols)
                    for m in task_outcomes(scores, ran, margin)))


def pairwise_wins(scores: pd.DataFrame, ran: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Wins (ties count ½) of the row model over the column model, and the number of tasks they met
    (both ran, at least one with a score)."""
    rec = pairwise_record(scores, ran)
    return rec.won + 0.5 * rec.tied, rec.n


def win_rates(scores: pd.DataFrame, ran: pd.DataFrame | None = None) -> pd.DataFrame:
    """Share of the tasks two models met that the row model won (ties ½); NaN on the diagonal."""
    wins, n = pairwise_wins(scores, ran)
    return wins / n.where(n > 0)


# --------------------------------------------------------------------------- critical difference
@dataclass(frozen=True)
class CriticalDifference:
    avg_ranks: pd.Series  # model → average rank, best first
    cd: float  # Nemenyi critical difference of average ranks
    n_tasks: int
    friedman_stat: float
    friedman_p: float
    alpha: float
    cliques: list[list[str]]  # maximal groups whose ranks differ by less than cd


def nemenyi_cd(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi's critical difference for k models on n tasks (Demšar, 2006): q_α √(k(k+1)/6n).

    q_α is the studentized range quantile over √2; for α = 0.05 and k = 3 it is 2.343.
    """
    if k < 2 or n < 1:
        return float("nan")
    q = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n)))


def critical_difference(scores: pd.DataFrame, alpha: float = 0.05, ran: pd.DataFrame | None = None
                        ) -> CriticalDifference:
    """Friedman test over tasks and Nemenyi critical difference of the models' average ranks, over the
    tasks every model ran (the test needs each task to rank every model); a model that ran no task here
    is left out, rather than leave no common task."""
    mask = ran_mask(scores, ran)
    mask = mask.loc[:, mask.any()]
    scores = scores.loc[common_tasks(mask), mask.columns]
    r = ranks(scores)
    avg = r.mean().sort_values()
    k, n = r.shape[1], r.shape[0]
    stat, p = float("nan"), float("nan")
    if k >= 3 and n >= 2:
        with np.errstate(divide="ignore", invalid="ignore"):
            res = stats.friedmanchisquare(*[r[c].to_numpy() for c in r.columns])
        stat, p = float(res.statistic), float(res.pvalue)
    cd = nemenyi_cd(k, n, alpha)
    names = list(avg.index)
    vals = avg.to_numpy()
    cliques: list[list[str]] = []
    for i in range(len(names)):
        j = i
        while j + 1 < len(names) and vals[j + 1] - vals[i] < cd:
            j += 1
        group = names[i:j + 1]
        if len(group) > 1 and not any(set(group) <= set(c) for c in cliques):
            cliques.append(group)
    return CriticalDifference(avg, cd, n, stat, p, alpha, cliques)


# -------------------------------------------------------------------------------- sample size
def normalized_by_size(cells: pd.DataFrame, sizes: list[str]) -> pd.DataFrame:
    """Mean normalised score (:func:`normalized_scores`) per training size and model, over the tasks of
    that size the model ran (``n_ran`` of ``n_tasks``; ``n_scored`` of them with a score). Sizes are
    labels, 'all' one of them: the datasets' full sizes differ, so 'all' is not a number of rows."""
    rows = []
    for size in sizes:
        here = cells[cells.sample_size == size]
        scores = task_scores(here)
        if scores.empty:
            continue
        ran = task_ran(here)
        norm = normalized_scores(scores, ran=ran)
        for m in scores.columns:
            rows.append({"sample_size": size, "model": m, "normalized_score": float(norm[m].mean()),
                         "n_scored": int(scores[m].notna().sum()), "n_ran": int(ran[m].sum()),
                         "n_tasks": len(scores)})
    return pd.DataFrame(rows, columns=["sample_size", "model", "normalized_score", "n_scored", "n_ran", "n_tasks"])


def improvability(scores: pd.DataFrame, ran: pd.DataFrame | None = None) -> pd.Series:
    """Per model, the mean over the tasks it ran of how much lower the best model's error is than its
    own, as a share of its own (TabArena's improvability; error = 1 − accuracy, or 1 − R²). 0 = best
    on every task; a failed or missing task counts 1."""
    mask = ran_mask(scores, ran)
    err = 1.0 - scores.where(mask)
    best = err.min(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        imp = err.sub(best, axis=0).div(err.where(err > 0), axis=0)
    imp = imp.where(err > 0, 0.0).where(scores.notna(), 1.0).clip(0.0, 1.0).where(mask)
    return imp.mean()


def wilson(wins: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a win rate (ties count ½ a win); NaN for no matches."""
    if n <= 0:
        return float("nan"), float("nan")
    z = float(stats.norm.ppf(0.5 + level / 2))
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# ------------------------------------------------------------------------------------- tuning
def tuning_summary(tc: pd.DataFrame, level: float = 0.8) -> pd.DataFrame:
    """Mean normalised best-validation score after n trials, per (sample_size, model, n_trials), and
    the mean normalised test score of the configuration selected (by validation) after n trials.

    ``tc`` has the columns of the ``tuning_curves`` view. For each trial order (shuffle) the score is
    averaged over the cells that ran at least n trials; the curve is the mean over orders and the band
    the central ``level`` quantiles over orders (Grinsztajn et al., 2022). ``seconds`` is the mean
    compute spent on the first n trials; ``n_cells`` the cells that reached n trials.
    """
    cols = ["sample_size", "model", "n_trials", "score", "score_low", "score_high", "test", "test_low", "test_high",
            "seconds", "n_cells"]
    if tc.empty:
        return pd.DataFrame(columns=cols)
    if "best_test_norm" not in tc:
        tc = tc.assign(best_test_norm=float("nan"))
    per = tc.groupby(["sample_size", "model", "n_trials", "shuffle"]).agg(
        s=("best_val_norm", "mean"), t=("best_test_norm", "mean"), sec=("cum_seconds", "mean"),
        n=("cell_id", "nunique"))
    q = (1 - level) / 2
    out = per.groupby(["sample_size", "model", "n_trials"]).agg(
        score=("s", "mean"), score_low=("s", lambda v: v.quantile(q)), score_high=("s", lambda v: v.quantile(1 - q)),
        test=("t", "mean"), test_low=("t", lambda v: v.quantile(q)), test_high=("t", lambda v: v.quantile(1 - q)),
        seconds=("sec", "mean"), n_cells=("n", "max"))
    return out.reset_index()[cols]


# ------------------------------------------------------------------------------------ attention
UNIFORM_TV = 0.05  # a map whose rows are this close to uniform (total variation) says nothing


@dataclass(frozen=True)
class Uniformity:
    """How far an attention map is from attending to every feature alike."""

    n_keys: int
    low: float  # smallest weight
    high: float  # largest weight
    ratio_low: float  # smallest weight ÷ its row's uniform share
    ratio_high: float
    tv: float  # mean over rows of the total-variation distance to uniform (0 = uniform, → 1 = one key)
    row_sum: float = 1.0  # mean attention a row gives the features (below 1 when a [CLS] token takes some)

    @property
    def uniform_weight(self) -> float:
        return self.row_sum / self.n_keys

    @property
    def uniform(self) -> bool:
        return self.tv < UNIFORM_TV


def uniformity(mat: np.ndarray) -> Uniformity:
    """Rows are query features, columns key features; each row is rescaled to sum to 1 (a model with a
    [CLS] token spreads part of its attention elsewhere)."""
    m = np.asarray(mat, dtype=float)
    k = m.shape[1]
    rows = m / np.where(m.sum(axis=1, keepdims=True) > 0, m.sum(axis=1, keepdims=True), 1.0)
    ratio = rows * k
    tv = 0.5 * np.abs(rows - 1.0 / k).sum(axis=1)
    return Uniformity(n_keys=k, low=float(np.nanmin(m)), high=float(np.nanmax(m)), ratio_low=float(np.nanmin(ratio)),
                      ratio_high=float(np.nanmax(ratio)), tv=float(np.nanmean(tv)),
                      row_sum=float(np.nanmean(m.sum(axis=1))))


def uniform_ratio(mat: np.ndarray) -> np.ndarray:
    """Each weight as a multiple of its row's uniform share (1 = uniform)."""
    m = np.asarray(mat, dtype=float)
    sums = m.sum(axis=1, keepdims=True)
    return m / np.where(sums > 0, sums, 1.0) * m.shape[1]


# ----------------------------------------------------------------------------------- helpers
def size_order(sizes: pd.Series | list[str]) -> list[str]:
    """Sample-size labels in increasing order, 'all' last."""
    uniq = list(dict.fromkeys(sizes))
    return sorted(uniq, key=lambda s: (s == "all", int(s) if str(s).isdigit() else 0, str(s)))


def pareto_front(x: pd.Series, y: pd.Series) -> pd.Series:
    """True where no other point has x lower-or-equal and y higher-or-equal, one strictly
    (x a cost, y a score)."""
    xs, ys = x.to_numpy(dtype=float), y.to_numpy(dtype=float)
    keep = []
    for i in range(len(xs)):
        dominated = ((xs <= xs[i]) & (ys >= ys[i]) & ((xs < xs[i]) | (ys > ys[i]))).any()
        keep.append(not dominated and not (np.isnan(xs[i]) or np.isnan(ys[i])))
    return pd.Series(keep, index=x.index)
