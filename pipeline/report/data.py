"""What every page is built from: the SQL views of :mod:`pipeline.data.views`, read once on a
read-only connection (as temporary views, so the numbers match ``attnbench query``)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.data.standings import standings_sql
from pipeline.data.store import ACROSS_TABLE, Store
from pipeline.data.views import temporary_views
from pipeline.models.kinds import family_of
from pipeline.records import SCORED, Status, sql_list
from pipeline.report import figures as figs
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats.traits import dataset_traits

# The state words this module's SQL compares, rendered from the enums (pipeline.records).
OK, SCORED_IN = Status.OK.sql, sql_list(SCORED)


def dataset_anchor(dataset: str, split_key: str) -> str:
    """The id of a dataset's row on the sample-size page (the overview links to it): its name made safe,
    and a short hash of name and split key, so that two names that read alike stay apart."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", str(dataset)).strip("-")[:40]
    return f"ds-{slug}-{hashlib.sha1(f'{dataset}|{split_key}'.encode()).hexdigest()[:6]}"

NOT_APPLICABLE = ["dataset", "sample_size", "model", "why"]


# The order of the cell-level frames: a cell's split, then its model, then its id (unique).
CELL_ORDER = "dataset, split_key, sample_size, repeat, fold, seed, model, cell_id"

# Three of the frames, as one query each: ReportData.load reads them with the rest, read_frames alone.
DATASETS = ("SELECT dataset, source, task_type, n_rows, n_features, n_numeric, n_categorical, n_classes, openml_id, "
            "openml_task_id, has_official_folds FROM datasets ORDER BY dataset")
ATTENTION = ("SELECT a.cell_id, a.dataset, r.model, a.features, a.map, r.suite, r.split_key, r.sample_size, r.fold, "
             f"r.repeat, r.seed, r.n_train FROM attention_maps a JOIN current_results r USING (cell_id) WHERE r.status = {OK} "
             "ORDER BY a.cell_id")
# The datasets each model entry's plan holds per training size (what a chunked study has not run yet shows
# against it: report.stats.architectures.per_entry's ``planned``).
PLANNED = "SELECT model, sample_size, count(DISTINCT dataset) AS datasets FROM plan GROUP BY ALL ORDER BY ALL"
CONFIGURED = ("SELECT s.*, r.best_config FROM scores s JOIN current_results r USING (cell_id) "
              "WHERE s.cell_id IN (SELECT cell_id FROM compared_cells) ORDER BY s.cell_id")


