"""The report: self-contained HTML pages under ``reports/``, one index linking them all.

Pages with figures load the one copy of plotly.js written beside them (no CDN: the folder works
offline over ``file://``, and a report of many pages carries plotly.js once). Every page
is built from the SQL views of :mod:`pipeline.report.views`, created here as temporary views on a
read-only connection, so the numbers match ``attnbench query`` and ``duckdb results.duckdb``.
Every name that comes from a dataset, a feature or a model is escaped before it reaches a page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.data.store import Store
from pipeline.report import aggregate as agg
from pipeline.report import claims as claims_mod
from pipeline.report import figures as figs
from pipeline.report.answer import (
    FAMILIES,
    FAMILY,
    SizeAnswer,
    crossover_text,
    family_crossovers,
    floor_sentence,
    size_answer,
    summary_sentences,
)
from pipeline.report.markup import PLOTLY_JS, Cell, Page, cell, esc, note, num, raw, table
from pipeline.report.views import N_SHUFFLES, temporary_views

ELO_BOOTSTRAP = 200  # task resamples behind each Elo interval
MAX_ATTENTION_FEATURES = 60  # wider maps show the features that receive the most attention


# ------------------------------------------------------------------------------------------ data
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


# -------------------------------------------------------------------------------------- accuracy
@dataclass
class Standing:
    """The aggregates of one sample size, over its tasks."""

    size: str
    scores: pd.DataFrame  # task × model
    summary: pd.DataFrame  # one row per model
    win_rates: pd.DataFrame
    matches: pd.DataFrame
    elo: agg.EloResult
    cd: agg.CriticalDifference


def standing(data: ReportData, size: str) -> Standing:
    cells = data.cells[data.cells.sample_size == size]
    scores = agg.task_scores(cells)
    cov = agg.coverage(cells).set_index("model")
    r = agg.ranks(scores)
    norm = agg.normalized_scores(scores)
    wins, n = agg.pairwise_wins(scores)
    elo = agg.elo(scores, n_bootstrap=ELO_BOOTSTRAP)
    summary = pd.DataFrame({"model": scores.columns, "avg_rank": r.mean().to_numpy(),
                            "normalized_score": norm.mean().to_numpy(),
                            "tasks_scored": scores.notna().sum().to_numpy()})
    summary = summary.merge(elo.table.drop(columns="n_tasks"), on="model").join(cov, on="model")
    summary["kind"] = summary.model.map(data.kinds)
    summary["improvability"] = summary.model.map(agg.improvability(scores))
    ok = cells[cells.status == "ok"]
    per_model = cells.groupby("model").agg(epochs_bound=("epochs_bound", "sum"), search_bound=("search_bound", "sum"),
                                           no_better=("no_better_than_constant", "sum"))
    per_model = per_model.join(ok.groupby("model")[["train_s_per_1k", "predict_s_per_1k"]].mean())
    default = ok.pivot_table(index=agg.TASK, columns="model", values="default_score", aggfunc="mean")
    tuned = ok.pivot_table(index=agg.TASK, columns="model", values="score", aggfunc="mean")
    gain = (tuned - default.reindex_like(tuned))
    per_model["tuning_gain"] = gain.mean()
    per_model["tuning_helped"] = (gain > 1e-12).sum()
    per_model["tuning_compared"] = gain.notna().sum()
    summary = summary.join(per_model, on="model")
    counts = ["epochs_bound", "search_bound", "no_better", "tuning_helped", "tuning_compared"]  # none where nothing finished
    summary[counts] = summary[counts].fillna(0).astype(int)
    return Standing(size, scores, summary.sort_values("avg_rank", ignore_index=True), wins / n.where(n > 0), n, elo,
                    agg.critical_difference(scores))


def coverage_text(r: pd.Series) -> str:
    parts = [f"{r.tasks_ok}/{r.tasks} tasks complete"]
    for key, word in (("tasks_partial", "partly failed"), ("tasks_failed", "failed"), ("tasks_missing", "missing")):
        if r[key]:
            parts.append(f"{r[key]} {word}")
    return ", ".join(parts)


def bound_text(epochs: int, search: int) -> str:
    """The budget-bound flag of a model or cell: '' when neither budget ran out."""
    parts = []
    if epochs:
        parts.append(f"⚑ last epoch ×{int(epochs)}")
    if search:
        parts.append(f"⚑ last trial ×{int(search)}")
    return " · ".join(parts)


BOUND_NOTE = ("⚑ budget-bound: 'last epoch' counts cells whose selected trial kept its last epoch (boosting: its "
              "last round) when it ran out of epochs, rounds or time, i.e. it was still improving; 'last trial' "
              "counts cells whose best configuration was the search's last trial. Either may rank higher with "
              "a larger budget.")


def summary_table(st: Standing, table_id: str) -> str:
    rows = []
    # The highest Elo is coloured only when one model has it: a tie is no one's win.
    at_top = st.summary.elo >= st.summary.elo.max() - 1e-6
    best_elo = st.summary.elo.max() if at_top.sum() == 1 else None
    for r in st.summary.itertuples(index=False):
        s = pd.Series(r._asdict())
        elo_txt = f"{num(r.elo, '.0f')} [{num(r.elo_low, '.0f')}, {num(r.elo_high, '.0f')}]"
        incomplete = r.tasks_ok < r.tasks
        gain = (f"{num(r.tuning_gain, '+.3f')} ({int(r.tuning_helped)}/{int(r.tuning_compared)} tasks)"
                if r.tuning_compared else "—")
        bound = bound_text(r.epochs_bound, r.search_bound)
        rows.append([cell(r.model), cell(FAMILY.get(r.kind, r.kind)), cell(num(r.avg_rank, ".2f")), cell(num(r.normalized_score, ".3f")),
                     cell(elo_txt, "best" if best_elo is not None and r.elo == best_elo else ""),
                     cell(num(100 * r.improvability, ".1f") + "%" if not pd.isna(r.improvability) else "—"),
                     cell(gain), cell(num(r.train_s_per_1k, ".3g")), cell(num(r.predict_s_per_1k, ".3g")),
                     cell(bound or "—", "partial" if bound else ""),
                     cell(f"⊘ {int(r.no_better)}" if r.no_better else "0", "missing" if r.no_better else "",
                          "finished cells that scored no better than the constant predictor"),
                     cell(coverage_text(s), "partial" if incomplete else ""),
                     cell(f"{r.cells_ok}/{r.cells}" + (f" ({r.cells_failed} failed, {r.cells_missing} missing)"
                                                       if r.cells_ok < r.cells else ""),
                          "partial" if r.cells_ok < r.cells else "")])
    return (table(["model", "family", "average rank", "normalised score", f"Elo [{st.elo.level:.0%} CI]",
                   "improvability", "tuned − default test score", "train s / 1K rows", "predict s / 1K rows",
                   "budget-bound", "≤ constant predictor (cells)", "coverage (tasks)", "cells ok"], rows, table_id)
            + note("Sorted by average rank. Improvability: how much lower the best model's error is than this "
                   "model's, as a share of its own, averaged over tasks (0% = best everywhere; TabArena). "
                   "Tuned − default: mean test-score gain of the selected configuration over the default one "
                   "(the search's first trial), with the tasks where tuning helped. Time per 1,000 rows: the "
                   "selected trial's training time per 1,000 training rows, and prediction time per 1,000 "
                   "rows. ≤ constant predictor: finished cells that scored no better than the majority class "
                   "or the training mean on the same split (the model learned nothing there). " + BOUND_NOTE))


def per_dataset_table(data: ReportData, size: str, table_id: str) -> str:
    lb = data.leaderboard[data.leaderboard.sample_size == size]
    if lb.empty:
        return note("No results at this size.")
    models = data.models
    rows = []
    for (suite, dataset, metric), g in lb.groupby(["suite", "dataset", "metric"], sort=True):
        by = g.set_index("model")
        row = [cell(data.task_label(suite, dataset)), cell(metric)]
        for m in models:
            if m not in by.index:
                row.append(cell("not run", "missing num"))
                continue
            r = by.loc[m]
            if r.n_ok == 0:
                word = "failed" if r.n_failed else "missing"
                row.append(cell(f"{word} ({int(r.n_failed or r.n_missing)}/{int(r.n_cells)})", "missing num",
                                f"{int(r.n_failed)} failed, {int(r.n_missing)} missing of {int(r.n_cells)} cells"))
                continue
            std = f" ± {num(r.score_std)}" if not pd.isna(r.score_std) else ""
            cov = f" ({int(r.n_ok)}/{int(r.n_cells)})" if r.n_ok < r.n_cells else ""
            cls = "best" if r.is_best else ("partial" if cov else "")
            flag = " ⚑" if r.n_epochs_bound or r.n_search_bound else ""
            title = f"{int(r.n_ok)} ok, {int(r.n_failed)} failed, {int(r.n_missing)} missing"
            if flag:
                title += "; budget-bound: " + bound_text(r.n_epochs_bound, r.n_search_bound).replace("⚑ ", "")
            if r.n_no_better:  # it learned nothing there: the floor, not the model, set its score
                flag += " ⊘"
                cls = "missing"
                title += (f"; no better than the constant predictor in {int(r.n_no_better)} of {int(r.n_ok)} "
                          "finished cells")
            row.append(cell(f"{num(r.score_mean)}{std}{cov}{flag}", cls, title))
        const = g.constant_mean.dropna()
        row.append(cell(num(const.iloc[0]) if len(const) else "—", "reference",
                        "majority class (classification) or training mean (regression), scored on the same "
                        "test rows" if len(const) else "not recorded for this results file"))
        rows.append(row)
    return (table(["dataset", "metric", *models, "constant predictor"], rows, table_id)
            + note("Mean ± std over folds and subset seeds; highlighted: the best mean when one model alone has "
                   "it (a tie is no one's win); ⚑: budget-bound (hover for which budget). Constant predictor: the "
                   "floor every model must clear, the majority class or the training mean on the same splits; "
                   "⊘: the model scored no better than it in at least one cell (hover for how many): it "
                   "learned nothing there."))


def page_accuracy(data: ReportData, standings: dict[str, Standing]) -> Page:
    p = Page("accuracy.html", "Accuracy")
    p.card("Test score of the best-on-validation configuration of each model: accuracy for classification, R² "
           "for regression; mean ± std over folds and subset seeds. A task is one dataset at one training size. "
           "Failed or missing cells are never dropped: the tables show them, and in the aggregates a model that "
           "has no score on a task ranks last there, gets normalised score 0 and loses to every model with a "
           "score. Normalised score: per task, 1 = the best model, 0 = the worst (Grinsztajn et al., 2022). "
           "Elo: Bradley–Terry ratings from pairwise task outcomes (one virtual draw per pair), mean 1000, "
           f"{ELO_BOOTSTRAP} bootstrap resamples of tasks. Critical difference: Friedman test and Nemenyi "
           "post-hoc (Demšar, 2006), α = 0.05.")
    if not standings:
        p.add(note("No results yet."))
        return p
    p.add('<p class="toc">' + "".join(f'<a href="#size-{esc(s)}">{esc(size_label(s))}</a>' for s in standings) + "</p>")
    style = data.style()
    for size, st in standings.items():
        p.h2(f"Training size: {size_label(size)}", f"size-{size}")
        p.h3("Per dataset")
        p.add(per_dataset_table(data, size, f"table-datasets-{size}"))
        p.h3(f"Over {len(st.scores)} tasks")
        p.add(summary_table(st, f"table-summary-{size}"))
        p.figure(figs.summary_bars(st.summary, style), f"fig-summary-{size}")
        p.h3("Win rate")
        p.add(note("Share of tasks on which the row model's mean score beat the column model's (ties count ½); "
                   "hover for the number of tasks compared."))
        p.figure(figs.win_rate_heatmap(st.win_rates, st.matches), f"fig-winrate-{size}")
        p.h3("Elo")
        p.figure(figs.elo_plot(st.elo.table, style, st.elo.level), f"fig-elo-{size}")
        p.h3("Critical difference")
        cd = st.cd
        if len(st.scores) < 2 or len(st.scores.columns) < 2:
            p.add(note("A critical-difference comparison needs at least two tasks and two models."))
        else:
            p.add(note(f"Friedman χ² = {num(cd.friedman_stat, '.2f')}, p = {num(cd.friedman_p, '.3g')} over "
                       f"{cd.n_tasks} tasks; Nemenyi CD = {num(cd.cd, '.2f')}. Models joined by a bar are not "
                       "significantly different."))
            p.figure(figs.cd_diagram(cd, style), f"fig-cd-{size}")
    return p


# ----------------------------------------------------------------------------------- sample size
def page_sample_size(data: ReportData) -> Page:
    p = Page("sample_size.html", "Sample-size sensitivity")
    p.card("Test score of each model against the number of training rows. Per dataset: the mean over folds "
           "and subset seeds, with its 95% confidence interval as a band where two or more splits finished; a "
           "size where a model has no score is a gap in its line. The crossover size is the smallest training "
           "size from which a network beats the best boosting model at that size and at every larger size run. "
           f"The dotted line marks {claims_mod.REFERENCE_ROWS:,} rows, below which tree ensembles are often reported to "
           "win (Grinsztajn et al., 2022).")
    curves = agg.curve_intervals(data.curves)
    sizes = data.sizes
    if len(sizes) < 2:
        p.add(note(f"Only one training size was run ({', '.join(sizes) or 'none'}); add several to the suite's "
                   "protocol.sample_sizes (e.g. [64, 128, 1024, all]) to see learning curves."))
        return p
    curves["coverage"] = [f"{int(o)}/{int(n)} cells ok" + (f", {int(f)} failed" if f else "") +
                          (f", {int(m)} missing" if m else "")
                          for o, n, f, m in zip(curves.n_ok, curves.n_cells, curves.n_failed, curves.n_missing)]
    curves["flag"] = [("budget-bound: " + bound_text(e, t).replace("⚑ ", "")) if e or t else ""
                      for e, t in zip(curves.n_epochs_bound, curves.n_search_bound)]
    style = data.style()
    networks = [m for m in data.models if data.kinds[m] != "gbdt"]
    incumbents = [m for m in data.models if data.kinds[m] == "gbdt"]

    p.add(curve_coverage(curves, sizes))

    p.h2("Crossover: networks vs the best boosting model", "crossover")
    cross = agg.crossover(curves, networks, incumbents, best_label="best network")
    cross = cross[cross.model != "best network"]
    attention = [m for m in networks if data.kinds[m] == "attention"]
    if len(attention) > 1:  # the best attention model at each size, as the overview reports it
        best = agg.crossover(curves, attention, incumbents)
        cross = pd.concat([cross, best[best.model == "best attention"]], ignore_index=True)
        cross = cross.sort_values(["suite", "dataset", "model"], ignore_index=True)
    if cross.empty:
        p.add(note("Needs at least one network and one boosting model with scores."))
    else:
        rows = []
        for r in cross.itertuples(index=False):
            txt = crossover_text(r)
            cls = "missing" if pd.isna(r.crossover_n) else ("best" if r.ahead_everywhere else "")
            kind = "attention, best at each size" if r.model == "best attention" else data.family(r.model)
            rows.append([cell(data.task_label(r.suite, r.dataset)), cell(r.model), cell(kind), cell(txt, cls),
                         cell(r.n_sizes)])
        p.add(table(["dataset", "model", "family", "crossover size", "sizes compared"], rows, "table-crossover"))
        p.add(note(reference_check(curves, networks, incumbents, data.kinds)))

    p.h2("Over all datasets: mean normalised score by size", "average")
    p.figure(figs.normalized_curves(agg.normalized_by_size(data.cells, sizes), style, sizes), "fig-curve-avg")
    p.add(note("Per task (dataset and size) the best model scores 1 and the worst 0; each point is the mean "
               "over that size's tasks, and a model with no score on a task gets 0 there. No band: datasets "
               "differ in difficulty, so their spread says nothing about the models; the per-dataset bands "
               "below are confidence intervals."))
    p.h2("Per dataset", "datasets")
    for i, ((suite, dataset), g) in enumerate(curves.groupby(["suite", "dataset"], sort=True)):
        metric = str(g.metric.iloc[0])
        n_split = int(g.n_cells.max())
        p.figure(figs.learning_curves(g, style, metric, title=f"{data.task_label(suite, dataset)} · {metric}",
                                      reference_n=claims_mod.REFERENCE_ROWS), f"fig-curve-{i}")
        if n_split < 2:
            p.add(note(f"{data.task_label(suite, dataset)}: one split per size, so no confidence band."))
    return p


def curve_coverage(curves: pd.DataFrame, sizes: list[str]) -> str:
    """Cells ok of expected per model and size, shown when any is short: a curve has no point where a
    model has no score."""
    g = curves.groupby(["model", "sample_size"])[["n_ok", "n_cells", "n_failed", "n_missing"]].sum()
    if (g.n_ok == g.n_cells).all():
        return note("Every expected cell finished ok.")
    rows = []
    for model in sorted(g.index.get_level_values(0).unique()):
        row = [cell(model)]
        for size in sizes:
            if (model, size) not in g.index:
                row.append(cell("—"))
                continue
            r = g.loc[(model, size)]
            short = r.n_ok < r.n_cells
            row.append(cell(f"{int(r.n_ok)}/{int(r.n_cells)}", "missing" if r.n_ok == 0 else ("partial" if short else ""),
                            f"{int(r.n_failed)} failed, {int(r.n_missing)} missing"))
        rows.append(row)
    return ("<h3>Coverage: cells ok of expected</h3>"
            + note("Points are means over the cells that finished; a model with no finished cell at a size has "
                   "no point there.")
            + table(["model", *[size_label(x) for x in sizes]], rows, "table-curve-coverage"))


def reference_check(curves: pd.DataFrame, networks: list[str], incumbents: list[str], kinds: dict[str, str]) -> str:
    """How often the best attention model and the MLP beat the best boosting model below the reference size."""
    below = curves[curves.n_train < claims_mod.REFERENCE_ROWS]
    wide = below.pivot_table(index=["suite", "dataset", "sample_size"], columns="model", values="score_mean")
    gb = wide[[m for m in incumbents if m in wide]].max(axis=1)
    parts = []
    for label, kind in (("the best attention model", "attention"), ("the MLP", "torch")):
        members = [m for m in networks if kinds.get(m) == kind and m in wide]
        if not members:
            continue
        best = wide[members].max(axis=1)
        both = best.notna() & gb.notna()
        n, k = int(both.sum()), int((best[both] > gb[both]).sum())
        if n:
            parts.append(f"{label} beat the best boosting model at {k} of {n} (dataset, size) points")
    if not parts:
        return f"No (dataset, size) point below {claims_mod.REFERENCE_ROWS:,} rows has both a network and a boosting model."
    return f"Below {claims_mod.REFERENCE_ROWS:,} training rows, " + "; ".join(parts) + "."


# ---------------------------------------------------------------------------------------- tuning
def page_tuning(data: ReportData) -> Page:
    p = Page("tuning.html", "Tuning budget")
    p.card("Best validation score found after the first n trials of a model's search, as a function of "
           "n and of the compute seconds those trials took, and the test score of the configuration that "
           "validation selects after n trials (Grinsztajn et al., 2022). Trial 1 is always the "
           f"default configuration; the other trials are taken in {N_SHUFFLES} orders (the run's own and "
           f"{N_SHUFFLES - 1} seeded shuffles); the line is the mean over orders and the band the 10–90% range "
           "over orders. Scores are rescaled per split between the worst (0) and best (1) trial of any model, "
           "validation and test each on its own scale. Selection reads validation only; the test curve shows "
           "what tuning buys on unseen data.")
    if data.tuning.empty:
        p.add(note("No trials recorded."))
        return p
    summ = agg.tuning_summary(data.tuning)
    style = data.style()
    for size in agg.size_order(summ.sample_size):
        g = summ[summ.sample_size == size]
        p.h2(f"Training size: {size_label(size)}", f"size-{size}")
        p.figure(figs.tuning_curves(g, style, "n_trials"), f"fig-tuning-trials-{size}")
        p.figure(figs.tuning_curves(g, style, "seconds"), f"fig-tuning-seconds-{size}")
        p.figure(figs.tuning_curves(g, style, "n_trials", y="test"), f"fig-tuning-test-{size}")
        rows = []
        at = data.cells[data.cells.sample_size == size].groupby("model").search_bound.sum()
        for model, m in g.groupby("model", sort=True):
            m = m.sort_values("n_trials")
            first, last = m.iloc[0], m.iloc[-1]
            k = int(at.get(model, 0))
            rows.append([cell(model), cell(int(last.n_trials)), cell(num(first.score)), cell(num(last.score)),
                         cell(num(last.score - first.score, "+.3f")), cell(num(first.test)), cell(num(last.test)),
                         cell(num(last.test - first.test, "+.3f")), cell(num(last.seconds, ".1f")),
                         cell(int(first.n_cells)), cell(f"⚑ {k}" if k else "0", "partial" if k else "")])
        p.add(table(["model", "max trials", "val: default config", "val: after all trials", "val: gain",
                     "test: default config", "test: after all trials", "test: gain", "seconds (all trials)",
                     "cells", "best trial was the last"], rows, f"table-tuning-{size}"))
        p.add(note("Best trial was the last: cells whose search found its best configuration on its final trial; "
                   "a longer search might find better ones."))
    return p


# --------------------------------------------------------------------------------------- compute
def per_model(df: pd.DataFrame, how: dict[str, str], data: ReportData) -> pd.DataFrame:
    """The per-model rows shown on the compute and memory pages: plain means (or sums) over the view's
    (dataset, sample size) rows; docs/QUERIES.md gives the same numbers in SQL. ``coverage`` counts
    the cells measured (ok) against the cells expected."""
    out = df.groupby("model").agg(**{k: (k, v) for k, v in how.items() if k in df}, n_tasks=("dataset", "size"),
                                  n_ok=("n_ok", "sum")).reset_index()
    expected = data.cells.groupby("model").size()
    out["coverage"] = [f"{int(k)}/{int(expected.get(m, k))} cells" for m, k in zip(out.model, out.n_ok)]
    return out


def page_compute(data: ReportData, standings: dict[str, Standing]) -> Page:
    p = Page("compute.html", "Compute")
    p.card("Per model, means over the (dataset, training size) rows of the compute view, cells that finished ok: "
           "train time of the selected trial, and per 1,000 training rows; the whole search's time (first trial "
           "start to last trial end); prediction time per 1,000 rows and rows per second; forward FLOPs per row "
           "(torch models; boosting has none); parameters (for boosting: tree nodes for XGBoost, leaf values for "
           "CatBoost). GPU-hours add up the run time of every trial that ran on a CUDA device, one GPU each.")
    c = data.compute
    if c.empty:
        p.add(note("No finished cells."))
        return p
    devices = c.groupby("model").devices.agg(lambda s: ",".join(sorted({d for v in s.dropna() for d in v.split(",")})))
    t = per_model(c, {"fit_seconds": "mean", "train_s_per_1k": "mean", "search_seconds": "mean",
                      "predict_s_per_1k": "mean", "predict_rows_per_s": "mean", "flops_per_row": "mean",
                      "n_params": "mean", "gpu_hours": "sum"}, data).join(devices, on="model")
    rows = [[cell(r.model), cell(data.family(r.model)), cell(num(r.fit_seconds, ".3g")),
             cell(num(r.train_s_per_1k, ".3g")), cell(num(r.search_seconds, ".3g")),
             cell(num(r.predict_s_per_1k, ".3g")), cell(num(r.predict_rows_per_s, ",.0f")),
             cell(num(r.flops_per_row, ".3g", "n/a")), cell(num(r.n_params, ",.0f")), cell(r.devices),
             cell(num(r.gpu_hours, ".4f")), cell(r.n_tasks), cell(r.coverage)] for r in t.itertuples(index=False)]
    p.add(table(["model", "family", "train s (selected trial)", "train s / 1K rows", "search s", "predict s / 1K rows",
                 "inference rows/s", "FLOPs/row", "parameters", "devices", "GPU-hours", "tasks", "coverage"], rows,
                "table-compute"))
    if not (t.gpu_hours > 0).any():
        p.add(note("No cell ran on a GPU: GPU-hours are 0."))
    style = data.style()
    p.figure(figs.model_bars(t, style, {"train_s_per_1k": "train s per 1K rows", "search_seconds": "search seconds",
                                        "predict_s_per_1k": "predict s per 1K rows", "flops_per_row": "FLOPs per row",
                                        "n_params": "parameters"},
                             units={"train_s_per_1k": "s", "search_seconds": "s", "predict_s_per_1k": "s"}),
             "fig-compute-bars")
    size = data.headline_size
    if size in standings:
        at = c[c.sample_size == size].groupby("model")[["train_s_per_1k", "predict_s_per_1k"]].mean()
        pts = standings[size].summary[["model", "normalized_score"]].join(at, on="model")
        for col, what, fig_id in (("train_s_per_1k", "train", "fig-pareto"),
                                  ("predict_s_per_1k", "predict", "fig-pareto-predict")):
            p.h2(f"Score against {what} time ({size_label(size)})", fig_id.removeprefix("fig-"))
            sub = pts[["model", "normalized_score", col]].dropna()
            if sub.empty:
                p.add(note(f"No model has both a score and a {what} time at this size."))
                continue
            sub = sub.assign(front=agg.pareto_front(sub[col], sub.normalized_score))
            p.figure(figs.pareto(sub, style, col, "normalized_score",
                                 f"{what} seconds per 1,000 rows (mean over datasets, log scale)",
                                 "mean normalised score", x_unit="s"), fig_id)
            p.add(note(f"Outlined points are on the Pareto front: no other model both {what}s faster and scores "
                       "better."))
    return p


# ---------------------------------------------------------------------------------------- memory
def page_memory(data: ReportData) -> Page:
    p = Page("memory.html", "Memory")
    p.card("What is measured: the peak memory that training the selected trial of each cell needed, the same way "
           "for every model. CPU: the kernel's high-water mark of the worker process's resident memory during the "
           "fit, less its resident memory when the fit began; before each fit the worker returns the memory its "
           "allocator keeps from earlier trials to the system and resets the high-water mark, every library was "
           "warmed up once when the worker started, and library code paged in from disk is not counted, so the "
           "figure does not depend on what the worker ran before (tests/test_memory.py checks this within 10%). "
           "GPU: the peak of torch's CUDA allocator during the fit, above what it held at the start (n/a for models "
           "that ran on the CPU). Per model, means (and maxima) over the (dataset, training size) rows of the memory "
           "view; then how the peak grows with the number of features.")
    m = data.memory
    if m.empty:
        p.add(note("No finished cells."))
        return p
    t = per_model(m, {"peak_cpu_mb": "mean", "peak_cpu_mb_max": "max", "peak_gpu_mb": "mean", "peak_gpu_mb_max": "max"},
                  data)
    rows = [[cell(r.model), cell(data.family(r.model)), cell(num(r.peak_cpu_mb, ",.1f")),
             cell(num(r.peak_cpu_mb_max, ",.1f")), cell(num(r.peak_gpu_mb, ",.1f", "n/a")),
             cell(num(r.peak_gpu_mb_max, ",.1f", "n/a")), cell(r.n_tasks), cell(r.coverage)]
            for r in t.itertuples(index=False)]
    p.add(table(["model", "family", "peak CPU MB (mean)", "peak CPU MB (max)", "peak GPU MB (mean)",
                 "peak GPU MB (max)", "tasks", "coverage"], rows, "table-memory"))
    style = data.style()
    has_gpu = m.peak_gpu_mb.notna().any()
    if not has_gpu:
        p.add(note("No cell ran on a GPU: no GPU memory to show."))
    p.figure(figs.model_bars(t, style, {"peak_cpu_mb": "peak CPU MB", "peak_gpu_mb": "peak GPU MB"}, log=False,
                             units={"peak_cpu_mb": "MB", "peak_gpu_mb": "MB"}), "fig-memory-bars")
    p.h2("Against the number of features", "features")
    if m.n_features.nunique() < 2:
        p.add(note("All datasets have the same number of features; run wider and narrower datasets to see growth."))
    p.figure(figs.memory_vs_features(m, style, "peak_cpu_mb", "peak CPU MB"), "fig-memory-cpu-features")
    if has_gpu:
        p.figure(figs.memory_vs_features(m, style, "peak_gpu_mb", "peak GPU MB"), "fig-memory-gpu-features")
    return p


# ------------------------------------------------------------------------------------- attention
MeanMap = tuple[str, str, str, str, list[str], np.ndarray, int]


def mean_maps(att: pd.DataFrame) -> list[MeanMap]:
    """(suite, dataset, model, size, features, mean map, n cells) at each pair's largest size."""
    out: list[MeanMap] = []
    if att.empty:
        return out
    for (suite, dataset, model), g in att.groupby(["suite", "dataset", "model"], sort=True):
        size = agg.size_order(g.sample_size)[-1]
        g = g[g.sample_size == size]
        feats = json.loads(g["features"].iloc[0])
        mats = [np.asarray(json.loads(x), dtype=float) for x in g["map"]]
        mats = [x for x in mats if x.shape == (len(feats), len(feats))]
        if mats:
            out.append((suite, dataset, model, size, feats, np.nanmean(np.stack(mats), axis=0), len(mats)))
    return out


