"""The sample-size page: test score against training size per dataset, the crossover with the best
boosting model, the verdicts of each family's best against it below the reference size, and where attention
stands per dataset; every verdict the ``standings`` view's."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from pipeline.models.kinds import ATTENTION, BOOSTING, families
from pipeline.records import Status
from pipeline.report import curve_figures as curve_figs
from pipeline.report import figures as figs
from pipeline.report.data import ReportData, dataset_anchor, size_label
from pipeline.report.markup import (
    Cell,
    Page,
    cell,
    coverage_class,
    esc,
    note,
    raw,
    table,
    unscored,
    verdict_cell,
)
from pipeline.report.parts import VERDICT_CLASS, VERDICT_NOTE, bound_text
from pipeline.report.site import PageSpec
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import architectures as arch_mod
from pipeline.report.stats import claims as claims_mod
from pipeline.report.stats import crossover as crossover_mod
from pipeline.report.stats import projection as projection_mod
from pipeline.report.stats import standing as standing_mod
from pipeline.report.stats import traits as traits_mod
from pipeline.report.stats.answer import crossover_text, small_sentence, still_improving
from pipeline.report.stats.pick import SMALL_VALIDATION, small_validation
from pipeline.report.stats.verdicts import COMPARED, ORDER, Tally, pair_key

SPEC = PageSpec("sample_size.html", "Sample size", "Test score against training size; where attention overtakes boosting.",
                lambda s: page_sample_size(s.data), title="Sample-size sensitivity")


GRID_FROM = 6  # more datasets than this: their curves as one grid of small panels, not a figure each
FALLS_SHOWN = 10  # the ill-behaved curve points named one by one, largest drop first; the rest counted


def page_sample_size(data: ReportData) -> Page:
    p = SPEC.page()
    p.card("Test score of each model against the number of training rows. Per dataset: the mean over folds "
           "and subset seeds, with its 95% confidence interval as a band where two or more splits finished; a "
           "size where a model has no score is a gap in its line. The crossover size is the smallest training "
           "size from which a network beats the best boosting model at that size and at every larger size run. "
           "The best of several models (the best boosting model, the best attention model) is always the one "
           "with the best validation score; its test score is what is compared. "
           f"The dotted line marks {claims_mod.REFERENCE_ROWS:,} rows, below which tree ensembles are often reported to "
           "win (Grinsztajn et al., 2022).")
    curves = crossover_mod.curve_intervals(data.curves)
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
    networks = [m for m in data.models if data.family(m) != BOOSTING]  # every challenger of boosting
    incumbents = [m for m in data.models if data.family(m) == BOOSTING]

    p.add(curve_coverage(curves, sizes))

    p.h2("Crossover: each model vs the best boosting model", "crossover")
    attention = [m for m in networks if data.family(m) == ATTENTION]
    rows = data.standings
    lines = [crossover_mod.model_lines(rows, networks)]
    if len(attention) > 1:  # the best attention model at each size, as the overview reports it
        lines.append(crossover_mod.family_line(rows, ATTENTION, "best attention"))
    cross = crossover_mod.crossover(pd.concat(lines, ignore_index=True))
    if cross.empty:
        p.add(note("Needs at least one boosting model and one other model with scores."))
    else:
        members = {m: [m] for m in networks} | ({"best attention": attention} if len(attention) > 1 else {})
        spans = crossover_mod.crossover_intervals(data.cells, members, incumbents).set_index(
            ["dataset", "split_key", "model"])
        p.add(crossover_matrix(data, cross, spans, order=[*attention, *(["best attention"] if len(attention) > 1 else []),
                                      *[m for m in networks if m not in attention]]))
        p.add(note("A dataset per row, a model per column: the training size from which the model is ahead of the "
                   "best boosting model at that size and at every larger size run (green: ahead from the smallest "
                   "size); else the verdict at the largest size compared (red: behind there, 'never'; amber: not "
                   "converged, the one behind still improving when its epochs, rounds or time ran out; grey: one "
                   "size, not measured). A cell with no verdict says why: its cells not run yet (grey: a study in "
                   "chunks), all failed (red), or not run (no suite planned the model on that dataset). Hover a cell for the "
                   "verdict it rests on, with its difference and interval. "
                   "Under it, where the crossover of the mean curves (ahead by more than "
                   f"{crossover_mod.LEVEL}) falls when the folds are resampled with replacement "
                   f"{crossover_mod.N_BOOT} times ('never up to N rows' where a resample has the model not ahead at "
                   "the largest size; one fold gives no interval): how far the crossover may move with other folds. "
                   + VERDICT_NOTE))
        p.add(note(reference_check(rows, data.kinds)))
        falls = crossover_mod.ill_behaved(curves)
        if len(falls):
            p.add(note(falls_note(falls, data.task_label)))

    if len(attention) > 1:
        architectures_section(p, data)
    networks_section(p, data)
    if attention and incumbents:
        projection_section(p, data, attention, incumbents)
    table_ = standing_mod.standings(data.standings)
    standing_section(p, data, table_)
    favours_section(p, data, table_)

    p.h2("Over all datasets: mean normalised score by size", "average")
    p.figure(curve_figs.normalized_curves(agg.normalized_by_size(data.cells, sizes), style, sizes), "fig-curve-avg")
    p.add(note("Per task (dataset and size) the best model scores 1 and the worst 0; each point is the mean "
               "over the tasks of that size the model ran, and a model that ran a task without a score gets 0 "
               "there (one never planned on it is left out). No band: datasets "
               "differ in difficulty, so their spread says nothing about the models; the per-dataset bands "
               "below are confidence intervals."))
    p.h2("Per dataset", "datasets")
    tasks = list(curves.groupby(["dataset", "split_key"], sort=True))
    if len(tasks) > GRID_FROM:  # one panel each, one legend: readable at 40 datasets
        panels = [(data.task_label(d, k), g, str(g.metric.iloc[0])) for (d, k), g in tasks]
        p.figure(curve_figs.learning_curve_grid(panels, style, reference_n=claims_mod.REFERENCE_ROWS), "fig-curve-grid")
        p.add(note("One panel per dataset (the y axes differ: each its own metric and range); a model's legend "
                   "entry shows or hides it in every panel; the dotted line marks "
                   f"{claims_mod.REFERENCE_ROWS:,} rows. Bands are 95% intervals where two or more splits finished."))
        return p
    for i, ((dataset, split_key), g) in enumerate(tasks):
        metric = str(g.metric.iloc[0])
        n_split = int(g.n_cells.max())
        label = data.task_label(dataset, split_key)
        p.figure(curve_figs.learning_curves(g, style, metric, title=f"{label} · {metric}",
                                      reference_n=claims_mod.REFERENCE_ROWS), f"fig-curve-{i}")
        if n_split < 2:
            p.add(note(f"{label}: one split per size, so no confidence band."))
    return p


def falls_note(falls: pd.DataFrame, label: Callable[[str, str], str]) -> str:
    """The ill-behaved curve points (:func:`crossover.ill_behaved`), the ``FALLS_SHOWN`` largest drops
    named and the rest counted: a study's 35 datasets × 8 models would otherwise make it a page of text."""
    shown = falls.sort_values("drop", ascending=False, kind="stable").head(FALLS_SHOWN)
    said = "; ".join(f"{label(f.dataset, f.split_key)} {f.model}: {f.drop:.3f} lower at {f.at_n:,.0f} rows than at "
                     f"{f.from_n:,.0f}" for f in shown.itertuples(index=False))
    more = f"; and {len(falls) - len(shown)} more, none larger" if len(falls) > len(shown) else ""
    return (f"{len(falls)} curve points fall below a smaller size's with the two 95% intervals apart (ill-behaved "
            f"learning curves; LCDB 1.1 finds about 15% of curves so){', the largest drops' if more else ''}: "
            f"{said}{more}.")


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
            row.append(cell(f"{int(r.n_ok)}/{int(r.n_cells)}", coverage_class(r.n_ok, r.n_cells, r.n_failed),
                            f"{int(r.n_failed)} failed, {int(r.n_missing)} not run yet"))
        rows.append(row)
    return ("<h3>Coverage: cells ok of expected</h3>"
            + note("Points are means over the cells that finished; a model with no finished cell at a size has "
                   "no point there. Red: none ok, some failed; amber: some ok, some failed or not run yet; grey: "
                   "none run yet (a study run in chunks), which is not a failure.")
            + table(["model", *[size_label(x) for x in sizes]], rows, "table-curve-coverage"))


