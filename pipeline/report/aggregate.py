"""Aggregates behind the report: ranks, normalised scores, win rates, Elo, critical differences,
crossover sizes and tuning curves. Pure pandas/numpy/scipy on frames read from the SQL views.

The unit of comparison is a *task*: one (suite, dataset, sample_size). A model's score on a task is
its mean test score over the splits (folds × subset seeds) it finished; a task where it finished none
is *failed* (or *missing*, when nothing was recorded). Failed and missing tasks are never dropped: a
model loses them (ranked last, normalised score 0, a loss against every model that has a score), and
:func:`coverage` counts them so that every page can show them beside the aggregate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

TASK = ["suite", "dataset", "sample_size"]
SPLIT = [*TASK, "repeat", "fold", "seed"]
ELO_BASE = 1000.0
ELO_SCALE = 400.0 / np.log(10.0)  # Elo points per unit of log-strength


# ---------------------------------------------------------------------------------------- tasks
def task_scores(cells: pd.DataFrame) -> pd.DataFrame:
    """Task × model matrix of mean scores over ok splits; NaN where a model has no ok split.

    ``cells`` has the columns of the ``expected_cells`` view (one row per expected cell, ``score``
    NULL unless the cell is ok).
    """
    if cells.empty:
        return pd.DataFrame()
    ok = cells[cells.status == "ok"]
    wide = ok.pivot_table(index=TASK, columns="model", values="score", aggfunc="mean")
    tasks = pd.MultiIndex.from_frame(cells[TASK].drop_duplicates().sort_values(TASK))
    models = sorted(cells.model.unique())
    return wide.reindex(index=tasks, columns=models).astype(float)


def coverage(cells: pd.DataFrame) -> pd.DataFrame:
    """Per model: cells ok/failed/missing, and tasks fully ok, partly ok, failed or missing."""
    if cells.empty:
        return pd.DataFrame(columns=["model", "cells", "cells_ok", "cells_failed", "cells_missing",
                                     "tasks", "tasks_ok", "tasks_partial", "tasks_failed", "tasks_missing"])
    c = cells.assign(ok=cells.status == "ok", missing=cells.status == "missing")
    c["failed"] = ~c.ok & ~c.missing
    per_task = c.groupby([*TASK, "model"]).agg(n=("ok", "size"), ok=("ok", "sum"), failed=("failed", "sum"))
    per_task["full"] = per_task.ok == per_task.n
    per_task["partial"] = (per_task.ok > 0) & ~per_task.full
    per_task["task_failed"] = (per_task.ok == 0) & (per_task.failed > 0)
    per_task["task_missing"] = (per_task.ok == 0) & (per_task.failed == 0)
    t = per_task.groupby("model").agg(tasks=("n", "size"), tasks_ok=("full", "sum"), tasks_partial=("partial", "sum"),
                                      tasks_failed=("task_failed", "sum"), tasks_missing=("task_missing", "sum"))
    k = c.groupby("model").agg(cells=("ok", "size"), cells_ok=("ok", "sum"), cells_failed=("failed", "sum"),
                               cells_missing=("missing", "sum"))
    return k.join(t).reset_index().astype({col: int for col in [*k.columns, *t.columns]})


# ----------------------------------------------------------------------------------------- ranks
def ranks(scores: pd.DataFrame) -> pd.DataFrame:
    """Rank of each model on each task, 1 = best; ties share the mean rank; NaN ranks below every score.

    >>> ranks(pd.DataFrame({"a": [0.9, 0.7], "b": [0.8, 0.7], "c": [np.nan, 0.6]})).values.tolist()
    [[1.0, 2.0, 3.0], [1.5, 1.5, 3.0]]
    """
    # Rounded so that sums equal on paper (0.75 + 0.06 and 0.74 + 0.07) tie, as they do in SQL.
    filled = scores.round(12).fillna(-np.inf).to_numpy()
    r = stats.rankdata(-filled, method="average", axis=1)
    return pd.DataFrame(r, index=scores.index, columns=scores.columns)


def normalized_scores(scores: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Each task's scores rescaled so the best model is 1 and the baseline 0, clipped to [0, 1].

    The baseline is the worst model with a score on the task (min-max scaling, as in Grinsztajn et
    al., 2022), or the named model's score. Failed and missing tasks score 0. A task where the
    best equals the baseline gives 1 to every model with a score.
    """
    best = scores.max(axis=1)
    base = scores.min(axis=1) if baseline is None else scores[baseline]
    span = (best - base).where(lambda s: s > 0)
    norm = scores.sub(base, axis=0).div(span, axis=0).clip(0.0, 1.0)
    ties = span.isna() & best.notna()
    norm.loc[ties] = scores.loc[ties].notna().astype(float)
    return norm.fillna(0.0)