def page_attention(data: ReportData) -> Page:
    p = Page("attention.html", "Attention maps")
    p.card("Mean feature-to-feature attention of each attention model, averaged over heads, layers and test rows "
           "by the model, and here over folds and seeds at the largest training size run. Row = the attending "
           "(query) feature, column = the attended (key) feature. Colour shows each weight as a multiple of "
           "uniform attention (1/number of features): white is uniform, red more, blue less, on a fixed scale, "
           "so a map within a few percent of uniform looks uniform. Under each map: its range of weights and "
           "its mean distance from uniform (total variation, 0 = uniform, 1 = all attention on one feature).")
    maps = mean_maps(data.attention)
    if not maps:
        p.add(note("No attention maps recorded (no attention model finished a cell)."))
        return p
    by_dataset: dict[tuple[str, str], list[MeanMap]] = {}
    for m in maps:
        by_dataset.setdefault((m[0], m[1]), []).append(m)
    for i, ((suite, dataset), items) in enumerate(sorted(by_dataset.items())):
        p.h2(data.task_label(suite, dataset), f"dataset-{i}")
        for j, (_, _, model, size, feats, mat, n) in enumerate(items):
            shown = np.arange(len(feats))
            if len(feats) > MAX_ATTENTION_FEATURES:
                shown = np.sort(np.argsort(-np.nansum(mat, axis=0))[:MAX_ATTENTION_FEATURES])
                p.add(note(f"{model}: {len(feats)} features; showing the {MAX_ATTENTION_FEATURES} that receive the "
                           "most attention."))
            u = agg.uniformity(mat)
            ratio = agg.uniform_ratio(mat)
            p.figure(figs.attention_heatmap(ratio[np.ix_(shown, shown)], [feats[k] for k in shown],
                                            f"{model} · {size_label(size)} · mean of {n} cells",
                                            weights=mat[np.ix_(shown, shown)]), f"fig-attention-{i}-{j}")
            verdict = (f"uniform to within {agg.UNIFORM_TV:.0%}: the model attends to every feature alike, and "
                       "the pattern carries no information" if u.uniform else "not uniform")
            cls = (f"; each row gives the {u.n_keys} features {u.row_sum:.3f} of its attention, the rest to "
                   "other tokens ([CLS])" if u.row_sum < 0.999 else "")
            p.add(note(f"{model}: weights {u.low:.4f}–{u.high:.4f} (uniform {u.uniform_weight:.4f}{cls}), "
                       f"{u.ratio_low:.2f}×–{u.ratio_high:.2f}× uniform; distance from uniform {u.tv:.3f}: {verdict}."))
    return p


