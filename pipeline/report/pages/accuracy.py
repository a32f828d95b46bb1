"""The Accuracy page: per training size, the per-dataset table, the summary over tasks (rank,
normalised score, Elo, improvability, tuning gain, cost, budget flags), win rates, Elo and critical
difference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipeline.records import Status
from pipeline.report import aggregate as agg
from pipeline.report import figures as figs
from pipeline.report import pick
from pipeline.report import significance as sig
from pipeline.report.data import ReportData, size_label
from pipeline.report.elo import EloResult
from pipeline.report.elo import elo as elo_ratings
from pipeline.report.markup import Page, cell, coverage_class, esc, note, num, table
from pipeline.report.standing import MARGIN

ELO_BOOTSTRAP = 200  # task resamples behind each Elo interval


@dataclass
class Standing:
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


def standing(data: ReportData, size: str) -> Standing:
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
    per_model["tuning_helped"] = (gain > MARGIN).sum()  # by more than the standings' margin: closer is level
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
    return Standing(size, scores, summary, wins / n.where(n > 0), n, elo,
                    agg.critical_difference(scores[full], ran=ran[full]), ran, data.hardware_note(),
                    frozenset(data.other_hardware), data.in_context)


def coverage_text(r: pd.Series) -> str:
    parts = [agg.ran_text(r.tasks, r.tasks_total)] + ([f"{r.tasks_ok}/{r.tasks} complete"] if r.tasks else [])
    for key, word in (("tasks_partial", "partly failed"), ("tasks_unfinished", "partly run"), ("tasks_failed", "failed"),
                      ("tasks_missing", "not run yet")):
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


def elo_figure(st: Standing, style: figs.Style) -> Any:
    """The Elo figure of a standing, its models planned on fewer tasks drawn below the others, as the
    table lists them last (:func:`pipeline.report.figures.elo_plot`)."""
    return figs.elo_plot(st.elo.table, style, st.elo.level, st.fewer)


def summary_table(st: Standing, table_id: str) -> str:
    rows = []
    # The highest Elo is coloured only when one model has it: a tie is no one's win.
    # ... and only among the models that are planned on the most of the tasks (a model's Elo from fewer games is not a win)
    full = st.summary[~st.summary.fewer_tasks]
    at_top = full.elo >= full.elo.max() - 1e-6
    best_elo = full.elo.max() if at_top.sum() == 1 else None
    for r in st.summary.itertuples(index=False):
        s = pd.Series(r._asdict())
        elo_txt = f"{num(r.elo, '.0f')} [{num(r.elo_low, '.0f')}, {num(r.elo_high, '.0f')}]"
        incomplete = r.tasks_ok < r.tasks or bool(r.tasks_missing)
        gain = cell(f"{num(r.tuning_gain, '+.3f')} ({int(r.tuning_helped)}/{int(r.tuning_compared)} tasks)"
                    if r.tuning_compared else "—",
                    title="" if r.tuning_compared else "one trial per cell (its default): no search to compare")
        bound = bound_text(r.epochs_bound, r.search_bound)
        rows.append([cell(f"{r.model} †" if r.model in st.other_hardware else r.model), cell(r.family + (" · in-context" if r.model in st.in_context else "")),
                     cell(num(r.avg_rank, ".2f")), cell(num(r.normalized_score, ".3f")),
                     cell(elo_txt, "best" if best_elo is not None and r.elo == best_elo and not r.fewer_tasks else ""),
                     cell(num(100 * r.improvability, ".1f") + "%" if not pd.isna(r.improvability) else "—"),
                     gain, cell(num(r.train_s_per_1k, ".3g")), cell(num(r.predict_s_per_1k, ".3g")),
                     cell(bound or "—", "partial" if bound else ""),
                     cell(f"⊘ {int(r.no_better)}" if r.no_better else "0", "missing" if r.no_better else "",
                          "finished cells that scored no better than the constant predictor"),
                     cell(coverage_text(s), "partial" if incomplete else ""),
                     cell(f"{r.cells_ok}/{r.cells}" + (f" ({r.cells_failed} failed, {r.cells_missing} not run yet)"
                                                       if r.cells_ok < r.cells else ""),
                          "partial" if r.cells_ok < r.cells else "")])
    return (table(["model", "family", "average rank", "normalised score", f"Elo [{st.elo.level:.0%} CI]",
                   "improvability", "tuned − default test score", "train s / 1K rows", "predict s / 1K rows",
                   "budget-bound", "≤ constant predictor (cells)", "coverage (tasks)", "cells ok"], rows, table_id)
            + note("Sorted by average rank, the models planned on the most of the tasks first (a rank, or an Elo, over "
                   "fewer tasks is listed after them and never coloured the best). Coverage: the tasks the model ran "
                   "of this table's tasks; a model never "
                   "planned on a task is left out of it, not scored 0. Improvability: how much lower the best model's error is than this "
                   "model's, as a share of its own, averaged over tasks (0% = best everywhere; TabArena). "
                   "Tuned − default: mean test-score gain of the selected configuration over the default one "
                   f"(the search's first trial), with the tasks where tuning helped (by more than {MARGIN}: closer "
                   "is level), over the cells whose search "
                   "scored more than one configuration (— where none did: one trial is the default). Time per 1,000 rows: the "
                   "selected trial's training time per 1,000 training rows, and prediction time per 1,000 "
                   "rows. ≤ constant predictor: finished cells that scored no better than the majority class "
                   "or the training mean on the same split (the model learned nothing there). " + BOUND_NOTE
                   + (" " + st.hardware_note if st.hardware_note else "")))


def not_applicable_table(data: ReportData) -> str:
    """One row per model and dataset whose cells were left out of the plan as past the model's limits."""
    na = data.not_applicable
    rows = [[cell(m), cell(d), cell(", ".join(agg.size_order(g.sample_size))), cell(g.why.iloc[0])]
            for (m, d), g in na.groupby(["model", "dataset"], sort=True)]
    return (table(["model", "dataset", "training sizes", "why (at the first size)"], rows, "table-not-applicable")
            + note("A model that declares limits (training rows, features, classes; an in-context transformer's "
                   "context) is not planned on a cell past them: such a cell is not applicable, never a failure and "
                   "never a zero, and the model is left out of those tasks' aggregates. A subsampled context "
                   "(the declared option context_rows, under a label of its own) can run them."))