def read_frames(db: str | Path, *queries: str) -> list[pd.DataFrame]:
    """Some of the frames (``DATASETS``, ``ATTENTION``, ``CONFIGURED``), read as ReportData.load reads them,
    without the rest: for what needs only these."""
    with Store(db, create=False).connect(read_only=True, prepare=temporary_views) as con:
        return [con.execute(sql).df() for sql in queries]


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
    model_families: dict[str, str] = field(default_factory=dict)  # model → its kind in words, what the pages group by
    # model → the other hardware its timings were measured on (not the latest run's machine): a shipped
    # reference's, or another cluster's merged in; the pages mark those timings †
    other_hardware: dict[str, str] = field(default_factory=dict)
    timed_runs: pd.DataFrame = field(default_factory=pd.DataFrame)  # (model, run_id) of every ok cell's result
    # Tuned + ensembled per ok cell (and per family and split) from stored predictions: report/stats/ensembles.py
    ensembles: pd.DataFrame = field(default_factory=pd.DataFrame)
    traits: pd.DataFrame = field(default_factory=pd.DataFrame)  # each dataset's characteristics: report/stats/traits.py
    # (dataset, sample_size, model, why): cells left out of the plans as past a model's declared limits
    not_applicable: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=NOT_APPLICABLE))
    in_context: frozenset[str] = frozenset()  # the in-context models (no training loop)
    # planned cells left out of every mean, rank and cost: on splits only some of their task's models planned
    # (unshared_cells, counted per suite, model, dataset and size)
    unshared: pd.DataFrame = field(default_factory=pd.DataFrame)
    # Every pair's verdict (the standings view): what every page, sentence and count reads its verdicts from
    standings: pd.DataFrame = field(default_factory=pd.DataFrame)
    designs: pd.DataFrame = field(default_factory=pd.DataFrame)  # each dataset's k of k-fold (the designs view)
    planned: pd.DataFrame = field(default_factory=pd.DataFrame)  # PLANNED: the datasets per entry and size
    # the across_datasets table's fits that belong to the data now (report/stats/across.py; empty where none)
    across: pd.DataFrame = field(default_factory=pd.DataFrame)

    @classmethod
    def load(cls, db: str | Path) -> ReportData:
        """Every frame in a fixed row order, whatever order a view returns its rows in (DuckDB reads in
        parallel): the same file makes the same report, to the last digit of a float summed in pandas."""
        store = Store(db, create=False)
        with store.connect(read_only=True, prepare=temporary_views) as con:

            def q(sql: str) -> pd.DataFrame:
                return con.execute(sql).df()

            data = cls(
                cells=q(f"SELECT * FROM compared_cells ORDER BY {CELL_ORDER}"),
                unshared=q("SELECT suite, model, dataset, sample_size, count(*) AS n, min(models_on_split) AS models_on_split, "
                           "min(models_on_task) AS models_on_task FROM unshared_cells GROUP BY ALL ORDER BY ALL"),
                leaderboard=q("SELECT * FROM leaderboard ORDER BY dataset, split_key, sample_size, model"),
                curves=q("SELECT * FROM learning_curves ORDER BY dataset, split_key, sample_size, model"),
                tuning=q(f"SELECT * FROM tuning_curves ORDER BY {CELL_ORDER}, shuffle, trial_index"),
                compute=q("SELECT * FROM compute ORDER BY dataset, split_key, sample_size, model"),
                memory=q("SELECT * FROM memory ORDER BY dataset, split_key, sample_size, model"),
                failures=q("SELECT * FROM failures ORDER BY level, dataset, split_key, model, sample_size, repeat, fold, id"),
                # each run's cost (a chunk of a long study is a run): its wall time, and its trials' seconds
                runs=q("SELECT r.*, r.finished_at - r.started_at AS wall, "
                       "(SELECT sum(t.seconds) FROM trials t WHERE t.run_id = r.run_id) AS trial_seconds "
                       "FROM runs r ORDER BY r.started_at DESC, r.run_id"),
                datasets=q(DATASETS),
                attention=q(ATTENTION),
                configured=q(CONFIGURED),
                trials=q("SELECT r.suite, r.dataset, r.split_key, r.model, r.sample_size, r.cell_id, "
                         "count(t.trial_id) AS n_trials, count(DISTINCT t.suggestion) AS n_suggestions, "
                         # configurations a search scored (a trial lost to the infrastructure and run again
                         # is one configuration, not two)
                         f"count(DISTINCT t.suggestion) FILTER (WHERE t.status IN {SCORED_IN}) AS n_configs, "
                         f"count(t.trial_id) FILTER (WHERE t.status NOT IN {SCORED_IN}) AS n_failed, "
                         f"count(t.trial_id) FILTER (WHERE t.status = {Status.STOPPED.sql}) AS n_stopped, "
                         "sum(t.seconds) AS seconds FROM current_results r LEFT JOIN trials t USING (cell_id) GROUP BY ALL "
                         "ORDER BY r.cell_id"),
                superseded=q("SELECT suite, model, sample_size, why, count(*) AS n, max(finished_at) AS last "
                             "FROM superseded GROUP BY ALL ORDER BY suite, model, sample_size, why"),
                kinds={}, model_names={},
            )
            # a file before schema 4 stored no kinds: its models' families are the registry's, as below
            # (every expected cell's model: the standings view reads them all, not only the compared ones)
            every = q("SELECT DISTINCT model, model_name, model_kind FROM expected_cells")
            names = dict(zip(every.model, every.model_name)) if len(every) else {}
            unkinded = sorted(set(names) - set(every.dropna(subset=["model_kind"]).model))
            standings = (f"({standings_sql({m: legacy_kind(names[m]) for m in unkinded})})" if unkinded
                         else "standings")
            data.standings = q(f"SELECT * FROM {standings} ORDER BY dataset, split_key, n_train, sample_size, model, versus")
            data.designs = q("SELECT * FROM designs ORDER BY dataset, split_key")
            data.planned = q(PLANNED)
            if q(f"SELECT count(*) AS n FROM information_schema.tables WHERE table_name = '{ACROSS_TABLE}'").n.iloc[0]:
                from pipeline.report.stats.across import current

                data.across = current(data.standings, q(f"SELECT * FROM {ACROSS_TABLE} ORDER BY ALL"))
            timed = q(f"SELECT DISTINCT model, run_id FROM current_results WHERE status = {OK} ORDER BY ALL")
            names = q("SELECT DISTINCT suite, model_key, model FROM plan ORDER BY ALL")  # the report's name of each entry
            data.traits = dataset_traits(con, sorted(set(data.cells.dataset)) if len(data.cells) else [])
            has_predictions = q("SELECT count(*) AS n FROM information_schema.tables "
                                "WHERE table_name = 'predictions'").n.iloc[0] > 0
            if has_predictions:  # files before schema 5 kept none
                ok = f"SELECT cell_id FROM current_results WHERE status = {OK} AND variant IS NULL"
                ens_cells = q("SELECT s.suite, s.dataset, s.split_key, s.sample_size, s.repeat, s.fold, s.seed, s.task_type, "
                              f"s.model, s.cell_id FROM scores s WHERE s.status = {OK} "
                              "AND s.cell_id IN (SELECT cell_id FROM compared_cells) ORDER BY s.cell_id")
                preds = q("SELECT p.cell_id, p.trial_id, t.trial_index, p.part, p.n_rows, p.n_cols, p.proba, p.value "
                          "FROM predictions p JOIN trials t USING (trial_id) "
                          f"WHERE p.cell_id IN ({ok}) AND t.status IN {SCORED_IN} ORDER BY p.cell_id, t.trial_index, p.part")
                targets = q(f"SELECT cell_id, part, y FROM targets WHERE cell_id IN ({ok}) ORDER BY cell_id, part")
        c = data.cells
        # sorted by name: a group's order breaks ties in validation (report/stats/pick.py), never the views' row order
        data.model_names = dict(sorted(zip(c.model, c.model_name))) if len(c) else {}
        stored = c.dropna(subset=["model_kind"]).groupby("model").model_kind.first().to_dict() if len(c) else {}
        data.legacy_kinds = sorted(set(data.model_names) - set(stored))
        data.kinds = {m: stored.get(m) or legacy_kind(data.model_names[m]) for m in data.model_names}
        data.model_families = {m: family_of(k) for m, k in data.kinds.items()}
        data.timed_runs, data.other_hardware = timed, other_hardware(data.runs, timed)
        data.not_applicable, data.in_context = plan_notes(data.runs, data.cells, names)
        if has_predictions:
            from pipeline.report.stats.ensembles import ensembles

            data.ensembles = ensembles(ens_cells, preds, targets, data.model_families)
        return data

    def folds(self, dataset: str, split_key: str) -> int:
        """The k of the k-fold design a dataset was split by (the designs view; 2 where it has no row)."""
        d = self.designs
        hit = d[(d.dataset == dataset) & (d.split_key == split_key)] if len(d) else d
        return int(hit.folds.iloc[0]) if len(hit) else 2

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
    def suites(self) -> list[str]:
        """The suites whose plans these results belong to (a label: one split is one task, whichever
        suite ran it)."""
        if not len(self.cells):
            return []
        return sorted({s for label in self.cells.suite.dropna().unique() for s in str(label).split(", ")})

    @property
    def dataset_splits(self) -> list[tuple[str, str]]:
        """Each (dataset, split_key): a dataset split under one protocol."""
        if not len(self.cells):
            return []
        pairs = self.cells[["dataset", "split_key"]].drop_duplicates()  # in pandas: a Python loop over every cell
        return sorted(pairs.itertuples(index=False, name=None))

    def task_label(self, dataset: str, split_key: str) -> str:
        """The dataset's name; where the file holds it under several protocols (split keys), with the
        split key's first characters."""
        keys = {k for d, k in self.dataset_splits if d == dataset}
        return str(dataset) if len(keys) <= 1 else f"{dataset} · split {str(split_key).removeprefix('suite:')[:8]}"

    def family(self, model: str) -> str:
        """The model's family: its stored kind in words."""
        return self.model_families.get(model, family_of(None))

    def family_text(self, model: str) -> str:
        """The family as a table shows it: an in-context model's says so."""
        return self.family(model) + (" · in-context" if model in self.in_context else "")

    def style(self) -> figs.Style:
        return figs.Style(self.models, self.model_families)

    def timed(self, model: str) -> str:
        """The model's name where its timings sit beside others': marked † when another machine took them."""
        return f"{model} †" if model in self.other_hardware else model

    def hardware_note(self) -> str:
        """What † means on this report, naming the machines; '' when every timing is from one machine."""
        if not self.other_hardware:
            return ""
        home = machine(home_run(self.runs, self.timed_runs).hardware)[1]
        return ("† timed on other hardware than this report's latest run (" + home + "): "
                + "; ".join(f"{m} on {where}" for m, where in sorted(self.other_hardware.items()))
                + ". Its seconds and memory are that machine's, not comparable one for one with the others'.")

    def unshared_note(self) -> str:
        """Which planned cells no comparison reads, as splits only some of the models that ran their task
        planned; '' when those planned the same splits on every task."""
        u = self.unshared
        if u.empty:
            return ""
        n, tasks = int(u.n.sum()), len(u[["dataset", "sample_size"]].drop_duplicates())
        def count(k: int, word: str) -> str:
            return f"{k} {word}{'s' if k != 1 else ''}"

        per_suite = "; ".join(f"{suite}: {count(int(g.n.sum()), 'cell')} of {count(g.model.nunique(), 'model')}"
                              for suite, g in u.groupby("suite", sort=True))
        return (f"Compared on shared splits: on {tasks} task{'s' if tasks != 1 else ''} the models that ran "
                f"{'them' if tasks != 1 else 'it'} planned "
                f"different splits (a suite run on fewer folds beside another, merged into one file), so {n} planned "
                f"cell{'s' if n != 1 else ''} on splits only some of them planned ({per_suite}) are "
                "left out of every mean, rank and cost, so each model's mean on a task covers the same splits as "
                "the others'; a verdict reads every split its two models both finished. The query SELECT * FROM "
                "unshared_cells lists them.")

    def model_notes(self) -> dict[str, str]:
        """Each model's declared departures from the shared protocol (RealMLP's own training loop, the
        forests' lack of rungs), from today's registry; '' for a model it does not hold."""
        from pipeline.models.registry import REGISTRY

        return {m: getattr(REGISTRY.get(str(self.model_names.get(m))), "protocol", "") for m in self.models}