def reference_check(rows: pd.DataFrame, kinds: dict[str, str]) -> str:
    """The verdicts of the best model of each family but boosting against the best boosting model below the
    reference size, (dataset, size) point by point (each family's best at a point picked by validation
    there: the ``standings`` view's rows)."""
    below = rows[rows.n_train < claims_mod.REFERENCE_ROWS] if len(rows) else rows
    parts = []
    for family in families(kinds):
        here = standing_mod.best_rows(below, family, BOOSTING)
        if family == BOOSTING or here.empty:
            continue
        parts.append(f"the best {family}, against the best boosting model, was "
                     f"{Tally.of(here.verdict).text('(dataset, size) points')}")
    if not parts:
        return f"No (dataset, size) point below {claims_mod.REFERENCE_ROWS:,} rows has both a boosting model and another."
    said = small_validation(below.drop_duplicates(["dataset", "split_key", "sample_size"]).n_valid, "points")
    return (f"Below {claims_mod.REFERENCE_ROWS:,} training rows, " + "; ".join(parts) + "."
            + (" " + small_sentence(said) if said else ""))


def projection_section(p: Page, data: ReportData, attention: list[str], incumbents: list[str]) -> None:
    """Where the best attention model's mean is below the best boosting model's at the largest size (by more than
    the margin; on the means, not a verdict): the crossover its fitted learning curve
    projects beyond it (:mod:`pipeline.report.stats.projection`), shown only beside the check of how well such a
    fit predicted a held-out largest size on these same results."""
    p.h2("Projected crossovers beyond the largest size", "projection")
    check = projection_mod.holdout_check(data.cells, [*attention, *incumbents])
    name = "best attention" if len(attention) > 1 else attention[0]
    proj = projection_mod.projected_crossovers(data.cells, {name: attention}, incumbents)
    if check.empty:
        p.add(note(f"No learning curve here has {projection_mod.MIN_SIZES + 1} or more sizes, so no fit can be "
                   "checked against a held-out larger size; no crossover is projected."))
        return
    right, carried, total = projection_mod.sign_check(check, attention, incumbents)
    err = check.error.abs()
    def span(x: pd.Series) -> str:
        return f"{x.min():,.0f}" if x.min() == x.max() else f"{x.min():,.0f}-{x.max():,.0f}"

    p.add(note(f"How far to trust a projection, checked on these results: fitted on every size but its largest "
               f"(up to {span(check.from_n)} rows, predicting {span(check.to_n)}), the power law predicted the largest size's mean score with a median "
               f"absolute error of {err.median():.3f} (90th percentile {err.quantile(0.9):.3f}, largest "
               f"{err.max():.3f}) over {len(check)} curves of attention and boosting models"
               + (f", and the sign of the attention − boosting gap there on {right} of {total} datasets (the sign at "
                  f"the size before, carried forward: {carried} of {total})" if total else "")
               + ". A projection reaches further than that check did: read it as a direction, not a size."))
    if proj.empty:
        p.add(note(f"Nowhere is {name}'s mean more than {standing_mod.MARGIN} below the best boosting model's at the "
                   f"largest size with {projection_mod.MIN_SIZES} or more sizes to fit."))
        return

    def size(x: float, largest: float) -> str:
        if np.isnan(x):
            return "none: the fits have it within the margin or above there, against the means, or cannot be fitted"
        return f"none up to {projection_mod.REACH * largest:,.0f}" if np.isinf(x) else f"{x:,.0f}"

    rows = []
    for r in proj.itertuples(index=False):
        interval = ("one fold: no interval" if r.n_folds < 2 else "no resample could be fitted" if not r.n_boot
                    else f"[{size(r.low, r.largest_n)}, {size(r.high, r.largest_n)}]")
        rows.append([cell(data.task_label(r.dataset, r.split_key)), cell(f"{r.largest_n:,.0f}"), cell(f"{r.gap:+.4f}"),
                     cell(size(r.projected_n, r.largest_n)), cell(interval),
                     cell("" if np.isnan(r.p_none) else f"{r.p_none:.0%}"), cell(r.n_sizes)])
    p.add(table(["dataset", "largest size", f"{name} − best boosting there", "projected crossover (rows)",
                 "95% interval over folds", "resamples with none", "sizes fitted"], rows, "table-projection"))
    p.add(note(f"Each model's mean learning curve fitted as score = a − b·n^(−c) (a power law, as LCDB fits them) on "
               f"the sizes both sides ran; the crossover is where {name}'s fitted curve (of its model with the best "
               f"validation score at the largest size) first passes the best boosting model's, looked for up to {projection_mod.REACH:.0f}× the "
               "largest size, the curves capped at 1; only models with a score at the largest size take part, and "
               "where the fits do not have the model below there, as the means do, nothing is projected. A projection "
               "reads the mean curves, not the verdicts above: it goes where the mean is below by more than "
               f"{standing_mod.MARGIN}, whatever the verdict there. "
               f"Interval: the folds resampled {projection_mod.N_BOOT} times and fitted again."))