def per_dataset_table(data: ReportData, size: str, table_id: str) -> str:
    lb = data.leaderboard[data.leaderboard.sample_size == size]
    if lb.empty:
        return note("No results at this size.")
    models = data.models
    marks = sig.significance(data.cells[data.cells.sample_size == size]).set_index(["dataset", "split_key", "model"])
    here = data.not_applicable[data.not_applicable.sample_size == size]
    na = dict(zip(zip(here.dataset, here.model), here.why))  # (dataset, model) → why it is not applicable
    rows = []
    for (dataset, split_key, metric), g in lb.groupby(["dataset", "split_key", "metric"], sort=True):
        by = g.set_index("model")
        here = (dataset, split_key)
        verdicts = marks.loc[here] if here in marks.index.droplevel("model") else None
        row = [cell(data.task_label(dataset, split_key)), cell(metric)]
        for m in models:
            if m not in by.index and (dataset, m) in na:
                row.append(cell("not applicable", "notrun num", f"past the model's declared limits ({na[dataset, m]}): "
                                "left out of the plan, never a failure or a zero"))
                continue
            if m not in by.index:
                row.append(cell("not run", "notrun num", "no suite planned this model on this dataset and size: "
                                "it is left out of this task's ranks and aggregates, not scored 0"))
                continue
            r = by.loc[m]
            if r.n_ok == 0:  # red where cells failed; grey where none has run yet (a study in chunks)
                said = (f"failed ({int(r.n_failed)}/{int(r.n_cells)})" if r.n_failed
                        else f"not run yet ({int(r.n_missing)}/{int(r.n_cells)})")
                row.append(cell(said, coverage_class(0, int(r.n_cells), int(r.n_failed)) + " num",
                                f"{int(r.n_failed)} failed, {int(r.n_missing)} not run yet of {int(r.n_cells)} cells"))
                continue
            std = f" ± {num(r.score_std)}" if not pd.isna(r.score_std) else ""
            cov = f" ({int(r.n_ok)}/{int(r.n_cells)})" if r.n_ok < r.n_cells else ""
            cls = "best" if r.is_best else ("partial" if cov else "")
            flag = " ⚑" if r.n_epochs_bound or r.n_search_bound else ""
            title = f"{int(r.n_ok)} ok, {int(r.n_failed)} failed, {int(r.n_missing)} not run yet"
            if flag:
                title += "; budget-bound: " + bound_text(r.n_epochs_bound, r.n_search_bound).replace("⚑ ", "")
            if r.n_no_better:  # it learned nothing there: the floor, not the model, set its score
                flag += " ⊘"
                cls = "missing"
                title += (f"; no better than the constant predictor in {int(r.n_no_better)} of {int(r.n_ok)} "
                          "finished cells")
            mark = ""
            if verdicts is not None and m in verdicts.index:
                v = verdicts.loc[m]
                if v.verdict in ("not worse", "worse"):
                    mark = " ≈" if v.verdict == "not worse" else " ▾"
                    title += (f"; against the best ({v.best}): Wilcoxon p = {v.p:.2g}, Holm-adjusted "
                              f"{v.p_holm:.2g} over {int(v.n_pairs)} splits")
            row.append(cell(f"{num(r.score_mean)}{std}{cov}{flag}{mark}", cls, title))
        const = g.constant_mean.dropna()
        row.append(cell(num(const.iloc[0]) if len(const) else "—", "reference",
                        "majority class (classification) or training mean (regression), scored on the same "
                        "test rows" if len(const) else "not recorded for this results file"))
        row.append(cell(significance_text(verdicts)))
        rows.append(row)
    return (table(["dataset", "metric", *models, "constant predictor", "not significantly worse than the best"],
                  rows, table_id)
            + note("Mean ± std over folds and subset seeds; highlighted: the best mean when one model alone has "
                   "it (a tie is no one's win); ⚑: budget-bound (hover for which budget). Constant predictor: the "
                   "floor every model must clear, the majority class or the training mean on the same splits; "
                   "⊘: the model scored no better than it in at least one cell (hover for how many): it "
                   "learned nothing there. Red 'failed': none of the task's cells ok, some failed; grey 'not run "
                   "yet': none of them has run (a study in chunks), not a failure. Significance, per dataset: each model against the best mean, a paired "
                   f"two-sided Wilcoxon signed-rank test over the splits both finished, Holm-corrected across the "
                   f"models, α = {sig.ALPHA}; ≈ not significantly worse than the best, ▾ significantly worse. With "
                   f"n splits the smallest p is 2/2ⁿ, and Holm multiplies it by the number of models compared: "
                   f"below {sig.MIN_SPLITS} splits for one model, 7 for two or three, 8 for four to six, no "
                   "difference can reach α, and the table says so instead of testing."))


