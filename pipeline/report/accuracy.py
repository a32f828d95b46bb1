"""The Accuracy page: per training size, the per-dataset table, the summary over tasks (rank,
normalised score, Elo, improvability, tuning gain, cost, budget flags), win rates, Elo and critical
difference."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pipeline.report import aggregate as agg
from pipeline.report import figures as figs
from pipeline.report.answer import family_of
from pipeline.report.data import ReportData, size_label
from pipeline.report.markup import Page, cell, esc, note, num, table

ELO_BOOTSTRAP = 200  # task resamples behind each Elo interval


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
        rows.append([cell(r.model), cell(family_of(r.kind)), cell(num(r.avg_rank, ".2f")), cell(num(r.normalized_score, ".3f")),
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