def architectures_section(p: Page, data: ReportData) -> None:
    """Each attention entry on its own, per size (:mod:`pipeline.report.stats.architectures`, the table
    ``attnbench answer`` prints): its verdicts against the best boosting model and the best other network, its
    picks, and its mean validation rank among the attention entries, the race that decides which run on."""
    t = arch_mod.per_entry(data.standings, data.planned)
    if t.empty:
        return
    p.h2("Each attention architecture", "architectures")

    def mean(r: dict, against: str) -> str:
        m = r[f"{against} mean"]
        if m != m:
            return ""
        low, high = r[f"{against} low"], r[f"{against} high"]
        return (f"{m:+.4f}" + ("" if low != low else f" [{low:+.4f}, {high:+.4f}]")
                + f"; median {r[f'{against} median']:+.4f}")

    rows = [[cell(r["model"]), cell(f"{int(r['sample_size']):,}"), cell(arch_mod.datasets_text(r)),
             *[c for against in arch_mod.AGAINST for c in
               (cell(arch_mod.counts_text(r[f"{against} counts"]) if r[f"{against} n"] else ""), cell(mean(r, against)))],
             cell(f"{r['picked']} of {r['picked_of']}"),
             cell("" if r["mean_rank"] != r["mean_rank"] else f"{r['mean_rank']:.2f} of {r['entries']}",
                  title=f"over the {r['rank_datasets']} datasets every attention entry has a validation score on")]
            for r in t.to_dict("records")]
    p.add(table(["attention entry", "training rows", "datasets", "vs best boosting: ahead–equivalent–behind–undetermined",
                 "mean difference [95% over datasets]; median", "vs best other network",
                 "mean difference [95% over datasets]; median",
                 "picked as the best attention network", "mean validation rank"], rows, "table-architectures"))
    leads = arch_mod.leaders_text(data.standings, size_label)
    p.add(note("Every attention entry, not only the one validation picks at each (dataset, size): its verdicts over "
               "datasets, each the standings view's over that dataset's splits, and the mean difference over the "
               "datasets compared (those not converged left out). Datasets \"2 of 8\": the entry has yet to run on "
               "the rest of the datasets its plan holds at that size, so its row is interim. The best other network: the "
               f"best by validation of {', '.join(arch_mod.networks(data.standings)) or 'none'} on each task, among "
               "those that ran it. Its mean validation rank among the attention "
               "entries, over the datasets every entry ran, is the race that decides which entries run on at a "
               f"larger size: the three lowest lead ({leads}). " + VERDICT_NOTE))