def significance_text(verdicts: pd.DataFrame | None) -> str:
    """One dataset's significance verdicts in words."""
    if verdicts is None or verdicts.empty:
        return "—"
    best = verdicts[verdicts.verdict == "best"]
    if best.empty:
        return "no model finished"
    few = verdicts[verdicts.verdict == "too few splits"]
    tested = verdicts[verdicts.verdict.isin(["not worse", "worse"])]
    parts = [f"best: {best.index[0] if len(best) == 1 else ', '.join(best.index)}"]
    if len(tested):
        same = list(tested.index[tested.verdict == "not worse"])
        parts.append(f"≈ {', '.join(same)}" if same else "every other model is significantly worse")
        parts[-1] += f" ({int(tested.n_pairs.min())}+ splits)"
    if len(few):
        others = len(few) + len(tested)
        parts.append(f"too few splits to test ({int(few.n_pairs.max())}; with {others} model{'s' * (others > 1)} "
                     f"beside the best the test needs {int(few.needed.iloc[0])})")
    return "; ".join(parts)


def ensemble_rows(data: ReportData, size: str) -> pd.DataFrame:
    """Per model, and per family: mean over tasks of the default, tuned and tuned + ensembled test
    scores, each over the same cells (those with stored predictions). A family's ensemble pools every
    trial of its models on each split; its 'tuned' is, per split, the one trial of them best on
    validation (the ensemble's first pick), so that neither side is chosen by test."""
    ens = data.ensembles
    if ens.empty:
        return pd.DataFrame()
    ens = ens[ens.sample_size == size]
    cells = data.cells[(data.cells.sample_size == size) & (data.cells.status == Status.OK)]
    mine = ens[~ens.pooled.astype(bool)].merge(cells[[*agg.SPLIT, "model", "score", "default_score", "cell_id"]],
                                           on=[*agg.SPLIT, "model"], suffixes=("_ens", ""))
    mine = mine[mine.cell_id.isin(searched_cells(data))]  # one configuration: default = tuned = ensembled
    rows = []
    for model, g in mine.groupby("model"):
        t = g.groupby(agg.TASK)[["default_score", "score", "score_ens", "members"]].mean()
        d = t.score_ens - t.score
        rows.append({"model": model, "family": data.family(model), "default": t.default_score.mean(),
                     "tuned": t.score.mean(), "ensembled": t.score_ens.mean(), "gain": d.mean(),
                     "helped": int((d > MARGIN).sum()), "hurt": int((d < -MARGIN).sum()), "tasks": len(t),
                     "members": t.members.mean(), "candidates": g.candidates.mean()})
    fam = ens[ens.pooled.astype(bool)]
    for name, g in fam.groupby("model"):
        family = name.removesuffix(" (all models)")
        t = g.groupby(agg.TASK)[["score", "members", "selected_score"]].mean()
        d = t.score - t.selected_score
        rows.append({"model": name, "family": family, "default": float("nan"), "tuned": t.selected_score.mean(),
                     "ensembled": t.score.mean(), "gain": d.mean(), "helped": int((d > MARGIN).sum()),
                     "hurt": int((d < -MARGIN).sum()), "tasks": len(t), "members": t.members.mean(),
                     "candidates": g.candidates.mean()})
    return pd.DataFrame(rows)