# ---------------------------------------------------------------------------------------- claims
VERDICT_CLASS = {claims_mod.SUPPORTED: "best", claims_mod.CONTRADICTED: "missing", claims_mod.THIN: "partial"}


def page_claims(data: ReportData) -> Page:
    p = Page("claims.html", "Claims")
    p.card("Five claims from the design notes behind these architectures, tested on the results in this file "
           "rather than assumed. Each gets an effect with a 95% interval and the comparisons behind it: "
           "supported when the interval lies on the claim's side, contradicted when it lies on the other, and "
           f"not enough data when there are fewer than {claims_mod.MIN_PAIRS} comparisons or the interval "
           "includes no effect. Ablations are found in the selected configurations: cells of one model on one "
           "split whose configurations differ only in the switch (se_reduction: 0 or se: false, attention: "
           "self, warmup_frac: 0), i.e. the same model entered twice in a suite, one entry labelled.")
    found = claims_mod.verdicts(data.curves,
                                data.configured, data.attention, data.datasets, data.kinds)
    rows = [[cell(i + 1), cell(c.statement), cell(c.verdict, VERDICT_CLASS[c.verdict]),
             cell(claims_mod.effect_text(c)),
             cell(c.n), cell(c.coverage)] for i, c in enumerate(found)]
    p.add(table(["#", "claim", "verdict", "effect [95% interval]", "comparisons", "coverage"], rows, "table-claims"))
    for i, c in enumerate(found):
        p.h2(f"{i + 1}. {c.statement}", f"claim-{c.key}")
        p.add(f'<p id="verdict-{esc(c.key)}"><strong>{esc(c.verdict)}</strong>: {esc(c.why)}</p>')
        p.add(note(f"Effect: {c.measure}. Coverage: {c.coverage}."))
        if c.cells:
            ids = ", ".join(f"'{x}'" for x in c.cells[:200])
            p.add(f"<details><summary>{len(c.cells)} cells behind it, and the query that lists them</summary>"
                  f"<pre>attnbench query \"SELECT * FROM scores WHERE cell_id IN ({esc(ids)})\"</pre></details>")
    return p