def networks_section(p: Page, data: ReportData) -> None:
    """The other networks against the best boosting model per size (:func:`architectures.other_networks`, the table
    ``attnbench answer`` prints): whether what the attention rows show is attention's or any network's."""
    t = arch_mod.other_networks(data.standings)
    if t.empty:
        return
    p.h2("The other networks against boosting", "networks")

    def mean(r: dict) -> str:
        if r["mean"] != r["mean"]:
            return ""
        return (f"{r['mean']:+.4f}" + ("" if r["low"] != r["low"] else f" [{r['low']:+.4f}, {r['high']:+.4f}]")
                + f"; median {r['median']:+.4f}")

    rows = [[cell(r["model"]), cell(f"{int(r['sample_size']):,}"), cell(r["datasets"]),
             cell(arch_mod.counts_text(r["counts"])), cell(mean(r)), cell(r["picked"])] for r in t.to_dict("records")]
    p.add(table(["other network", "training rows", "datasets", "vs best boosting: ahead–equivalent–behind–undetermined",
                 "mean difference [95% over datasets]; median", "picked (best other network)"], rows, "table-networks"))
    p.add(note("Each non-attention network entry, and the best of them by validation on each task (which ones were "
               "picked, and how often), against the best gradient-boosting model: the standings view's verdicts over "
               "each dataset's splits, counted over datasets, and the mean difference over the datasets compared "
               "(those not converged left out). " + VERDICT_NOTE))