def ensemble_table(data: ReportData, size: str, table_id: str) -> str:
    rows_df = ensemble_rows(data, size)
    if rows_df.empty:
        return note("No stored predictions at this size (a run with --no-predictions, or a results file "
                    "from before predictions were kept): no post-hoc ensembles.")
    rows = []
    for r in rows_df.itertuples(index=False):
        rows.append([cell(r.model), cell(r.family), cell(num(r.default) if not pd.isna(r.default) else "—"),
                     cell(num(r.tuned)), cell(num(r.ensembled)),
                     cell(f"{num(r.gain, '+.4f')} ({r.helped} better, {r.hurt} worse of {r.tasks})"),
                     cell(f"{num(r.members, '.1f')} of {num(r.candidates, '.1f')}")])
    return (table(["model", "family", "default", "tuned", "tuned + ensembled", "ensembled − tuned (tasks)",
                   "trials in the ensemble (of)"], rows, table_id)
            + note("Test scores, mean over tasks, each over the same cells. Default: the search's first trial "
                   "(the model's defaults); tuned: the trial validation selected; tuned + ensembled: Caruana's "
                   "greedy ensemble of the cell's trials (with replacement, 25 iterations, the best iteration "
                   "kept), chosen on validation predictions by the same rule as the tuned trial and averaged "
                   "on test: built from the predictions the results file keeps, with no retraining "
                   "(TabArena's 'tuned + ensembled'). A family row '(all models)' pools every trial of the "
                   "family's models on each split; its 'tuned' is the one trial of them best on validation. "
                   f"Better, worse: tasks where the ensemble gained or lost more than {MARGIN}; the rest are level."))