def plan_notes(runs: pd.DataFrame, cells: pd.DataFrame, names: pd.DataFrame) -> tuple[pd.DataFrame, frozenset[str]]:
    """From each suite's latest run (its plan; runs newest first): the cells it left out as past a
    model's declared limits, on this report's tasks, and its in-context models; each under the name
    the report gives the model (``names``: the plan's suite label, model_key and model: ``mlp [suite-b]``
    where two suites plan different entries under one key). A model left out on some folds of a task
    and planned on others keeps its row, saying so."""
    if "plan_notes" not in runs or cells.empty:  # files before plan notes
        return pd.DataFrame(columns=NOT_APPLICABLE), frozenset()
    suites = {s for label in cells.suite.dropna().unique() for s in str(label).split(", ")}
    named = {(s, k): m for label, k, m in zip(names.suite, names.model_key, names.model) for s in str(label).split(", ")}
    rows, in_context = [], set()
    for r in runs.drop_duplicates("suite").itertuples(index=False):
        if r.suite not in suites or not isinstance(r.plan_notes, str):
            continue
        notes = json.loads(r.plan_notes)
        in_context |= {named.get((r.suite, k), k) for k in notes.get("in_context", [])}
        rows += [{"dataset": na["dataset"], "sample_size": size, "model": named.get((r.suite, na["model"]), na["model"]),
                  "why": na["why"]} for na in notes.get("not_applicable", []) for size in na["sizes"]]
    out = pd.DataFrame(rows, columns=NOT_APPLICABLE).drop_duplicates(["dataset", "sample_size", "model"])
    tasks, planned = set(zip(cells.dataset, cells.sample_size)), set(zip(cells.dataset, cells.sample_size, cells.model))
    out = out.loc[pd.Series([k in tasks for k in zip(out.dataset, out.sample_size)], index=out.index, dtype=bool)]
    some = pd.Series([k in planned for k in zip(out.dataset, out.sample_size, out.model)], index=out.index, dtype=bool)
    out.loc[some, "why"] = out.loc[some, "why"] + " (on the folds left out; it ran the others)"
    return out.reset_index(drop=True), frozenset(in_context)


