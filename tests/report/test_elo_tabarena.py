"""Our Elo is TabArena's: the same ratings as bencheval's (TabArena's own implementation, from the package
index) on the same task tables, within a point, with the same conventions (mean 1000, 400 points =
10:1 odds, a tie half a win each way, one game per pair per task, only where both models ran it)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.report.stats import elo


def tabarena_elo(scores: pd.DataFrame, ran: pd.DataFrame | None = None) -> pd.Series:
    """bencheval's point ratings for the task table (error = 1 − score; a model that did not run a task has
    no row there, so it plays no game on it)."""
    from bencheval.elo_utils import EloHelper

    ran = ran if ran is not None else scores.notna() | scores.isna()
    rows = [{"method": m, "task": str(t), "metric_error": 1.0 - scores.loc[t, m]}
            for t in scores.index for m in scores.columns if ran.loc[t, m]]
    helper = EloHelper(method_col="method", task_col="task", error_col="metric_error")
    battles = helper.convert_results_to_battles(pd.DataFrame(rows))
    return helper.compute_mle_elo(battles)


def ours(scores: pd.DataFrame, ran: pd.DataFrame | None = None) -> pd.Series:
    return elo.elo(scores, n_bootstrap=0, ran=ran).table.set_index("model").elo


@pytest.mark.parametrize("seed", range(4))
def test_the_same_ratings_as_tabarena_on_random_task_tables(seed: int):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 0.05, 6)
    scores = pd.DataFrame(np.clip(0.8 + strength + rng.normal(0, 0.05, (30, 6)), 0, 1).round(3),
                          columns=[f"m{i}" for i in range(6)], index=[f"t{i}" for i in range(30)])
    theirs = tabarena_elo(scores)
    mine = ours(scores)
    assert (mine - theirs.reindex(mine.index)).abs().max() < 1.0, pd.DataFrame({"ours": mine, "tabarena": theirs})
    assert theirs.std() > 20  # a real spread, not a flat field


def test_the_same_ratings_with_ties_and_models_that_did_not_run_every_task():
    rng = np.random.default_rng(7)
    scores = pd.DataFrame(rng.choice([0.7, 0.75, 0.8, 0.85], (25, 5)), columns=list("abcde"),
                          index=[f"t{i}" for i in range(25)])  # four values: many exact ties
    ran = pd.DataFrame(rng.random((25, 5)) > 0.25, index=scores.index, columns=scores.columns)
    ran.iloc[:, 0] = True
    mine = ours(scores, ran)
    theirs = tabarena_elo(scores, ran)
    assert (mine - theirs.reindex(mine.index)).abs().max() < 1.0, pd.DataFrame({"ours": mine, "tabarena": theirs})


def test_a_model_that_loses_every_game_is_finite_and_far_below_in_both():
    scores = pd.DataFrame({"good": [0.9, 0.8, 0.85, 0.7], "mid": [0.8, 0.85, 0.8, 0.75],
                           "broken": [0.1, 0.1, 0.2, 0.1]}, index=list("wxyz"))
    mine, theirs = ours(scores), tabarena_elo(scores)
    assert np.isfinite(mine).all() and mine["broken"] < mine["mid"] - 1000
    assert (mine - theirs.reindex(mine.index)).abs().max() < 1.0
