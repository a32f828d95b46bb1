"""What every page is built from: the SQL views of :mod:`pipeline.report.views`, read once on a
read-only connection (as temporary views, so the numbers match ``attnbench query``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pipeline.data.store import Store
from pipeline.report import aggregate as agg
from pipeline.report import figures as figs
from pipeline.report.answer import FAMILY
from pipeline.report.views import temporary_views


@dataclass
class ReportData:
    """Everything the pages need, read once from the views."""

    cells: pd.DataFrame
    leaderboard: pd.DataFrame
    curves: pd.DataFrame
    tuning: pd.DataFrame
    compute: pd.DataFrame
    memory: pd.DataFrame
    failures: pd.DataFrame
    runs: pd.DataFrame
    datasets: pd.DataFrame
    attention: pd.DataFrame
    trials: pd.DataFrame
    configured: pd.DataFrame  # the scores view with each cell's selected configuration (the claims' ablations)
    superseded: pd.DataFrame  # results kept as history, counted per (suite, model, size, why)
    kinds: dict[str, str]  # model → 'gbdt' | 'attention' | 'torch'
    model_names: dict[str, str]  # model (results key) → registered model name

    @classmethod
    def load(cls, db: str | Path) -> ReportData:
        store = Store(db, create=False)
        with store.connect(read_only=True, prepare=temporary_views) as con:

            def q(sql: str) -> pd.DataFrame:
                return con.execute(sql).df()

            data = cls(
                cells=q("SELECT * FROM expected_cells"),
                leaderboard=q("SELECT * FROM leaderboard ORDER BY suite, dataset, sample_size, model"),
                curves=q("SELECT * FROM learning_curves"),
                tuning=q("SELECT * FROM tuning_curves"),
                compute=q("SELECT * FROM compute"),
                memory=q("SELECT * FROM memory"),
                failures=q("SELECT * FROM failures ORDER BY level, suite, dataset, model, sample_size, fold"),
                runs=q("SELECT * FROM runs ORDER BY started_at DESC"),
                datasets=q("SELECT dataset, source, task_type, n_rows, n_features, n_numeric, n_categorical, "
                           "n_classes, openml_id, openml_task_id, has_official_folds FROM datasets ORDER BY dataset"),
                attention=q("SELECT a.cell_id, a.dataset, a.model, a.features, a.map, r.suite, r.sample_size, r.fold, "
                            "r.repeat, r.seed, r.n_train FROM attention_maps a JOIN current_results r USING (cell_id) "
                            "WHERE r.status = 'ok'"),
                configured=q("SELECT s.*, r.best_config FROM scores s JOIN current_results r USING (cell_id)"),
                trials=q("SELECT r.suite, r.model, r.sample_size, r.cell_id, count(t.trial_id) AS n_trials, "
                         "count(t.trial_id) FILTER (WHERE t.status NOT IN ('ok', 'stopped')) AS n_failed, "
                         "count(t.trial_id) FILTER (WHERE t.status = 'stopped') AS n_stopped, "
                         "sum(t.seconds) AS seconds FROM current_results r LEFT JOIN trials t USING (cell_id) GROUP BY ALL"),
                superseded=q("SELECT suite, model, sample_size, why, count(*) AS n, max(finished_at) AS last "
                             "FROM superseded GROUP BY ALL ORDER BY suite, model, sample_size, why"),
                kinds={}, model_names={},
            )
        data.model_names = dict(zip(data.cells.model, data.cells.model_name)) if len(data.cells) else {}
        data.kinds = {m: model_kind(n) for m, n in data.model_names.items()}
        return data

    @property
    def models(self) -> list[str]:
        return sorted(self.kinds)

    @property
    def sizes(self) -> list[str]:
        return agg.size_order(self.cells.sample_size) if len(self.cells) else []

    @property
    def headline_size(self) -> str | None:
        """'all' when it was run, else the largest size."""
        return self.sizes[-1] if self.sizes else None

    @property
    def multi_suite(self) -> bool:
        return self.cells.suite.nunique() > 1 if len(self.cells) else False

    def task_label(self, suite: str, dataset: str) -> str:
        return f"{suite} / {dataset}" if self.multi_suite else str(dataset)

    def family(self, model: str) -> str:
        """attention, MLP or boosting."""
        kind = self.kinds.get(model, "")
        return FAMILY.get(kind, kind)

    def style(self) -> figs.Style:
        return figs.Style(self.models, self.kinds)


def model_kind(model_name: str) -> str:
    from pipeline.models.registry import REGISTRY

    info = REGISTRY.get(str(model_name))
    if info is None:
        return "torch"
    return "gbdt" if info.family == "gbdt" else ("attention" if info.attention else "torch")


def size_label(size: str) -> str:
    return "all training rows" if size == "all" else f"{size} training rows"
