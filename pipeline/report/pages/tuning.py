"""The tuning-budget page: tuned entries beside the same models at their defaults, where a results file
holds both (:mod:`pipeline.report.stats.tuned`); then the best validation score, and the selected
configuration's test score, against the number of trials and the seconds they took."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipeline.data.views import N_SHUFFLES
from pipeline.models.kinds import BOOSTING, families
from pipeline.report import figures as figs
from pipeline.report.data import ReportData, size_label
from pipeline.report.markup import Cell, Page, cell, esc, note, num, table, verdict_cell
from pipeline.report.parts import VERDICT_CLASS, VERDICT_NOTE
from pipeline.report.site import PageSpec
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import tuned as tn
from pipeline.report.stats.verdicts import MARGIN, Decision, Verdict, pair_key

SPEC = PageSpec("tuning.html", "Tuning budget",
                "Best validation score, and the selected configuration's test score, against trials and seconds.",
                lambda s: page_tuning(s.data))


def page_tuning(data: ReportData) -> Page:
    p = SPEC.page()
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
    tuned_beside_defaults(p, data)
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


def interval_text(low: float, high: float) -> str:
    return "" if pd.isna(low) else f" [{low:+.3f}, {high:+.3f}]"


def side_cell(d: Decision | None, said: str, key: str) -> Cell:
    """A task's verdict on one side (or 'failed'), with the pair and verdict as data; a one-fold verdict says
    where its difference lies against the margin."""
    if d is None:
        return cell(said, "missing" if said == tn.FAILED else "")
    text = d.words()
    if d.one_split and d.lean is not None:
        text += f", {'within' if d.lean is Verdict.EQUIVALENT else 'past'} ±{MARGIN:g}"
    return verdict_cell(esc(text), d.verdict, key, VERDICT_CLASS.get(d.verdict, ""), d.sentence())


def tuned_beside_defaults(p: Page, data: ReportData) -> None:
    """Where the file holds a model both at its defaults and searched: the two on the splits the search
    ran, and each family's gap to boosting at defaults and tuned, task by task, the same models both ways."""
    found = tn.entries(data.cells, data.trials)
    cells = tn.slice_cells(data.cells, found)
    pooled = min((data.folds(d, k) for d, k in set(zip(cells.dataset, cells.split_key))), default=2)
    pairs = tn.pairs_table(cells, found, folds=pooled)
    if pairs.empty:
        return
    p.h2("Tuned beside defaults", "tuned-beside-defaults")
    p.add(note("Each model searched (the configuration its search selected by validation) beside its entry at "
               "its defaults (one trial per cell; that entry's settings, which may differ from the search's first "
               "trial), split by split on the splits where the search finished: a task whose defaults ran on more "
               f"folds counts only the folds both ran. Better, worse: splits where tuned was so by more than {MARGIN}; "
               "within: closer. Failed: splits where the search failed (no score: not in the mean). Verdict and "
               "interval: over the splits both scored, corrected for the training rows the splits of one dataset "
               f"share (k = {pooled}, the smallest design's). Accuracy and R² differences are averaged together, as "
               "the sample-size page's mean over datasets is."))
    p.add(table(["model at defaults", "searched", "splits", "default", "tuned", "tuned − default [95% interval]",
                 "verdict", f"better / within ±{MARGIN:g} / worse", "failed"],
                [[cell(r.model), cell(r.tuned), cell(r.splits), cell(num(r.default)), cell(num(r.tuned_score)),
                  cell(num(r.diff, "+.3f") + interval_text(r.low, r.high), VERDICT_CLASS.get(r.verdict, "")),
                  verdict_cell(esc(r.decision.words()), r.verdict, pair_key("*", "*", "slice", r.tuned, r.model),
                               VERDICT_CLASS.get(r.verdict, ""), r.decision.sentence()),
                  cell(f"{r.better} / {r.within} / {r.worse}"), cell(r.failed, "missing" if r.failed else "")]
                 for r in pairs.itertuples(index=False)], "table-tuned-pairs"))
    shown = False
    every = data.cells.groupby(agg.TASK)[["repeat", "fold"]].apply(lambda g: len(g.drop_duplicates()))
    here = cells.groupby(agg.TASK)[["repeat", "fold"]].apply(lambda g: len(g.drop_duplicates()))
    for family in [f for f in families(data.kinds) if f != BOOSTING]:
        g = tn.gaps(cells, data.family, found, family, data.folds)
        if g.empty:
            continue
        shown = True
        p.h3(f"{family} − gradient boosting, at defaults and tuned")

        def key(r: Any, side: str) -> str:
            task = (r.dataset, r.split_key, r.sample_size)
            narrower = here.get(task, 0) < every.get(task, 0)  # the slice's folds only: not the task's verdict
            return pair_key(*task, getattr(r, side + "_model"), getattr(r, side + "_boosting"),
                            scope="slice" if narrower else "")

        rows = [[cell(data.task_label(r.dataset, r.split_key)), cell(size_label(r.sample_size)),
                 cell(int(here.get((r.dataset, r.split_key, r.sample_size), 0))),
                 *(x for side in ("default", "tuned") for x in (
                     cell(f"{getattr(r, side + '_model')} − {getattr(r, side + '_boosting')}"
                          if getattr(r, side + "_model") else "—"),
                     cell(num(getattr(r, side + "_diff"), "+.3f")),
                     side_cell(getattr(r, side + "_decision"), getattr(r, side + "_standing"), key(r, side))))]
                for r in g.itertuples(index=False)]
        sums = {side: tn.gap_summary(g, side) for side in ("default", "tuned")}
        rows.append([cell("mean over the tasks compared"), cell(""), cell(""),
                     *(x for side in ("default", "tuned") for x in (
            cell(f"{sums[side]['n']} tasks"),
            cell(num(sums[side]["mean"], "+.3f") + interval_text(sums[side]["low"], sums[side]["high"])),
            cell(tn.gap_words(sums[side]))))])
        p.add(table(["dataset", "training rows", "folds", "at defaults: models", "difference", "verdict",
                     "tuned: models", "difference", "verdict"], rows, f"table-tuned-gap-{family.replace(' ', '-')}"))
    if not shown:
        return
    p.add(note("The same models both ways: at defaults, the entries at their defaults of the models that were "
               "searched; tuned, their searched entries (of several in a family, the one with the best validation "
               "score on the task). Each task's verdict is over the folds the slice ran (one fold: undetermined, with "
               f"where its difference lies against ±{MARGIN:g}). Failed: a searched cell failed on that task. Both "
               "means are over the same tasks: those with a difference both at defaults and tuned, their interval "
               "over tasks. " + VERDICT_NOTE))