# ------------------------------------------------------------------------------------------ runs
def json_table(text: object) -> str:
    try:
        d = json.loads(str(text)) if text is not None else {}
    except ValueError:
        return f"<pre>{esc(text)}</pre>"
    if not isinstance(d, dict):
        return f"<pre>{esc(text)}</pre>"
    return table(["key", "value"], [[cell(k), cell(v, "text")] for k, v in d.items()])


def page_runs(data: ReportData) -> Page:
    p = Page("runs.html", "Run details")
    p.h2("Runs", "runs")
    cols = ["run_id", "suite", "status", "started_at", "finished_at", "git_rev", "n_cells", "n_done", "n_failed",
            "n_skipped"]
    p.add(table(cols, [[cell(r[c]) for c in cols] for _, r in data.runs.iterrows()], "table-runs"))
    for _, r in data.runs.iterrows():
        p.add(f"<details><summary>{esc(r.run_id)} · {esc(r.suite)}: command, suite, versions, hardware</summary>"
              f"<pre>{esc(r.argv)}</pre>"
              + (f"<pre>{esc(r.error)}</pre>" if r.error else "")
              + f"<h3>Suite</h3><pre>{esc(r.suite_yaml)}</pre><h3>Versions</h3>{json_table(r.versions)}"
              f"<h3>Hardware</h3>{json_table(r.hardware)}</details>")
    p.h2("Models", "models")
    from pipeline.models.registry import REGISTRY

    rows = []
    for m in data.models:
        info = REGISTRY.get(data.model_names.get(m, ""))
        rows.append([cell(m), cell(data.model_names.get(m)), cell(info.display_name if info else "unregistered"),
                     cell(info.family if info else ""), cell("yes" if info and info.attention else "no")])
    p.add(table(["model", "registered as", "display name", "family", "attention"], rows, "table-models"))
    p.h2("Datasets", "datasets")
    p.add(table(list(data.datasets.columns), [[cell(v) for v in r] for r in data.datasets.itertuples(index=False)],
                "table-datasets"))
    p.h2("Trials", "trials")
    t = data.trials
    if t.empty:
        p.add(note("No cells yet."))
    else:
        g = t.groupby(["model", "sample_size"]).agg(cells=("cell_id", "size"), trials=("n_trials", "sum"),
                                                    per_cell_min=("n_trials", "min"), per_cell_max=("n_trials", "max"),
                                                    failed=("n_failed", "sum"), stopped=("n_stopped", "sum"),
                                                    seconds=("seconds", "sum")).reset_index()
        g = g.sort_values(["model", "sample_size"], key=lambda s: s.map(
            {k: i for i, k in enumerate(agg.size_order(g.sample_size))}) if s.name == "sample_size" else s)
        p.add(table(["model", "size", "cells", "trials", "per cell (min–max)", "failed trials", "stopped early",
                     "trial seconds"],
                    [[cell(r.model), cell(r.sample_size), cell(r.cells), cell(r.trials),
                      cell(f"{r.per_cell_min}–{r.per_cell_max}"), cell(r.failed, "missing" if r.failed else ""),
                      cell(r.stopped), cell(num(r.seconds, ",.1f"))] for r in g.itertuples(index=False)],
                    "table-trials"))
    p.h2(f"Failures ({len(data.failures)})", "failures")
    if data.failures.empty:
        p.add(note("None."))
    else:
        rows = []
        for r in data.failures.itertuples(index=False):
            err = str(r.error or "").strip()
            last = err.splitlines()[-1] if err else "(no error text)"
            rows.append([cell(r.level), cell(data.task_label(r.suite, r.dataset)), cell(r.model), cell(r.sample_size),
                         cell(r.fold), cell(r.status, "missing"),
                         raw(f"<details><summary>{esc(last)}</summary><pre>{esc(err)}</pre></details>", "text")])
        p.add(table(["level", "dataset", "model", "size", "fold", "status", "error"], rows, "table-failures"))
    sup = data.superseded
    p.h2(f"Superseded results ({int(sup.n.sum()) if len(sup) else 0})", "superseded")
    p.add(note("Results of earlier versions of a cell, kept in the file as history and left out of every figure: "
               "'replaced' when the model entry or the protocol changed since (the current version is the one "
               "shown), 'not in the suite' when the suite no longer has that model or size. Query them with "
               "SELECT * FROM superseded."))
    if len(sup):
        p.add(table(["suite", "model", "size", "why", "results", "last finished"],
                    [[cell(r.suite), cell(r.model), cell(r.sample_size), cell(r.why), cell(r.n), cell(r.last)]
                     for r in sup.itertuples(index=False)], "table-superseded"))
    return p


