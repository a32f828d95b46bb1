"""The index page: the answer by training size, first as one figure (each family's best on each dataset
against the best boosting model there, as shares of the datasets by verdict, beside each family's leader's
mean normalised score), then the headline in one sentence, per size in a table, and in words (coverage,
crossovers, caveats); costs and crossovers; what the report holds; the headline leaderboard; links to every
page. Every verdict is the ``standings`` view's."""

from __future__ import annotations

from typing import Any

from pipeline.models.kinds import ATTENTION, BOOSTING, NETWORK, families
from pipeline.records import Status
from pipeline.report import curve_figures as curve_figs
from pipeline.report import figures as figs
from pipeline.report.data import ReportData, dataset_anchor, size_label
from pipeline.report.markup import Cell, Page, cell, esc, note, num, raw, table, verdict_cell
from pipeline.report.parts import BOUND_NOTE, VERDICT_NOTE, bound_text, elo_figure, summary_table
from pipeline.report.site import PageSpec
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import crossover as cross
from pipeline.report.stats.answer import (
    SizeAnswer,
    crossover_text,
    family_crossovers,
    floor_sentence,
    headline_sentence,
    size_answer,
    size_sentence,
    summary_sentences,
)
from pipeline.report.stats.pick import SMALL_VALIDATION
from pipeline.report.stats.ranking import Ranking
from pipeline.report.stats.verdicts import MARGIN, ORDER, Verdict, pair_key

SPEC = PageSpec("index.html", "Overview", "The answer by training size, the headline leaderboard.",
                lambda s: page_index(s.data, s.rankings, [(p.label, p.file, p.description) for p in s.pages]),
                title="attnbench report")


def family_cell(a: SizeAnswer, family: str) -> Cell:
    lead = a.leaders.get(family)
    if lead is None:
        return cell("not run", "notrun")
    flag = " ⚑" if lead.epochs_bound or lead.search_bound else ""
    title = (f"ran {lead.tasks_ran} of {lead.n_tasks} tasks, scored on {lead.tasks_scored}; its mean is over the "
             "tasks it ran")
    if flag:
        title += "; budget-bound: " + bound_text(lead.epochs_bound, lead.search_bound).replace("⚑ ", "")
    fewer = f" · {lead.tasks_ran} of {a.n_run} tasks" if lead.tasks_ran < a.n_run else ""  # its mean covers fewer
    return cell(f"{lead.model} {lead.normalized_score:.3f}{fewer}{flag}", "best" if a.leader == family else "", title)


def tally_cell(a: SizeAnswer, family: str, against: str = BOOSTING) -> Cell:
    """A family's verdicts over a size's datasets against another family's (each side's best on each dataset):
    ahead–equivalent–behind–undetermined, green where the share ahead's interval lies above the share
    behind's, red where below."""
    t = a.vs_boosting.get(family) if against == BOOSTING else a.attention_vs_network
    if t is None or not t.n:
        return cell("—")
    (a_lo, a_hi), (b_lo, b_hi) = t.interval(Verdict.AHEAD), t.interval(Verdict.BEHIND)
    cls = "best" if a_lo > b_hi else ("missing" if a_hi < b_lo else "")
    return cell(t.short(), cls, f"the best {family} of each dataset against the best {against} there: {t.text()}; "
                f"share ahead {t.share(Verdict.AHEAD):.0%} [{a_lo:.0%}, {a_hi:.0%}], behind "
                f"{t.share(Verdict.BEHIND):.0%} [{b_lo:.0%}, {b_hi:.0%}] (Wilson 95% intervals)")


def validation_cell(a: SizeAnswer) -> Cell:
    """The validation rows this size's picks were made on, amber with ‡ where some were under
    ``SMALL_VALIDATION`` rows."""
    rows = [x for x in a.n_valid if x == x]
    if not rows:
        return cell("—")
    span = f"{min(rows):,.0f}" if round(min(rows)) == round(max(rows)) else f"{min(rows):,.0f}–{max(rows):,.0f}"
    small = sum(x < SMALL_VALIDATION for x in rows)
    if not small:
        return cell(span)
    return cell(f"{span} ‡ under {SMALL_VALIDATION} on {small} of {len(rows)}", "partial", a.small_validation)


