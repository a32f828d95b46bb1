"""The tuning-budget page: the best validation score, and the selected configuration's test score,
against the number of trials and the seconds they took."""

from __future__ import annotations

from pipeline.data.views import N_SHUFFLES
from pipeline.report import aggregate as agg
from pipeline.report import figures as figs
from pipeline.report.data import ReportData, size_label
from pipeline.report.markup import Page, cell, note, num, table


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
