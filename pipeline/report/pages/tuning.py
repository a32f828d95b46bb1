"""The tuning-budget page: tuned entries beside the same models at their defaults, where a results file
holds both (:mod:`pipeline.report.stats.tuned`); then the best validation score, and the selected
configuration's test score, against the number of trials and the seconds they took."""

from __future__ import annotations

import pandas as pd

from pipeline.data.views import N_SHUFFLES
from pipeline.models.kinds import BOOSTING, families
from pipeline.report import figures as figs
from pipeline.report.data import ReportData, size_label
from pipeline.report.markup import Page, cell, note, num, table
from pipeline.report.site import PageSpec
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import tuned as tn
from pipeline.report.stats.standing import MARGIN

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


STANDING_CLASS = {"ahead": "best", "behind": "missing", "failed": "missing", "not converged": "partial"}


def interval_text(low: float, high: float) -> str:
    return "" if pd.isna(low) else f" [{low:+.3f}, {high:+.3f}]"


def diff_class(mean: float, low: float, high: float) -> str:
    """Green or red only past the margin with an interval that excludes zero, as a standing reads."""
    if pd.isna(mean) or abs(mean) <= MARGIN or pd.isna(low) or low <= 0 <= high:
        return ""
    return "best" if mean > 0 else "missing"


def tuned_beside_defaults(p: Page, data: ReportData) -> None:
    """Where the file holds a model both at its defaults and searched: the two on the splits the search
    ran, and each family's gap to boosting at defaults and tuned, split by split, the same models both ways."""
    found = tn.entries(data.cells, data.trials)
    cells = tn.slice_cells(data.cells, found)
    pairs = tn.pairs_table(cells, found)
    if pairs.empty:
        return
    p.h2("Tuned beside defaults", "tuned-beside-defaults")
    p.add(note("Each model searched (the configuration its search selected by validation) beside its entry at "
               "its defaults (one trial per cell; that entry's settings, which may differ from the search's first "
               "trial), split by split on the splits where the search finished: a task whose defaults ran on more "
               f"folds counts only the folds both ran. Better, worse: by more than {MARGIN}; closer is level. "
               "Failed: splits where the search failed (no score: not in the mean). Interval: 95% t-interval "
               "over the splits. Accuracy and R² differences are averaged together, as the sample-size page's "
               "mean over datasets is."))
    p.add(table(["model at defaults", "searched", "splits", "default", "tuned", "tuned − default [95% CI]",
                 "better / level / worse", "failed"],
                [[cell(r.model), cell(r.tuned), cell(r.splits), cell(num(r.default)), cell(num(r.tuned_score)),
                  cell(num(r.diff, "+.3f") + interval_text(r.low, r.high), diff_class(r.diff, r.low, r.high)),
                  cell(f"{r.better} / {r.level} / {r.worse}"), cell(r.failed, "missing" if r.failed else "")]
                 for r in pairs.itertuples(index=False)], "table-tuned-pairs"))
    shown = False
    for family in [f for f in families(data.kinds) if f != BOOSTING]:
        g = tn.gaps(cells, data.family, found, family)
        if g.empty:
            continue
        shown = True
        p.h3(f"{family} − gradient boosting, at defaults and tuned")
        rows = [[cell(data.task_label(r.dataset, r.split_key)), cell(size_label(r.sample_size)), cell(r.fold),
                 *(x for side in ("default", "tuned") for x in (
                     cell(f"{getattr(r, side + '_model')} − {getattr(r, side + '_boosting')}"
                          if getattr(r, side + "_model") else "—"),
                     cell(num(getattr(r, side + "_diff"), "+.3f")),
                     cell(getattr(r, side + "_standing"), STANDING_CLASS.get(getattr(r, side + "_standing"), ""))))]
                for r in g.itertuples(index=False)]
        sums = {side: tn.gap_summary(g, side) for side in ("default", "tuned")}
        rows.append([cell("mean over the splits compared"), cell(""), cell(""),
                     *(x for side in ("default", "tuned") for x in (
            cell(f"{sums[side]['n']} splits"),
            cell(num(sums[side]["mean"], "+.3f") + interval_text(sums[side]["low"], sums[side]["high"]),
                 diff_class(sums[side]["mean"], sums[side]["low"], sums[side]["high"])),
            cell(", ".join(f"{k} {v}" for k, v in sums[side].items()
                           if k in ("ahead", "level", "behind") or (k in ("not converged", "failed") and v)))))])
        p.add(table(["dataset", "training rows", "fold", "at defaults: models", "difference", "standing",
                     "tuned: models", "difference", "standing"], rows, f"table-tuned-gap-{family.replace(' ', '-')}"))
    if not shown:
        return
    p.add(note("The same models both ways: at defaults, the entries at their defaults of the models that were "
               "searched; tuned, their searched entries (of several in a family, the one with the best validation "
               f"score on the split). Level: the difference within {MARGIN}; one fold gives no interval over "
               "folds. Not converged: the model behind was still improving when its epochs, rounds or time ran "
               "out. Failed: a searched cell failed on that split. Both means are over the same splits: those read "
               "ahead, level or behind both at defaults and tuned."))
