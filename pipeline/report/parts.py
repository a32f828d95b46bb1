"""The parts more than one page shows, kept apart from the pages (a page never imports another page): a
training size's ranking table and its Elo figure (the Accuracy page's, per size; the overview's headline
leaderboard), and the budget-bound flag in words (the overview, the Accuracy and sample-size pages)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipeline.records import Verdict
from pipeline.report import figures as figs
from pipeline.report.markup import cell, note, num, table
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats.ranking import Ranking
from pipeline.report.stats.verdicts import MARGIN

# A verdict's colour (CSS class) wherever a page shows one: green ahead, red behind, amber not converged, grey
# not compared; equivalent and undetermined plain.
VERDICT_CLASS = {Verdict.AHEAD: "best", Verdict.BEHIND: "missing", Verdict.NOT_CONVERGED: "partial",
                 Verdict.NOT_COMPARED: "notrun"}

VERDICT_NOTE = (f"Verdicts: each pair's difference of test score over the splits both finished, with its 95% interval "
                "corrected for the training rows the splits of cross-validation share (Nadeau and Bengio's "
                f"corrected resampled t). Equivalent: its 90% interval lies within ±{MARGIN} (accuracy or R²). "
                "Ahead or behind: its 95% interval excludes zero (not converged where the one behind was still "
                "improving when its epochs, rounds or time ran out). Undetermined: neither, so the folds cannot "
                "tell the two apart, and on one fold, which gives no interval. docs/PROTOCOL.md has the rule; the "
                "standings view every pair's verdict.")


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


def elo_figure(st: Ranking, style: figs.Style) -> Any:
    """The Elo figure of a ranking, its models planned on fewer tasks drawn below the others, as the
    table lists them last (:func:`pipeline.report.figures.elo_plot`)."""
    return figs.elo_plot(st.elo.table, style, st.elo.level, st.fewer)


def summary_table(st: Ranking, table_id: str) -> str:
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
                   "is no gain), over the cells whose search "
                   "scored more than one configuration (— where none did: one trial is the default). Time per 1,000 rows: the "
                   "selected trial's training time per 1,000 training rows, and prediction time per 1,000 "
                   "rows. ≤ constant predictor: finished cells that scored no better than the majority class "
                   "or the training mean on the same split (the model learned nothing there). " + BOUND_NOTE
                   + (" " + st.hardware_note if st.hardware_note else "")))