def machine(hardware: Any) -> tuple[str, str]:
    """(what identifies a machine for timing, its description) from a run's hardware record."""
    h = json.loads(hardware) if isinstance(hardware, str) else (hardware or {})
    cpu = h.get("cpu_model") or h.get("processor") or h.get("machine") or "unknown CPU"
    gpus = int(h.get("cluster_gpus") or 0)
    text = f"{cpu}, {h.get('cpus_local', '?')} CPUs" + (f", {gpus} GPUs" if gpus else "")
    return f"{cpu}|{h.get('cpus_local')}|{h.get('memory_gb_local')}|{gpus > 0}", text


def home_run(runs: pd.DataFrame, timed: pd.DataFrame) -> Any:
    """The latest run that timed a finished cell (runs: newest first); a run that had nothing to run
    started no cluster and is no machine's word on timings."""
    ran = runs[runs.run_id.isin(set(timed.run_id))] if "run_id" in timed else runs
    return (ran if len(ran) else runs).iloc[0]


def other_hardware(runs: pd.DataFrame, timed: pd.DataFrame) -> dict[str, str]:
    """model → the machines, other than the latest run's, that timed its finished cells."""
    if runs.empty or timed.empty:
        return {}
    home = machine(home_run(runs, timed).hardware)[0]
    where = {r.run_id: machine(r.hardware) for r in runs.itertuples(index=False)}
    out: dict[str, set[str]] = {}
    for r in timed.itertuples(index=False):
        key, text = where.get(r.run_id, (home, ""))
        if key != home:
            out.setdefault(r.model, set()).add(text)
    return {m: "; ".join(sorted(t)) for m, t in out.items()}


