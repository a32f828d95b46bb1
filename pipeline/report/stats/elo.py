"""Elo ratings as TabArena computes them: Bradley–Terry strengths from the pairwise task outcomes of
:mod:`pipeline.report.stats.aggregate` (one game per pair per task both models ran, a tie half a win each way),
mean 1000, with a bootstrap interval over tasks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.report.stats.aggregate import ran_mask, task_outcomes

ELO_BASE = 1000.0
ELO_SCALE = 400.0 / np.log(10.0)  # Elo points per unit of log-strength

# TabArena's penalty on the log-strengths (bencheval's ``BT_RIDGE``: the L2 term of its logistic regression
# at C = 1e6): negligible on a real field, it keeps ratings finite where one model beats another on
# every task, and centres them (mean log-strength 0).
BT_RIDGE = 0.5 / (1e6 * np.log(10.0) ** 2)


def bradley_terry(wins: np.ndarray, ridge: float = BT_RIDGE, tol: float = 1e-10) -> np.ndarray:
    """Log-strengths θ (mean 0) maximising the Bradley–Terry likelihood of ``wins[i, j]`` less
    ``ridge · ‖θ‖²``: the estimate TabArena's Elo makes (bencheval; ``tests/report/test_elo_tabarena.py``
    checks the two agree within a point)."""
    return bradley_terry_many(np.asarray(wins, dtype=float)[None], ridge, tol)[0]


def bradley_terry_many(wins: np.ndarray, ridge: float = BT_RIDGE, tol: float = 1e-10) -> np.ndarray:
    """:func:`bradley_terry` of each ``wins[b]`` (shape: draws × models × models), all at once: the
    bootstrap's hundreds of draws take one array operation a Newton step, not one call each. The
    objective is strictly concave, so damped Newton steps converge in a few iterations (a few dozen where
    one model beat another on every task: the ridge alone keeps that strength finite); each draw steps,
    halves its step and stops on its own, as it would alone."""
    w = np.asarray(wins, dtype=float)
    draws, k = w.shape[0], w.shape[-1]
    if k < 2:
        return np.zeros((draws, k))
    n = w + w.transpose(0, 2, 1)
    diagonal = np.arange(k)

    def objective(theta: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d = theta[:, :, None] - theta[:, None, :]
        log_p = -np.logaddexp(0.0, -d)  # log P(i beats j)
        p = np.exp(log_p)
        value = (w[rows] * log_p).sum(axis=(1, 2)) - ridge * (theta * theta).sum(axis=1)
        grad = (w[rows] - n[rows] * p).sum(axis=2) - 2 * ridge * theta
        h = n[rows] * p * (1 - p)
        neg_hess = -h  # minus the Hessian: its diagonal below
        neg_hess[:, diagonal, diagonal] = h.sum(axis=2) - h[:, diagonal, diagonal] + 2 * ridge
        return value, grad, neg_hess

    theta = np.zeros((draws, k))
    value, grad, neg_hess = objective(theta, np.arange(draws))
    active = np.arange(draws)  # the draws still stepping
    for _ in range(200):
        if not len(active):
            break
        step = np.linalg.solve(neg_hess[active], grad[active][:, :, None])[:, :, 0]
        t = np.ones(len(active))
        searching = np.arange(len(active))  # halve the step until the objective does not drop
        while len(searching):
            rows = active[searching]
            new = theta[rows] + t[searching, None] * step[searching]
            new_value, new_grad, new_hess = objective(new, rows)
            took = (new_value >= value[rows] - 1e-12) | (t[searching] < 1e-6)
            kept = rows[took]
            theta[kept], value[kept], grad[kept], neg_hess[kept] = (
                new[took], new_value[took], new_grad[took], new_hess[took])
            t[searching[~took]] /= 2
            searching = searching[~took]
        active = active[np.abs(t[:, None] * step).max(axis=1) >= tol]
    return theta - theta.mean(axis=1, keepdims=True)


@dataclass(frozen=True)
class EloResult:
    table: pd.DataFrame  # model, elo, elo_low, elo_high, n_tasks
    n_bootstrap: int
    level: float


def elo(scores: pd.DataFrame, *, n_bootstrap: int = 200, level: float = 0.95, seed: int = 0,
        ran: pd.DataFrame | None = None) -> EloResult:
    """Bradley–Terry Elo ratings as TabArena computes them (mean 1000, 400 points = 10:1 odds, a tie
    half a win each way, one game per pair per task, only where both models ran it), with a
    percentile confidence interval from resampling tasks with replacement. ``n_tasks``: the tasks each
    model ran. A model that ran no task here played no game: no rating (NaN), and no part in the fit."""
    if scores.empty or len(scores.columns) == 0:
        return EloResult(pd.DataFrame(columns=["model", "elo", "elo_low", "elo_high", "n_tasks"]), 0, level)
    mask = ran_mask(scores, ran)
    idle = [m for m in scores.columns if not mask[m].any()]
    if idle:
        rated = elo(scores.drop(columns=idle), n_bootstrap=n_bootstrap, level=level, seed=seed,
                    ran=mask.drop(columns=idle))
        none = pd.DataFrame({"model": idle, "elo": np.nan, "elo_low": np.nan, "elo_high": np.nan, "n_tasks": 0})
        return EloResult(pd.concat([rated.table, none], ignore_index=True), rated.n_bootstrap, level)
    models = list(scores.columns)
    won, tied, _ = task_outcomes(scores, mask)
    per_task = won + 0.5 * tied  # each task's wins, a tie half a win each way (aggregate.pairwise_wins, per task)
    point = ELO_BASE + ELO_SCALE * bradley_terry(per_task.sum(axis=0))
    rng = np.random.default_rng(seed)
    # how often each draw drew each task (the draws of a loop over them, in its order)
    drawn = np.array([np.bincount(rng.integers(0, len(scores), len(scores)), minlength=len(scores))
                      for _ in range(n_bootstrap)]).reshape(n_bootstrap, len(scores))
    boot = ELO_BASE + ELO_SCALE * bradley_terry_many(np.tensordot(drawn, per_task, axes=1))
    alpha = (1 - level) / 2
    low, high = (np.quantile(boot, [alpha, 1 - alpha], axis=0) if n_bootstrap else (point * np.nan, point * np.nan))
    table = pd.DataFrame({"model": models, "elo": point, "elo_low": low, "elo_high": high,
                          "n_tasks": mask.sum().to_numpy()})
    return EloResult(table.sort_values("elo", ascending=False, ignore_index=True), n_bootstrap, level)