# ----------------------------------------------------------------------------------------- index
DESCRIPTIONS = {
    "accuracy.html": "Per-dataset scores, average rank, normalised score, win rates, Elo, critical difference.",
    "sample_size.html": "Test score against training size; where attention overtakes boosting.",
    "tuning.html": "Best validation score, and the selected configuration's test score, against trials and seconds.",
    "compute.html": "Train time, inference speed, FLOPs, parameters, GPU-hours; score/time Pareto front.",
    "memory.html": "Peak CPU and GPU memory, and its growth with the number of features.",
    "attention.html": "Mean feature-to-feature attention maps per dataset and model.",
    "claims.html": "The design notes' five claims, each with a verdict, its effect, interval and cells.",
    "runs.html": "Suites, versions, hardware, trial counts and every failure with its error.",
}


def family_cell(a: SizeAnswer, family: str) -> Cell:
    lead = a.leaders.get(family)
    if lead is None:
        return cell("not run", "missing")
    flag = " ⚑" if lead.epochs_bound or lead.search_bound else ""
    title = f"scored on {lead.tasks_scored} of {lead.n_tasks} tasks"
    if flag:
        title += "; budget-bound: " + bound_text(lead.epochs_bound, lead.search_bound).replace("⚑ ", "")
    return cell(f"{lead.model} {lead.normalized_score:.3f}{flag}", "best" if a.leader == family else "", title)