# -------------------------------------------------------------------------------------- win rate
def pairwise_wins(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Wins (ties count ½) of the row model over the column model, and the number of tasks they met.

    A model with a score beats one without; tasks where neither has a score are not counted.
    """
    x = scores.round(12).to_numpy(dtype=float)  # as in ranks(): equal sums tie
    has = ~np.isnan(x)
    filled = np.where(has, x, -np.inf)
    a, b = filled[:, :, None], filled[:, None, :]
    met = has[:, :, None] | has[:, None, :]
    wins = ((a > b) + 0.5 * (a == b)) * met
    n = met.sum(axis=0).astype(float)
    np.fill_diagonal(n, 0)
    w = wins.sum(axis=0)
    np.fill_diagonal(w, 0)
    cols = scores.columns
    return pd.DataFrame(w, index=cols, columns=cols), pd.DataFrame(n, index=cols, columns=cols)


def win_rates(scores: pd.DataFrame) -> pd.DataFrame:
    """Share of the tasks two models met that the row model won; NaN on the diagonal."""
    wins, n = pairwise_wins(scores)
    return wins / n.where(n > 0)


# ------------------------------------------------------------------------------------------- Elo
def bradley_terry(wins: np.ndarray, prior: float = 1.0, tol: float = 1e-10) -> np.ndarray:
    """Log-strengths θ (mean 0) maximising the Bradley–Terry likelihood of ``wins[i, j]``.

    ``prior`` adds that many virtual draws (½ win each way) to every pair that met, as in BayesElo:
    it keeps the estimate finite when one model beats another every time. The log-likelihood is
    concave, so damped Newton steps (θ_0 fixed at 0 for identifiability) converge in a few
    iterations; the bootstrap calls this hundreds of times, where a general optimiser is too slow.
    """
    w = np.asarray(wins, dtype=float)
    w = w + 0.5 * prior * ((w + w.T) > 0)
    k = len(w)
    if k < 2:
        return np.zeros(k)
    n = w + w.T

    def loglik(theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        d = theta[:, None] - theta[None, :]
        p = 1.0 / (1.0 + np.exp(-d))  # P(i beats j)
        ll = float((w * np.log(np.clip(p, 1e-300, None))).sum())
        grad = (w - n * p).sum(axis=1)
        h = n * p * (1 - p)
        return ll, grad, np.diag(h.sum(axis=1)) - h  # the last: the negative Hessian

    theta = np.zeros(k)
    ll, grad, neg_hess = loglik(theta)
    for _ in range(100):
        step = np.zeros(k)
        step[1:] = np.linalg.lstsq(neg_hess[1:, 1:], grad[1:], rcond=None)[0]
        t = 1.0
        while True:  # halve the step until the likelihood does not drop
            new = theta + t * step
            new_ll, new_grad, new_hess = loglik(new)
            if new_ll >= ll - 1e-12 or t < 1e-6:
                break
            t /= 2
        theta, ll, grad, neg_hess = new, new_ll, new_grad, new_hess
        if np.abs(t * step).max() < tol:
            break
    return theta - theta.mean()


@dataclass(frozen=True)
class EloResult:
    table: pd.DataFrame  # model, elo, elo_low, elo_high, n_tasks
    n_bootstrap: int
    level: float


def elo(scores: pd.DataFrame, *, n_bootstrap: int = 200, level: float = 0.95, prior: float = 1.0,
        seed: int = 0) -> EloResult:
    """Bradley–Terry Elo ratings (mean 1000, 400 points = 10:1 odds) from pairwise task outcomes,
    with a percentile confidence interval from resampling tasks with replacement."""
    models = list(scores.columns)
    if scores.empty or len(models) == 0:
        return EloResult(pd.DataFrame(columns=["model", "elo", "elo_low", "elo_high", "n_tasks"]), 0, level)
    wins, _ = pairwise_wins(scores)
    point = ELO_BASE + ELO_SCALE * bradley_terry(wins.to_numpy(), prior)
    rng = np.random.default_rng(seed)
    boot = np.empty((n_bootstrap, len(models)))
    for b in range(n_bootstrap):
        sample = scores.iloc[rng.integers(0, len(scores), len(scores))]
        boot[b] = ELO_BASE + ELO_SCALE * bradley_terry(pairwise_wins(sample)[0].to_numpy(), prior)
    alpha = (1 - level) / 2
    low, high = (np.quantile(boot, [alpha, 1 - alpha], axis=0) if n_bootstrap else (point * np.nan, point * np.nan))
    table = pd.DataFrame({"model": models, "elo": point, "elo_low": low, "elo_high": high,
                          "n_tasks": scores.notna().sum().to_numpy()})
    return EloResult(table.sort_values("elo", ascending=False, ignore_index=True), n_bootstrap, level)


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


def critical_difference(scores: pd.DataFrame, alpha: float = 0.05) -> CriticalDifference:
    """Friedman test over tasks and Nemenyi critical difference of the models' average ranks."""
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
def crossover(curves: pd.DataFrame, challengers: list[str], incumbents: list[str],
              best_label: str = "best attention") -> pd.DataFrame:
    """Per dataset and challenger: the training size from which it beats the best incumbent for good.

    ``curves`` has the columns of the ``learning_curves`` view. At each size the best incumbent is the
    incumbent (boosting) model with the highest mean score. The crossover is the smallest size where
    the challenger's mean is above it there and at every larger size where both have a score; None
    ("never") if it is not above at the largest such size. ``behind_at`` is the size just before.
    A row ``best_label`` compares the best challenger at each size (when there are several).
    ``at_size`` is the size the verdict rests on (the crossover's; else the largest compared), with
    the two models compared there (``challenger_at``, ``incumbent_at``): what a paired test checks.
    """
    rows = []
    cols = ["suite", "dataset", "model", "crossover_n", "behind_at", "n_sizes", "ahead_everywhere", "at_size",
            "challenger_at", "incumbent_at"]
    if curves.empty or not challengers or not incumbents:
        return pd.DataFrame(columns=cols)
    for (suite, dataset), g in curves.groupby(["suite", "dataset"], sort=True):
        wide = g.pivot_table(index="sample_size", columns="model", values="score_mean", aggfunc="mean")
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
            ahead = (diff > 0).to_numpy()
            cross: float | None
            behind: float | None
            if not ahead[-1]:
                cross, behind = None, float(sizes.iloc[-1])
                at = diff.index[-1]
            else:
                first = len(ahead) - int(np.argmin(ahead[::-1])) if not ahead.all() else 0
                cross = float(sizes.iloc[first])
                behind = float(sizes.iloc[first - 1]) if first > 0 else None
                at = diff.index[first]
            who = wide.loc[at, chal_cols].idxmax() if m == best_label else m
            rows.append({"suite": suite, "dataset": dataset, "model": m, "crossover_n": cross, "behind_at": behind,
                         "n_sizes": len(diff), "ahead_everywhere": bool(ahead.all()), "at_size": at,
                         "challenger_at": who, "incumbent_at": wide.loc[at, inc_cols].idxmax()})
    return pd.DataFrame(rows, columns=cols)


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


def normalized_by_size(cells: pd.DataFrame, sizes: list[str]) -> pd.DataFrame:
    """Mean normalised score (:func:`normalized_scores`) per training size and model, over that size's
    tasks; ``n_scored`` of ``n_tasks`` is the coverage. Sizes are labels, 'all' one of them: the
    datasets' full sizes differ, so 'all' is not a number of rows."""
    rows = []
    for size in sizes:
        scores = task_scores(cells[cells.sample_size == size])
        if scores.empty:
            continue
        norm = normalized_scores(scores)
        for m in scores.columns:
            rows.append({"sample_size": size, "model": m, "normalized_score": float(norm[m].mean()),
                         "n_scored": int(scores[m].notna().sum()), "n_tasks": len(scores)})
    return pd.DataFrame(rows, columns=["sample_size", "model", "normalized_score", "n_scored", "n_tasks"])


def improvability(scores: pd.DataFrame) -> pd.Series:
    """Per model, the mean over tasks of how much lower the best model's error is than its own, as a
    share of its own (TabArena's improvability; error = 1 − accuracy, or 1 − R²). 0 = best on every
    task; a failed or missing task counts 1."""
    err = 1.0 - scores
    best = err.min(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        imp = err.sub(best, axis=0).div(err.where(err > 0), axis=0)
    imp = imp.where(err > 0, 0.0).where(scores.notna(), 1.0).clip(0.0, 1.0)
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