def standing_section(p: Page, data: ReportData, table_: pd.DataFrame) -> None:
    """Per dataset at the largest size both kinds ran: the best attention model's verdict against the best
    boosting model (:mod:`pipeline.report.stats.standing`, the ``standings`` view's), and the same over datasets."""
    p.h2("Where attention stands, per dataset", "standing")
    if table_.empty:
        p.add(note("Needs an attention model and a boosting model with scores on the same dataset."))
        return
    o = standing_mod.overall(table_)
    interval = f" [{o['low']:+.3f}, {o['high']:+.3f}]" if not np.isnan(o["low"]) else ""
    said = small_validation(table_.n_valid)
    p.add(note(f"At the largest size each dataset ran with both kinds, the best attention model was "
               f"{o['tally'].text()} against the best boosting model"
               + (f" ({o['not_compared']} with no fold both finished)" if o["not_compared"] else "")
               + f"; its mean difference over the {o['compared']} datasets"
               + (" (those not converged left out)" if o["not_converged"] else "") + " "
               f"{o['mean']:+.3f}{interval} (95% interval over datasets)." + (" " + small_sentence(said) if said else "")))

    def picked(model: str, n_valid: float) -> str:
        small = n_valid == n_valid and n_valid < SMALL_VALIDATION
        return esc(model) + (f' <span class="sub" title="picked on validation parts of {n_valid:,.0f} rows, fewer '
                             f'than {SMALL_VALIDATION}">‡ {n_valid:,.0f} validation rows</span>' if small else "")

    rows = [[raw(f'<span id="{esc(dataset_anchor(r.dataset, r.split_key))}-standing"></span>'
                 f"{esc(data.task_label(r.dataset, r.split_key))}"),
             cell(f"{r.at_n:,.0f}"), raw(picked(r.attention, r.n_valid)), raw(picked(r.boosting, r.n_valid)),
             cell("" if np.isnan(r.diff) else f"{r.diff:+.4f}"),
             cell("" if np.isnan(r.low) else f"[{r.low:+.4f}, {r.high:+.4f}]"), cell(r.n_folds),
             verdict_cell(esc(r.decision.words()), r.standing,
                          pair_key(r.dataset, r.split_key, r.sample_size, r.attention, r.boosting),
                          VERDICT_CLASS.get(r.standing, ""), r.decision.sentence())]
            for r in table_.itertuples(index=False)]
    p.add(table(["dataset", "rows", "best attention", "best boosting", "difference", "95% interval over folds",
                 "folds", "attention is"], rows, "table-standing"))
    p.add(note("The interval is corrected for the training rows the folds share (none from one fold). "
               f"‡: the two were picked on validation parts of fewer than {SMALL_VALIDATION} rows. " + VERDICT_NOTE))


