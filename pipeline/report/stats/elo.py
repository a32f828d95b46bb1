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
    checks the two agree within a point). The objective is strictly concave, so damped Newton steps
    converge in a few iterations; the bootstrap calls this hundreds of times, where a general
    optimiser is slower.
    """
    w = np.asarray(wins, dtype=float)
    k = len(w)
    if k < 2:
        return np.zeros(k)
    n = w + w.T

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        d = theta[:, None] - theta[None, :]
        log_p = -np.logaddexp(0.0, -d)  # log P(i beats j)
        p = np.exp(log_p)
        value = float((w * log_p).sum()) - ridge * float(theta @ theta)
        grad = (w - n * p).sum(axis=1) - 2 * ridge * theta
        h = n * p * (1 - p)
        return value, grad, np.diag(h.sum(axis=1)) - h + 2 * ridge * np.eye(k)  # the last: minus the Hessian

    theta = np.zeros(k)
    value, grad, neg_hess = objective(theta)
    for _ in range(200):
        step = np.linalg.solve(neg_hess, grad)
        t = 1.0
        while True:  # halve the step until the objective does not drop
            new = theta + t * step
            new_value, new_grad, new_hess = objective(new)
            if new_value >= value - 1e-12 or t < 1e-6:
                break
            t /= 2
        theta, value, grad, neg_hess = new, new_value, new_grad, new_hess
        if np.abs(t * step).max() < tol:
            break
    return theta - theta.mean()


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
    boot = np.empty((n_bootstrap, len(models)))
    for b in range(n_bootstrap):
        pick = rng.integers(0, len(scores), len(scores))
        drawn = np.bincount(pick, minlength=len(scores))  # how often each task was drawn
        boot[b] = ELO_BASE + ELO_SCALE * bradley_terry(np.tensordot(drawn, per_task, axes=1))
    alpha = (1 - level) / 2
    low, high = (np.quantile(boot, [alpha, 1 - alpha], axis=0) if n_bootstrap else (point * np.nan, point * np.nan))
    table = pd.DataFrame({"model": models, "elo": point, "elo_low": low, "elo_high": high,
                          "n_tasks": mask.sum().to_numpy()})
    return EloResult(table.sort_values("elo", ascending=False, ignore_index=True), n_bootstrap, level)