def legacy_kind(model_name: str) -> str:
    """The kind of a model no run stored a kind for (a file before schema 4): today's registry's, else
    'unknown' (never a guess)."""
    from pipeline.models.registry import kind_of

    return kind_of(str(model_name))


METRIC_NAMES = {"accuracy": "accuracy", "balanced_accuracy": "balanced accuracy", "roc_auc": "ROC-AUC",
                "log_loss": "−log-loss", "r2": "R²", "rmse": "−RMSE"}


def metric_words(leaderboard: pd.DataFrame) -> str:
    """The test metrics the scores are read on, per kind of task ("ROC-AUC for classification, R² for regression"),
    from the leaderboard's ``metric`` (a suite's ``protocol.metric``, else accuracy and R²)."""
    if leaderboard.empty or "metric" not in leaderboard:
        return "accuracy for classification, R² for regression"
    kinds = leaderboard.assign(kind=leaderboard.task_type.eq("regression").map({True: "regression",
                                                                               False: "classification"}))
    said = []
    for kind in ("classification", "regression"):
        names = sorted({METRIC_NAMES.get(str(m), str(m)) for m in kinds[kinds.kind == kind].metric.dropna()})
        if names:
            said.append(f"{' and '.join(names)} for {kind}")
    return ", ".join(said) or "accuracy for classification, R² for regression"


def size_label(size: str) -> str:
    return "all training rows" if size == "all" else f"{size} training rows"


def per_model(df: pd.DataFrame, how: dict[str, str], data: ReportData) -> pd.DataFrame:
    """The per-model rows shown on the compute and memory pages: plain means (or sums) over the view's
    (dataset, sample size) rows; docs/QUERIES.md gives the same numbers in SQL. ``coverage`` counts
    the cells measured (ok) against the cells expected. A model planned on fewer tasks than the others (a
    tuned slice merged beside a whole study) has its means over other rows: it comes last, ``fewer_tasks``
    set, as on the Accuracy page (:func:`fewer_tasks_note` says so)."""
    out = df.groupby("model").agg(**{k: (k, v) for k, v in how.items() if k in df}, n_tasks=("dataset", "size"),
                                  n_ok=("n_ok", "sum")).reset_index()
    expected = data.cells.groupby("model").size()
    out["coverage"] = [f"{int(k)}/{int(expected.get(m, k))} cells" for m, k in zip(out.model, out.n_ok)]
    planned = agg.tasks_planned(data.cells)
    out["fewer_tasks"] = out.model.map(planned).fillna(0) < planned.max()
    return out.sort_values(["fewer_tasks", "model"], ignore_index=True)


def fewer_tasks_note(t: pd.DataFrame) -> str:
    """What the compute and memory tables say of the models :func:`per_model` lists last ("" when none)."""
    fewer = t.model[t.fewer_tasks].tolist()
    if not fewer:
        return ""
    return (f"Listed last: {', '.join(fewer)}, planned on fewer tasks than the others. "
            f"{'Its means cover' if len(fewer) == 1 else 'Their means cover'} only those tasks (the tasks column), "
            "often other sizes and datasets than the rows above average over: compare them with the others on "
            "the same tasks (the Accuracy page's win rates do; in SQL, join the compute or memory view on "
            "dataset and sample_size).")