def favours_section(p: Page, data: ReportData, table_: pd.DataFrame) -> None:
    """Which data favours attention: each dataset's characteristics beside the difference between the best
    attention model and the best boosting model at the largest size both ran (the standing's), and the
    rank correlation of that gap with each characteristic over datasets (Benjamini–Hochberg across them)."""
    p.h2("Which data favours attention", "favours")
    compared = table_.standing.isin(COMPARED)
    gap = table_[compared].rename(columns={"diff": "gap"})[["dataset", "split_key", "at_n", "gap"]]
    joined = data.traits.merge(gap.groupby("dataset", as_index=False).agg(gap=("gap", "mean"), at_n=("at_n", "max")),
                               on="dataset", how="inner")
    if len(joined) < 3:
        p.add(note(f"Needs at least 3 datasets on which the best attention and boosting models were compared "
                   f"({', '.join(str(v) for v in ORDER[:4])} above; {len(joined)} here)."))
        return
    tests = traits_mod.favours(data.traits, gap)
    said = {r.trait: ("too few datasets" if np.isnan(r.rho) else f"ρ {r.rho:+.2f}, q {r.q:.2f}")
            for r in tests.itertuples(index=False)}
    p.figure(figs.trait_scatter(joined, traits_mod.SHORT, said), "fig-favours")
    rows = [[cell(traits_mod.TRAITS[r.trait]), cell("" if np.isnan(r.rho) else f"{r.rho:+.2f}"),
             cell("" if np.isnan(r.p) else f"{r.p:.3f}"), cell("" if np.isnan(r.q) else f"{r.q:.3f}"), cell(r.n),
             cell("yes" if r.q < 0.05 else "no" if not np.isnan(r.q) else "not tested", "best" if r.q < 0.05 else "")]
            for r in tests.itertuples(index=False)]
    p.add(table(["characteristic", "Spearman ρ with the gap", "p", "q (Benjamini–Hochberg)", "datasets",
                 "survives at q < 0.05"], rows, "table-favours"))
    kept = tests[tests.q < 0.05]
    p.add(note(f"The gap is the best attention model's mean score minus the best boosting model's at the largest "
               f"size both ran on a dataset (positive: attention ahead). {len(kept)} of {int(tests.p.notna().sum())} "
               "characteristics tested survive the correction" + (f" ({', '.join(kept.trait)})" if len(kept) else
               ": a null result on these datasets") + ". A correlation over datasets is not a cause: "
               "characteristics go together (many categoricals and many rows, say)."))
    cols = list(traits_mod.TRAITS)
    rows = [[cell(r["dataset"]), cell(f"{r['gap']:+.3f}"),
             cell(f"{r['at_n']:,.0f}"), *[cell("—" if pd.isna(r[c]) else f"{r[c]:.3g}") for c in cols]]
            for r in joined.sort_values("gap").to_dict("records")]
    p.add(table(["dataset", "gap", "at rows", *[traits_mod.TRAITS[c] for c in cols]], rows, "table-traits"))
    p.add(note("—: not measurable on that dataset (irregularity needs numeric features; a reference without its "
               "data has only what its tables say)."))