def h2h_cell(a: SizeAnswer, family: str) -> Cell:
    h = a.vs_boosting.get(family)
    if h is None or not h.n:
        return cell("—")
    cls = "best" if h.low > 0.5 else ("missing" if h.high < 0.5 else "")
    return cell(f"{h.wins:g}/{h.n} = {h.rate:.0%} [{h.low:.0%}, {h.high:.0%}]", cls,
                f"{a.leaders[family].model} vs {a.leaders['boosting'].model}, task by task; Wilson 95% interval")


def overview_answer(p: Page, data: ReportData) -> None:
    """The per-size answer: family leaders, head-to-head win rates, costs, crossovers, in words first."""
    c = data.cells
    answers = [size_answer(s, c[c.sample_size == s], data.kinds) for s in data.sizes]
    crossovers = family_crossovers(data.curves, data.kinds)
    splits = c.groupby(["suite", "dataset", "sample_size"])[["repeat", "fold", "seed"]].apply(
        lambda g: len(g.drop_duplicates()))
    coverage = {"datasets": int(c[["suite", "dataset"]].drop_duplicates().shape[0]), "sizes": len(data.sizes),
                "splits": int(splits.max()) if len(splits) else 0, "cells": len(c),
                "cells_ok": int((c.status == "ok").sum())}
    p.h2("Attention, MLP or boosting: the answer by training size", "answer")
    sentences = summary_sentences(answers, crossovers, coverage)
    floor = floor_sentence(c)
    if floor:
        sentences.append(floor)
    p.add('<div class="card" id="answer-summary">' + "".join(f"<p>{esc(t)}</p>" for t in sentences) + "</div>")
    rows = [[cell(size_label(a.size)), cell(a.n_tasks), *(family_cell(a, f) for f in FAMILIES),
             cell(a.leader_text), h2h_cell(a, "attention"), h2h_cell(a, "MLP")] for a in answers]
    p.add(table(["training size", "tasks", "best attention (normalised score)", "best MLP", "best boosting",
                 "leader", "attention vs boosting: wins [95% CI]", "MLP vs boosting: wins [95% CI]"], rows,
                "table-answer"))
    p.add(note("Each family's best model at each size by mean normalised score over that size's tasks (1 = best "
               "model on a task, 0 = worst; test scores of the configurations validation selected). Wins: tasks on "
               "which the family's best model beat the best boosting model (ties ½), with a Wilson 95% interval; "
               "green where it is above an even match, red where below. " + BOUND_NOTE))
    p.h3("Cost per 1,000 rows")
    rows = []
    for a in answers:
        row = [cell(size_label(a.size))]
        for f in FAMILIES:
            lead = a.leaders.get(f)
            row += ([cell(num(lead.train_s_per_1k, ".3g")), cell(num(lead.predict_s_per_1k, ".3g"))] if lead
                    else [cell("—"), cell("—")])
        rows.append(row)
    p.add(table(["training size", *[f"{f} {w} s / 1K rows" for f in FAMILIES for w in ("train", "predict")]], rows,
                "table-answer-cost"))
    p.add(note("Seconds of the family leader's selected trial: training per 1,000 training rows, prediction per "
               "1,000 rows; means over its cells at that size."))
    if len(data.sizes) > 1:
        p.figure(figs.normalized_curves(agg.normalized_by_size(c, data.sizes), data.style(), data.sizes),
                 "fig-index-sizes")
    if not crossovers.empty:
        p.h3("Crossover size per dataset")
        wide = crossovers.assign(text=[crossover_text(r) for r in crossovers.itertuples(index=False)])
        rows = []
        for (suite, dataset), g in wide.groupby(["suite", "dataset"], sort=True):
            by = g.set_index("family")
            rows.append([cell(data.task_label(suite, dataset)),
                         *(cell(by.text.get(f, "—"), "missing" if f in by.index and pd.isna(by.crossover_n[f]) else "")
                           for f in ("attention", "MLP"))])
        p.add(table(["dataset", "attention overtakes boosting from", "MLP overtakes boosting from"], rows,
                    "table-index-crossover"))
        p.add(note("The smallest training size from which the family's best model beats the best boosting model "
                   "there and at every larger size run; 'never' when it is behind at the largest."))


