"""The Accuracy page: per training size, the per-dataset table, the summary over tasks (rank,
normalised score, Elo, improvability, tuning gain, cost, budget flags), win rates, Elo and critical
difference."""

from __future__ import annotations

import pandas as pd

from pipeline.records import Status
from pipeline.report import figures as figs
from pipeline.report.data import ReportData, metric_words, size_label
from pipeline.report.markup import Page, cell, esc, note, num, table, unscored
from pipeline.report.parts import bound_text, elo_figure, summary_table
from pipeline.report.site import PageSpec
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import pick
from pipeline.report.stats import significance as sig
from pipeline.report.stats.ranking import ELO_BOOTSTRAP, Ranking, searched_cells
from pipeline.report.stats.standing import MARGIN

SPEC = PageSpec("accuracy.html", "Accuracy",
                "Per-dataset scores, average rank, normalised score, win rates, Elo, critical difference.",
                lambda s: page_accuracy(s.data, s.rankings))


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
                said, cls = unscored(int(r.n_cells), int(r.n_failed), int(r.n_missing))
                row.append(cell(said, cls + " num",
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
                   f"Better, worse: tasks where the ensemble gained or lost more than {MARGIN}; the rest within it."))


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


def page_accuracy(data: ReportData, rankings: dict[str, Ranking]) -> Page:
    p = SPEC.page()
    p.card(f"Test score of the best-on-validation configuration of each model: {metric_words(data.leaderboard)} "
           "(a suite's protocol.metric); mean ± std over folds and subset seeds. A task is one dataset split one way at one "
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
    if not rankings:
        p.add(note("No results yet."))
        return p
    p.shared_notes_here()  # the notes every page shares (the site adds them) go here, under the lead
    p.add('<p class="toc">' + "".join(f'<a href="#size-{esc(s)}">{esc(size_label(s))}</a>' for s in rankings) + "</p>")
    style = data.style()
    for size, st in rankings.items():
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
                   "(ties count ½; a tie here is equal scores, as ranks and Elo count them; the overview's and the "
                   "sample-size page's verdicts are each pair's difference over folds, with its interval); hover for "
                   "the number "
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