def crossover_matrix(data: ReportData, cross: pd.DataFrame, spans: pd.DataFrame, order: list[str]) -> str:
    """The crossovers as a dataset × model matrix: the crossover size in words (the verdict it rests on as the
    cell's data, its figures as its title), its interval under it."""
    models = [m for m in order if m in set(cross.model)]
    by = cross.set_index(["dataset", "split_key", "model"])
    status = data.cells.status
    counts = data.cells.assign(ok=status == Status.OK.value, missing=status == Status.MISSING.value).groupby(
        ["dataset", "split_key", "model"]).agg(cells=("ok", "size"), ok=("ok", "sum"), missing=("missing", "sum"))
    one_split = bool((cross.n_splits <= 1).all())  # then said once, under the table, not in every cell
    rows = []
    for dataset, split_key in sorted(set(zip(cross.dataset, cross.split_key))):
        row = [raw(f'<span id="{esc(dataset_anchor(dataset, split_key))}"></span>{esc(data.task_label(dataset, split_key))}')]
        for m in models:
            key = (dataset, split_key, m)
            if key not in by.index:
                row.append(no_crossover(counts, key))
                continue
            r = by.loc[key]
            r = r.iloc[0] if isinstance(r, pd.DataFrame) else r
            r = pd.Series({**r.to_dict(), "dataset": dataset, "split_key": split_key, "model": m})
            span = (crossover_mod.interval_text(spans.at[key, "cross_low"], spans.at[key, "cross_high"],
                                                spans.at[key, "largest_n"]) if key in spans.index else "")
            cls = ("partial" if still_improving(r) else "missing" if r.verdict == crossover_mod.NEVER
                   else "best" if r.ahead_everywhere else "notrun" if r.verdict == crossover_mod.ONE_SIZE else "")
            d = r.decision
            txt = crossover_text(r)
            if one_split:  # every verdict rests on one fold: said once under the table, the count stays data
                txt = txt.replace(d.words(), str(d.verdict))
            body = esc(txt) + (f'<br><span class="sub">{esc(span)}</span>' if span and not one_split else "")
            title = f"{r.challenger_at} vs {r.incumbent_at} at {size_label(str(r.at_size))}: {d.sentence()}"
            if r.n_valid == r.n_valid and r.n_valid < SMALL_VALIDATION:
                title += f"; both picked on validation parts of {r.n_valid:,.0f} rows"
            row.append(verdict_cell(body, d.verdict, pair_key(dataset, split_key, r.at_size, r.challenger_at,
                                                              r.incumbent_at), cls, title))
        rows.append(row)
    heads = ["dataset", *[f"{m} (attention, best at each size)" if m == "best attention" else m for m in models]]
    said = note("Every verdict here rests on one fold (one split): no interval, so each is undetermined, and a "
                "crossover that may move with other folds.") if one_split else ""
    return table(heads, rows, "table-crossover") + said


def no_crossover(counts: pd.DataFrame, key: tuple[str, str, str]) -> Cell:
    """A dataset × model cell with no crossover, and why, worded as the accuracy page's table words a task: not
    planned there (a model run on fewer datasets), its cells not run yet (a study in chunks, grey), failed (red),
    or some finished but at no size the best boosting model finished too. ``counts``: per (dataset, split key,
    model), its planned ``cells``, how many are ``ok`` and how many still to run (``missing``)."""
    if key not in counts.index:
        return cell("not run", "notrun", "no suite planned this model on this dataset: no crossover, not a loss")
    n, ok, missing = (int(x) for x in counts.loc[key, ["cells", "ok", "missing"]])
    failed = n - ok - missing
    title = f"{ok} ok, {failed} failed, {missing} not run yet of {n} cells"
    if ok == 0:
        return cell(*unscored(n, failed, missing), title)
    return cell(f"no verdict yet ({ok}/{n} ok)", "partial", title + ": at no size both it and the best boosting model "
                "finished a split")