def overview_answer(p: Page, data: ReportData) -> None:
    """The per-size answer: first a figure (each family's best on each dataset against the best boosting model
    there, as shares by verdict, and each family's leader's mean normalised score), the headline in a
    sentence, then a table of it per size with the models (each size's row says it in words as its title),
    then the coverage, crossovers and caveats in words, the costs, the crossovers."""
    c, rows = data.cells, data.standings
    answers = [size_answer(s, c[c.sample_size == s], data.kinds,
                           rows[rows.sample_size == s] if len(rows) else None) for s in data.sizes]
    crossovers = family_crossovers(rows, data.kinds)
    splits = c.groupby(agg.TASK)[["repeat", "fold", "seed"]].apply(lambda g: len(g.drop_duplicates()))
    coverage = {"datasets": int(c[["dataset", "split_key"]].drop_duplicates().shape[0]), "sizes": len(data.sizes),
                "splits": int(splits.max()) if len(splits) else 0, "cells": len(c),
                "cells_ok": int((c.status == Status.OK).sum())}
    fams = families(data.kinds)  # the families of the models in the file, by their stored kinds
    others = [f for f in fams if f != BOOSTING] if BOOSTING in fams else []
    p.h2("Attention networks, other networks or boosting: the answer by training size", "answer")
    p.figure(figs.answer_by_size(answers, fams), "fig-index-answer")
    headline = headline_sentence(rows, data.kinds)
    if headline:
        p.add(f'<p id="answer-headline">{esc(headline)}</p>')
    p.add(note(f"Left: at each training size, each family's best model on each dataset (its model with the best "
               f"validation score there) against the best {BOOSTING} model there, as shares of the datasets both ran "
               "by verdict, the share ahead with its Wilson 95% interval. Right: the mean normalised score of each "
               "family's leader at the size (one model per family and size: below). The table says the same per size, "
               "with the models (hover a size for it in words). " + VERDICT_NOTE))
    networks = ATTENTION in fams and NETWORK in fams  # attention against the best non-attention network too
    table_rows = [[cell(size_label(a.size), title=size_sentence(a) or ""),
                   cell(a.n_tasks if a.n_run >= a.n_tasks else f"{a.n_tasks} ({a.n_run} run so far)"),
                   *(family_cell(a, f) for f in fams),
                   cell(a.leader_text), *(tally_cell(a, f) for f in others),
                   *([tally_cell(a, ATTENTION, NETWORK)] if networks else []), validation_cell(a)] for a in answers]
    order = "–".join(str(v) for v in ORDER[:4])
    p.add(table(["training size", "tasks", *(f"{f} leader" + (" (normalised score)" if i == 0 else "")
                                             for i, f in enumerate(fams)),
                 "leader", *(f"{f} vs {BOOSTING}, per dataset" for f in others),
                 *([f"{ATTENTION} vs {NETWORK}, per dataset"] if networks else []),
                 "validation rows of the picks"], table_rows, "table-answer"))
    p.add(note("Two picks, named apart. A family's leader at a size is, of its models planned on the most of that "
               "size's tasks, the one with the best mean normalised validation score over them (the test set "
               "chooses nothing); shown is its mean normalised test score (1 = best model on a task, 0 = worst of "
               "those that ran it; test scores of the configurations validation selected); a model never planned on "
               f"a task is left out of it, not scored 0. The leader is the family whose leader's mean is more than "
               f"{MARGIN} of normalised score above every other's; within that of the top, the families tie. A "
               "family's best on a dataset is its model with the best validation score on that dataset and size, "
               "as the standings view, the sample-size page and the claims pick it; the verdict columns count its "
               f"verdicts against the best {BOOSTING} model's there (and the best attention network's against the best "
               f"other network's) over the datasets both ran, as {order} (not converged "
               "said after); green where the share ahead's 95% interval lies above the share behind's, red where "
               f"below. ‡: some picks were made on validation parts of fewer than {SMALL_VALIDATION} rows, where "
               "the best on validation is a best by luck as much as by skill. " + BOUND_NOTE))
    sentences = summary_sentences(answers, crossovers, coverage, sizes=False)
    floor = floor_sentence(c)
    if floor:
        sentences.append(floor)
    p.add('<div class="card" id="answer-summary">' + "".join(f"<p>{esc(t)}</p>" for t in sentences) + "</div>")
    caveats = [(m, n) for m, n in data.model_notes().items() if n]
    if caveats:
        p.add(note("Where a model leaves the shared protocol: " + "; ".join(f"{m}: {n.rstrip('.')}" for m, n in caveats) + "."))
    across_section(p, data)
    p.shared_notes_here()  # the notes every page shares (the site adds them) go here, under the answer's own
    p.h3("Cost per 1,000 rows")
    rows = []
    for a in answers:
        row = [cell(size_label(a.size))]
        for f in fams:
            lead = a.leaders.get(f)
            mark = " †" if lead and lead.model in data.other_hardware else ""
            row += ([cell(num(lead.train_s_per_1k, ".3g") + mark), cell(num(lead.predict_s_per_1k, ".3g") + mark)]
                    if lead else [cell("—"), cell("—")])
        rows.append(row)
    p.add(table(["training size", *[f"{f} {w} s / 1K rows" for f in fams for w in ("train", "predict")]], rows,
                "table-answer-cost"))
    p.add(note("Seconds of the family leader's selected trial: training per 1,000 training rows, prediction per "
               "1,000 rows; means over its cells at that size." + (" " + data.hardware_note()
                                                                   if data.hardware_note() else "")))
    if len(data.sizes) > 1:
        p.figure(curve_figs.normalized_curves(agg.normalized_by_size(c, data.sizes), data.style(), data.sizes),
                 "fig-index-sizes")
    if not crossovers.empty:
        p.h3("Crossover size per dataset")
        wide = crossovers.assign(text=[crossover_text(r) for r in crossovers.itertuples(index=False)])
        rows_ = []
        for (dataset, split_key), g in wide.groupby(["dataset", "split_key"], sort=True):
            by = g.set_index("family")
            link = f'<a href="sample_size.html#{esc(dataset_anchor(dataset, split_key))}">{esc(data.task_label(dataset, split_key))}</a>'
            rows_.append([raw(link), *(crossover_cell(by.loc[f]) if f in by.index else cell("—") for f in others)])
        p.add(table(["dataset", *(f"{f} overtakes {BOOSTING} from" for f in others)], rows_, "table-index-crossover"))
        p.add(note("The smallest training size from which the family's best model is ahead of the best boosting model "
                   "there and at every larger size run, each size's verdict as above; else the verdict at the largest "
                   "size ('never' where it is behind there); no crossover is given from one training size. Hover a "
                   "cell for the verdict it rests on."))