def published_table(data: ReportData) -> str:
    """Published figures for the datasets of this report (matched by OpenML id), beside our score at
    the dataset's largest training size: the same algorithm's where we ran it, and our best model's."""
    from pipeline.report import published

    pub = published.load()
    ids = data.datasets.dropna(subset=["openml_id"])
    by_id = {int(i): name for i, name in zip(ids.openml_id, ids.dataset)}
    pub = pub[pub.openml_id.isin(list(by_id))]
    lb = data.leaderboard[data.leaderboard.n_ok > 0]
    rows = []
    for (did, metric), g in pub.groupby(["openml_id", "metric"], sort=True):
        name = by_id[int(did)]
        mine = lb[(lb.dataset == name) & (lb.metric == metric)]
        if mine.empty:
            continue
        for split_key, ours in mine.groupby("split_key", sort=True):
            size = agg.size_order(ours.sample_size)[-1]
            at = ours[ours.sample_size == size].set_index("model")
            top = at.index[int(pick.index_by_validation(at.score_mean.to_numpy(), at.val_mean.to_numpy()))]
            best_txt = f"{top}: {num(at.score_mean[top])}"
            for r in g.sort_values("value", ascending=False).itertuples(index=False):
                counterpart = published.ours_for(r.model)
                if counterpart in at.index:
                    o = at.loc[counterpart]
                    std = f" ± {num(o.score_std)}" if not pd.isna(o.score_std) else ""
                    same = cell(f"{counterpart}: {num(o.score_mean)}{std} ({int(o.n_ok)} splits)")
                else:
                    same = cell("—", "missing", "we did not run this algorithm here" if counterpart is None
                                else f"{counterpart} is not in this run")
                std = f" ± {num(r.std)}" if not pd.isna(r.std) else ""
                n = f", n = {int(r.n)}" if not pd.isna(r.n) else ""
                rows.append([cell(data.task_label(name, split_key)), cell(metric), cell(r.model),
                             cell(f"{num(r.value)}{std}", "reference", f"{r.aggregate}{n}"),
                             cell(str(r.protocol)[:90] + ("…" if len(str(r.protocol)) > 90 else ""), "",
                                  f"{r.protocol} Source: {r.source}"),
                             same, cell(f"{best_txt} ({size_label(size)})")])
    if not rows:
        return note("None of this report's datasets has a published figure in attnbench's table (the "
                    "AMLB 2019, OpenML and TabR / TabM figures for the dev and large datasets).")
    return (table(["dataset", "metric", "published model", "published (other protocol)", "their protocol",
                   "ours, same algorithm", "our best model (by validation)"], rows, "table-published")
            + note("Figures from the papers' and benchmarks' own runs on the same version of each dataset, "
                   "under their protocols (their folds or splits, search budgets and training sizes; hover a "
                   "protocol for all of it and its source): a level to compare with, not a like-for-like "
                   "result. Ours: the test score at the dataset's largest training size in this report; our best model "
                   "is the one with the best validation score there (the highest test score would flatter us). "
                   "docs/PROTOCOL.md lists the differences; benchmarks/agreement.py runs the like-for-like "
                   "comparison."))