def page_index(data: ReportData, standings: dict[str, Standing]) -> Page:
    from pipeline.report.markup import NAV

    p = Page("index.html", "attnbench report")
    c = data.cells
    n_ok = int((c.status == "ok").sum()) if len(c) else 0
    n_missing = int((c.status == "missing").sum()) if len(c) else 0
    n_failed = len(c) - n_ok - n_missing
    last = data.runs.iloc[0] if len(data.runs) else None
    stats = [("suites", ", ".join(sorted(c.suite.unique())) if len(c) else "—"),
             ("datasets", c.dataset.nunique() if len(c) else 0), ("models", len(data.models)),
             ("training sizes", ", ".join(data.sizes) or "—"),
             ("cells", f"{n_ok} ok · {n_failed} failed · {n_missing} missing"),
             ("last run", f"{last.run_id} ({last.status})" if last is not None else "—")]
    p.add('<div class="cards" id="summary">' + "".join(
        f'<div class="card"><div class="note">{esc(k)}</div><div class="stat">{esc(v)}</div></div>'
        for k, v in stats) + "</div>")
    size = data.headline_size
    if size is None or size not in standings:
        p.add(note("No results yet: run `attnbench run` to fill the database."))
    else:
        overview_answer(p, data)
        st = standings[size]
        p.h2(f"Leaderboard ({size_label(size)}, {len(st.scores)} tasks)", "leaderboard")
        p.add(summary_table(st, "table-headline"))
        p.figure(figs.elo_plot(st.elo.table, data.style(), st.elo.level), "fig-index-elo")
    p.h2("Pages", "pages")
    p.add('<div class="cards">' + "".join(
        f'<a href="{esc(href)}"><div class="card"><strong>{esc(label)}</strong>'
        f'<div class="note">{esc(DESCRIPTIONS[href])}</div></div></a>'
        for label, href in NAV if href in DESCRIPTIONS) + "</div>")
    return p


