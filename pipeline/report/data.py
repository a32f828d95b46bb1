"""What every page is built from: the SQL views of :mod:`pipeline.data.views`, read once on a
read-only connection (as temporary views, so the numbers match ``attnbench query``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.report import aggregate as agg
from pipeline.report import figures as figs
from pipeline.report.answer import family_of


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
    kinds: dict[str, str]  # model → its stored kind: attention | network | boosting | trees | a user's own
    model_names: dict[str, str]  # model (results key) → registered model name
    legacy_kinds: list[str] = field(default_factory=list)  # models whose kind no run stored (files before schema 4)
    # Tuned + ensembled per ok cell (and per family and split) from stored predictions: report/ensembles.py
    ensembles: pd.DataFrame = field(default_factory=pd.DataFrame)

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
            has_predictions = q("SELECT count(*) AS n FROM information_schema.tables "
                                "WHERE table_name = 'predictions'").n.iloc[0] > 0
            if has_predictions:  # files before schema 5 kept none
                ok = "SELECT cell_id FROM current_results WHERE status = 'ok' AND variant IS NULL"
                ens_cells = q("SELECT s.suite, s.dataset, s.sample_size, s.repeat, s.fold, s.seed, s.task_type, "
                              "s.model, s.cell_id FROM scores s WHERE s.status = 'ok'")
                preds = q("SELECT p.cell_id, p.trial_id, t.trial_index, p.part, p.n_rows, p.n_cols, p.proba, p.value "
                          "FROM predictions p JOIN trials t USING (trial_id) "
                          f"WHERE p.cell_id IN ({ok}) AND t.status IN ('ok', 'stopped')")
                targets = q(f"SELECT cell_id, part, y FROM targets WHERE cell_id IN ({ok})")
        c = data.cells
        data.model_names = dict(zip(c.model, c.model_name)) if len(c) else {}
        stored = c.dropna(subset=["model_kind"]).groupby("model").model_kind.first().to_dict() if len(c) else {}
        data.legacy_kinds = sorted(set(data.model_names) - set(stored))
        data.kinds = {m: stored.get(m) or legacy_kind(data.model_names[m]) for m in data.model_names}
        if has_predictions:
            from pipeline.report.ensembles import ensembles

            data.ensembles = ensembles(ens_cells, preds, targets, {m: data.family(m) for m in data.kinds})
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
        """The model's family: its stored kind in words."""
        return family_of(self.kinds.get(model))

    def style(self) -> figs.Style:
        return figs.Style(self.models, self.kinds)

    def model_notes(self) -> dict[str, str]:
        """Each model's declared departures from the shared protocol (RealMLP's own training loop, the
        forests' lack of rungs), from today's registry; '' for a model it does not hold."""
        from pipeline.models.registry import REGISTRY

        return {m: getattr(REGISTRY.get(str(self.model_names.get(m))), "protocol", "") for m in self.models}


def legacy_kind(model_name: str) -> str:
    """The kind of a model no run stored a kind for (a file before schema 4): today's registry's, else
    'unknown' (never a guess)."""
    from pipeline.models.registry import REGISTRY

    info = REGISTRY.get(str(model_name))
    return info.kind if info is not None else "unknown"


def size_label(size: str) -> str:
    return "all training rows" if size == "all" else f"{size} training rows"


def per_model(df: pd.DataFrame, how: dict[str, str], data: ReportData) -> pd.DataFrame:
    """The per-model rows shown on the compute and memory pages: plain means (or sums) over the view's
    (dataset, sample size) rows; docs/QUERIES.md gives the same numbers in SQL. ``coverage`` counts
    the cells measured (ok) against the cells expected."""
    out = df.groupby("model").agg(**{k: (k, v) for k, v in how.items() if k in df}, n_tasks=("dataset", "size"),
                                  n_ok=("n_ok", "sum")).reset_index()
    expected = data.cells.groupby("model").size()
    out["coverage"] = [f"{int(k)}/{int(expected.get(m, k))} cells" for m, k in zip(out.model, out.n_ok)]
    return out