def page_accuracy(data: ReportData, standings: dict[str, Standing]) -> Page:
    p = Page("accuracy.html", "Accuracy")
    p.card("Test score of the best-on-validation configuration of each model: accuracy for classification, R² "
           "for regression; mean ± std over folds and subset seeds. A task is one dataset split one way at one "
           "training size, whichever suite ran it. Failed or missing cells are never dropped: the tables show "
           "them, and in the aggregates a model that ran a task and has no score there (every cell failed) "
           "ranks last, gets normalised score 0 and loses to every model with a score. A model that did not "
           "run a task (never planned on it, or planned with no record yet: 'not run yet') is left out of "
           "that task: each model's figures are over the tasks it ran (the coverage "
           "column says how many), and every pairwise comparison counts only the tasks both ran. Normalised "
           "score: per task, 1 = the best model, 0 = the worst of those that ran it (Grinsztajn et al., 2022). "
           "Elo: Bradley–Terry ratings from pairwise task outcomes, as TabArena computes them (its tiny ridge "
           "keeps a model that loses every game finite but far below), mean 1000, "
           f"{ELO_BOOTSTRAP} bootstrap resamples of tasks. Critical difference: Friedman test and Nemenyi "
           "post-hoc (Demšar, 2006), α = 0.05, over the tasks every model ran, of the models planned on the most tasks.")
    if not standings:
        p.add(note("No results yet."))
        return p
    if data.unshared_note():
        p.add(note(data.unshared_note()))
    p.add('<p class="toc">' + "".join(f'<a href="#size-{esc(s)}">{esc(size_label(s))}</a>' for s in standings) + "</p>")
    style = data.style()
    for size, st in standings.items():
        p.h2(f"Training size: {size_label(size)}", f"size-{size}")
        p.h3("Per dataset")
        p.add(per_dataset_table(data, size, f"table-datasets-{size}"))
        p.h3("Default, tuned, tuned + ensembled")
        p.add(ensemble_table(data, size, f"table-ensembles-{size}"))
        p.h3(f"Over {len(st.scores)} tasks")
        if st.uneven:
            p.add(note("Not every model ran every task: each model's average rank, normalised score and "
                       "improvability are over the tasks it ran (coverage column), its Elo from the games it "
                       "played; compare models that rest on different tasks with care."))
        p.add(summary_table(st, f"table-summary-{size}"))
        p.figure(figs.summary_bars(st.summary, style), f"fig-summary-{size}")
        p.h3("Win rate")
        p.add(note("Share of the tasks both ran on which the row model's mean score beat the column model's "
                   "(ties count ½; a tie here is equal scores, as ranks and Elo count them, where the overview's "
                   "family records and the sample-size page call scores within 0.005 level); hover for the number "
                   "of tasks compared."))
        p.figure(figs.win_rate_heatmap(st.win_rates, st.matches), f"fig-winrate-{size}")
        p.h3("Elo")
        p.figure(elo_figure(st, style), f"fig-elo-{size}")
        p.h3("Critical difference")
        cd = st.cd
        left_out = (f" Left out, as planned on fewer of the tasks than the others: {', '.join(sorted(st.fewer))}."
                    if st.fewer else "")
        if cd.n_tasks < 2 or len(cd.avg_ranks) < 2:
            p.add(note("A critical-difference comparison needs at least two tasks that every model ran, and two "
                       f"models ({cd.n_tasks} such task{'s' if cd.n_tasks != 1 else ''} here)." + left_out))
        else:
            common = f"the {cd.n_tasks} tasks every model compared ran" if st.uneven else f"{cd.n_tasks} tasks"
            p.add(note(f"Friedman χ² = {num(cd.friedman_stat, '.2f')}, p = {num(cd.friedman_p, '.3g')} over "
                       f"{common}; Nemenyi CD = {num(cd.cd, '.2f')}. Models joined by a bar are not "
                       "significantly different." + left_out))
            p.figure(figs.cd_diagram(cd, style), f"fig-cd-{size}")
    if len(data.not_applicable):
        p.h2("Not applicable: past a model's declared limits", "not-applicable")
        p.add(not_applicable_table(data))
    p.h2("Published figures beside ours (other protocols)", "published")
    p.add(published_table(data))
    return p
