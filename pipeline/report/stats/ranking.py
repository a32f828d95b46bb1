"""A training size's ranking over its tasks: per model its average rank, normalised score, Elo with its
interval, improvability, tuning gain, cost and budget flags, with the win rates and the critical
difference behind them (the Accuracy page's tables per size, the overview's headline leaderboard)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pipeline.records import Status
from pipeline.report.data import ReportData
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats.elo import EloResult
from pipeline.report.stats.elo import elo as elo_ratings
from pipeline.report.stats.standing import MARGIN

ELO_BOOTSTRAP = 200  # task resamples behind each Elo interval


@dataclass
class Ranking:
    """The aggregates of one sample size, over its tasks."""

    size: str
    scores: pd.DataFrame  # task × model
    summary: pd.DataFrame  # one row per model
    win_rates: pd.DataFrame
    matches: pd.DataFrame
    elo: EloResult
    cd: agg.CriticalDifference
    ran: pd.DataFrame  # task × model: True where the model ran the task (agg.task_ran)
    hardware_note: str = ""  # what † on a model's timings means (ReportData.hardware_note)
    other_hardware: frozenset[str] = frozenset()  # the models whose timings another machine took
    in_context: frozenset[str] = frozenset()  # the in-context models (their family says so)

    @property
    def fewer(self) -> frozenset[str]:
        """The models planned on fewer of the size's tasks than the others: listed and drawn after them."""
        return frozenset(self.summary.model[self.summary.fewer_tasks])

    @property
    def uneven(self) -> bool:
        """Some model did not run every task: its figures rest on fewer tasks than another's."""
        return bool(len(self.ran)) and not bool(self.ran.to_numpy().all())


def searched_cells(data: ReportData) -> set[str]:
    """The cells whose search scored more than one configuration: only there is a tuned result other than
    the default (the first trial), so only there is tuned − default a comparison."""
    t = data.trials
    return set(t.cell_id[t.n_configs > 1]) if len(t) else set()


def ranking(data: ReportData, size: str) -> Ranking:
    cells = data.cells[data.cells.sample_size == size]
    scores = agg.task_scores(cells)
    ran = agg.task_ran(cells)
    cov = agg.coverage(cells).set_index("model")
    r = agg.ranks(scores, ran)
    norm = agg.normalized_scores(scores, ran=ran)
    wins, n = agg.pairwise_wins(scores, ran)
    elo = elo_ratings(scores, n_bootstrap=ELO_BOOTSTRAP, ran=ran)
    summary = pd.DataFrame({"model": scores.columns, "avg_rank": r.mean().to_numpy(),
                            "normalized_score": norm.mean().to_numpy(),
                            "tasks_scored": scores.notna().sum().to_numpy()})
    summary = summary.merge(elo.table.drop(columns="n_tasks"), on="model").join(cov, on="model")
    summary["family"] = summary.model.map(data.family)
    summary["improvability"] = summary.model.map(agg.improvability(scores, ran))
    ok = cells[cells.status == Status.OK]
    per_model = cells.groupby("model").agg(epochs_bound=("epochs_bound", "sum"), search_bound=("search_bound", "sum"),
                                           no_better=("no_better_than_constant", "sum"))
    per_model = per_model.join(ok.groupby("model")[["train_s_per_1k", "predict_s_per_1k"]].mean())
    searched = ok[ok.cell_id.isin(searched_cells(data))]
    default = searched.pivot_table(index=agg.TASK, columns="model", values="default_score", aggfunc="mean")
    tuned = searched.pivot_table(index=agg.TASK, columns="model", values="score", aggfunc="mean")
    gain = (tuned - default.reindex_like(tuned))
    per_model["tuning_gain"] = gain.mean()
    per_model["tuning_helped"] = (gain > MARGIN).sum()  # by more than the verdicts' margin: closer is no gain
    per_model["tuning_compared"] = gain.notna().sum()
    summary = summary.join(per_model, on="model")
    counts = ["epochs_bound", "search_bound", "no_better", "tuning_helped", "tuning_compared"]  # none where nothing finished
    summary[counts] = summary[counts].fillna(0).astype(int)
    # The models that are planned on the most of the size's tasks first: a rank over fewer tasks is not set above them;
    # the critical difference compares those (one that ran a task of eight would leave it one common task).
    planned = summary.model.map(agg.tasks_planned(cells))
    summary["fewer_tasks"] = planned < planned.max()
    full = summary.model[~summary.fewer_tasks].tolist()
    summary = summary.sort_values(["fewer_tasks", "avg_rank"], ignore_index=True)
    return Ranking(size, scores, summary, wins / n.where(n > 0), n, elo,
                    agg.critical_difference(scores[full], ran=ran[full]), ran, data.hardware_note(),
                    frozenset(data.other_hardware), data.in_context)