def across_section(p: Page, data: ReportData) -> None:
    """The hierarchical model's answer for a new dataset per size (report/stats/across.py), as stacked bars, where
    the file holds fits of its data now (`attnbench answer FILE` makes them)."""
    from pipeline.report.stats import across, hierarchical

    a = data.across
    if a.empty:
        return
    rope = hierarchical.ROPES[0]
    new = a[a.dataset.isna() & (a.rope == rope) & a.pair.isin([across.BEST_ATTENTION, across.BEST_NETWORK])]
    if new.empty:
        return
    p.h3("Across datasets: on a new dataset")
    p.figure(figs.across_datasets(new, rope), "fig-index-across")
    p.add(note("The Bayesian hierarchical model of Corani, Benavoli, Demšar, Mangili and Zaffalon (2017), fitted per "
               f"training size on every dataset's splits (correlated by 1/k, as they share training rows) with "
               f"NumPyro's NUTS, seed {hierarchical.SEED}: the probability that, on a dataset new to the study, the "
               f"best attention network (and the best other network) is behind, equivalent within ±{rope:g}, or ahead "
               f"of the best {BOOSTING} model, each picked by validation. 'largest': each dataset at its largest size, "
               "as the verdicts above. `attnbench answer` prints the same at ±0.005 too, for each attention entry, and "
               "each dataset's probabilities shrunk toward the others."))


def crossover_cell(r: Any) -> Cell:
    """A crossover in words, carrying the verdict at the size it rests on (its pair and verdict as data)."""
    d = r.decision
    cls = ("partial" if r.verdict == Verdict.NOT_CONVERGED else "missing" if r.verdict == cross.NEVER
           else "best" if r.ahead_everywhere else "")
    return verdict_cell(esc(r.text), d.verdict,
                        pair_key(r.dataset, r.split_key, r.at_size, r.challenger_at, r.incumbent_at), cls,
                        f"{r.challenger_at} vs {r.incumbent_at} at {size_label(str(r.at_size))}: {d.sentence()}")


def page_index(data: ReportData, rankings: dict[str, Ranking], pages: list[tuple[str, str, str]]) -> Page:
    """The overview; ``pages``: every other page's (label, file, description), linked at its end."""
    p = SPEC.page()
    c = data.cells
    n_ok = int((c.status == Status.OK).sum()) if len(c) else 0
    n_missing = int((c.status == Status.MISSING).sum()) if len(c) else 0
    n_failed = len(c) - n_ok - n_missing
    last = data.runs.iloc[0] if len(data.runs) else None
    stats = [("suites", ", ".join(data.suites) or "—"),
             ("datasets", c.dataset.nunique() if len(c) else 0), ("models", len(data.models)),
             ("training sizes", ", ".join(data.sizes) or "—"),
             ("cells", f"{n_ok} ok · {n_failed} failed · {n_missing} missing"),
             ("last run", f"{last.run_id} ({last.status})" if last is not None else "—")]
    cards = ('<div class="cards" id="summary">' + "".join(
        f'<div class="card"><div class="note">{esc(k)}</div><div class="stat">{esc(v)}</div></div>'
        for k, v in stats) + "</div>")
    size = data.headline_size
    if size is None or size not in rankings:
        p.add(cards, note("No results yet: run `attnbench run` to fill the database."))
    else:
        overview_answer(p, data)  # the answer first: its figure is the first screen
        p.h2("What this report holds", "holds")
        p.add(cards)
        st = rankings[size]
        p.h2(f"Leaderboard ({size_label(size)}, {len(st.scores)} tasks)", "leaderboard")
        p.add(summary_table(st, "table-headline"))
        p.figure(elo_figure(st, data.style()), "fig-index-elo")
    p.h2("Pages", "pages")
    p.add('<div class="cards">' + "".join(
        f'<a href="{esc(href)}"><div class="card"><strong>{esc(label)}</strong>'
        f'<div class="note">{esc(what)}</div></div></a>'
        for label, href, what in pages if href != p.file) + "</div>")
    return p