# ------------------------------------------------------------------------------------------ write
def write_report(db: str | Path, out_dir: str | Path) -> Path:
    """Write every page under ``out_dir`` (each atomically) and return the index's path."""
    data = ReportData.load(db)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    standings = {s: standing(data, s) for s in reversed(data.sizes)}
    builders: list[Callable[[], Page]] = [
        lambda: page_accuracy(data, standings), lambda: page_sample_size(data), lambda: page_tuning(data),
        lambda: page_compute(data, standings), lambda: page_memory(data), lambda: page_attention(data),
        lambda: page_claims(data), lambda: page_runs(data), lambda: page_index(data, standings),
    ]
    _write_plotly_js(out)  # first: a page is never there before the script it loads
    for build in builders:
        page = build()
        path = out / page.file
        tmp = path.with_suffix(".html.tmp")
        tmp.write_text(page.render(), encoding="utf-8")
        tmp.replace(path)
    return out / "index.html"


def _write_plotly_js(out: Path) -> None:
    """The one copy of plotly.js the pages load (offline, over ``file://``); rewritten only when the
    installed plotly's differs."""
    from plotly.offline import get_plotlyjs

    text = get_plotlyjs()
    path = out / PLOTLY_JS
    if path.is_file() and path.stat().st_size == len(text.encode("utf-8")) and path.read_text("utf-8") == text:
        return
    tmp = path.with_suffix(".js.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
