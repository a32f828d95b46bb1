"""A pilot's price of new entries over a study, in Markdown (``attnbench price PILOT STUDY``): what a suite's
header quotes as its plan and total before the chunks start (:mod:`pipeline.report.stats.price`)."""

from __future__ import annotations

import math

import pandas as pd

from pipeline.data.store import Store
from pipeline.models.kinds import ATTENTION, family_of
from pipeline.records import Status
from pipeline.report.stats.price import (
    SPLIT,
    Plan,
    Price,
    Spent,
    cut,
    planned_datasets,
    prices,
    race_bound,
    raced,
    replan,
    spent,
    to_run,
)


def on_two_cores(hours: float) -> str:
    """Trial-hours as the least wall time they take on 2 cores (two trials at once)."""
    return f"on 2 cores, at least {hours / 2:.1f} hours of wall time"


def _hours(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def entries_and_cells(pilot_db: str, study_db: str, base: str,
                      entries: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pilot's finished cells of its new entries (``entries``; default: the models the study does not
    hold, which is all of them before the study runs any) and of the base; the base's finished cells of the
    study's first repeat (the splits new entries run: its 3 folds)."""
    ok = Status.OK.value
    pilot = Store(pilot_db, create=False).query(
        "SELECT dataset, sample_size, repeat, fold, seed, model, model_kind, search_seconds AS seconds FROM current_results "
        "WHERE status = ? AND regexp_full_match(sample_size, '[0-9]+')", [ok])
    if entries is None:
        held = set(Store(study_db, create=False).query("SELECT DISTINCT model FROM current_results").model)
        pilot = pilot[(pilot.model == base) | ~pilot.model.isin(held)]
    else:
        pilot = pilot[pilot.model.isin([base, *entries])]
    study = Store(study_db, create=False).query(
        "SELECT dataset, sample_size, search_seconds AS seconds FROM current_results "
        "WHERE status = ? AND model = ? AND repeat = 0 AND regexp_full_match(sample_size, '[0-9]+')", [ok, base])
    return pilot, study


def markdown(pilot_db: str, study_db: str, pilot_name: str, study_name: str, base: str = "ft_transformer",
             extend: list[int] | None = None, race: dict[int, int] | None = None, budget: float | None = None,
             cut_sizes: list[int] | None = None, entries: list[str] | None = None, so_far: bool = False,
             thin: bool = False) -> str:
    """The price table and its total; with ``race`` (size → k) or ``budget``, the plan below it: the race's
    upper bound at those sizes and the stated cut (:func:`pipeline.report.stats.price.cut`) over ``cut_sizes``.
    ``entries``: the entries to price (default: the pilot's the study does not hold, :func:`entries_and_cells`).
    ``so_far``: instead, what the study's cells of those entries cost so far against that price (:func:`so_far_lines`)."""
    pilot, study = entries_and_cells(pilot_db, study_db, base, entries)
    absent = sorted(set(entries or []) - set(pilot.model))
    if absent:
        raise ValueError(f"the pilot holds no finished cell of {', '.join(map(repr, absent))}")
    rows = prices(pilot, study, base, extend)
    if not rows:
        return f"The pilot {pilot_name!r} holds no finished cell of an entry the study {study_name!r} does not run.\n"
    unknown = sorted((set(race or {}) | set(cut_sizes or [])) - {p.sample_size for p in rows})
    if unknown:
        raise ValueError(f"--race/--cut at {', '.join(f'{n:,}' for n in unknown)} rows: not a size priced here (the "
                         "pilot's sizes and those --extend adds)")
    out = [f"<!-- printed by `attnbench price {pilot_name} {study_name}"
           f"{f' --base {base}' if base != 'ft_transformer' else ''}"
           f"{''.join(f' --extend {n}' for n in sorted(extend or []))}"
           f"{''.join(f' --race {n}={k}' for n, k in sorted((race or {}).items()))}"
           f"{f' --budget {budget:g}' if budget is not None else ''}"
           f"{''.join(f' --cut {n}' for n in (cut_sizes or []))}"
           f"{''.join(f' --entry {m}' for m in (entries or []))}{' --so-far' if so_far else ''}"
           f"{' --thin' if thin else ''}` -->"]
    families = {m: family_of(k) for m, k in pilot.drop_duplicates("model")[["model", "model_kind"]].itertuples(index=False)}
    if so_far:
        return "\n".join([*out, *so_far_lines(study_db, pilot_name, study_name, base, rows, families, race or {},
                                               study, budget, cut_sizes, thin)]) + "\n"
    out += [f"Each entry new to {study_name}, priced on the pilot {pilot_name} against {base} (the study's "
           "own, on the same splits; trial-hours: each cell's whole search), scaled by what the base cost over the "
           "study's first repeat at that size:", "",
           "| entry | training rows | pilot cells | entry h | base h | ratio | study cells | base h over the study | "
           "projected h |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p in sorted(rows, key=lambda p: (p.model, p.sample_size)):
        cells = str(p.cells) if p.measured else f"(ratio at {p.priced_at:,})"
        if p.projected != p.projected:
            cells += " not priced"
        out.append(f"| {p.model} | {p.sample_size:,} | {cells} | {_hours(p.hours)} | {_hours(p.base_hours)} | "
                   f"×{p.ratio:.2f} | {p.study_cells} | {_hours(p.study_base_hours)} | {_hours(p.projected)} |")
    out += ["", totals(rows)]
    if race or budget is not None:
        out += ["", *planned(rows, families, study, race or {}, budget, cut_sizes)]
    return "\n".join(out) + "\n"


def planned(rows: list[Price], families: dict[str, str], study: pd.DataFrame, race: dict[int, int],
            budget: float | None, cut_sizes: list[int] | None) -> list[str]:
    """The plan in words: which entries are priced at a raced size, the cut the budget took, and the total."""
    out = []
    kept = raced(rows, families, race)
    for size, k in sorted(race.items()):
        there = [p for p in kept if p.sample_size == size]
        attention = [p.model for p in there if families.get(p.model) == ATTENTION]
        others = [p.model for p in there if families.get(p.model) != ATTENTION]
        out.append(f"At {size:,} rows only the race's {k} leaders among the attention entries run, and every other "
                   f"new entry ({', '.join(others) or 'none'}): priced as the {k} attention entries that cost most "
                   f"there ({', '.join(attention) or 'none'}), an upper bound on whichever {k} lead (one the study "
                   "already runs there, if it leads, costs nothing new).")
        out.append("")
    if not cut_sizes:  # the sizes priced past the pilot, then its largest: the costliest first
        measured = [p.sample_size for p in rows if p.measured]
        cut_sizes = sorted({p.sample_size for p in rows if not p.measured} | set(measured[-1:] and [max(measured)]),
                           reverse=True)
    plan = cut(kept, study, math.inf if budget is None else budget, cut_sizes)
    each = ", ".join(f"{s:,} rows {h:.1f}" for s, h in sorted(plan.by_size.items()))
    if budget is None or (plan.within and all(plan.every[s] == 1 for s in cut_sizes)):
        within = "" if budget is None else f", within the budget of {budget:g} trial-hours: no dataset cut"
        out.append(f"Planned: {plan.total:.1f} trial-hours ({each}){within}.")
        return out
    steps = "; ".join(_kept(plan, s) for s in cut_sizes)
    verdict = ("" if plan.within else f" The rule cannot bring it within {budget:g}: every size it may cut keeps "
               "one dataset.")
    return [*out, f"Over the budget of {budget:g} trial-hours, the stated cut (docs/STUDY.md: fewer datasets, never "
                  f"an entry, {', then '.join(f'{s:,}' for s in cut_sizes)} rows, each in order of the base's trial-hours "
                  f"there over the study, cheapest first) keeps {steps}. Planned: {plan.total:.1f} trial-hours ({each}): "
                  f"{on_two_cores(plan.total)}.{verdict}"]


def _kept(plan: Plan, size: int, of: str = "that reach it") -> str:
    k, reach = plan.every[size], plan.reach[size]
    if k == 1:
        return f"all {len(reach)} datasets at {size:,} rows"
    kept, ranked = plan.kept(size), reach[::k]
    ranks = f"ranks 1, {1 + k}, {1 + 2 * k}, …" if len(ranked) > 1 else "rank 1 only"
    ran = [d for d in kept if d not in ranked]
    also = f", and {len(ran)} where cells had run ({', '.join(ran)})" if ran else ""
    return f"at {size:,} rows {ranks} of the {len(reach)} {of}{also}, {len(kept)}: {', '.join(kept)}"


def totals(rows: list[Price]) -> str:
    """The projected trial-hours per size and in all, what cannot be priced, and what that is on two cores."""
    by_size: dict[int, float] = {}
    for p in rows:
        if p.projected == p.projected:
            by_size[p.sample_size] = by_size.get(p.sample_size, 0.0) + p.projected
    total = sum(by_size.values())
    each = ", ".join(f"{s:,} rows {h:.1f}" for s, h in sorted(by_size.items()))
    unmeasured = sorted({p.sample_size for p in rows if not p.measured})
    said = (f" ({', '.join(f'{s:,}' for s in unmeasured)} rows priced by each entry's ratio at the pilot's largest "
            "size, for every entry: the most entries that could run there, at a ratio carried up from a smaller size, "
            "which can be low)" if unmeasured else "")
    missing = [f"{p.model} at {p.sample_size:,}" for p in rows if p.projected != p.projected]
    unpriced = (f" Not priced (no pilot cell both finished, or no cell of the base in the study at that size): "
                f"{', '.join(missing)}; the total leaves them out." if missing else "")
    return (f"Projected: {total:.1f} trial-hours, every entry at every size listed ({each}){said}: "
            f"{on_two_cores(total)}.{unpriced}")


def part_way(study_db: str, base: str, rows: list[Price]) -> tuple[list[Spent], pd.DataFrame, pd.DataFrame]:
    """Part way through the study: what each priced entry's cells cost so far against the plan's price
    (:func:`pipeline.report.stats.price.spent`), the study's planned cells of those entries (:data:`SPLIT`,
    ``model``, ``run``, ``seconds``) and the base's finished cells (:data:`SPLIT`, ``seconds``)."""
    models = sorted({p.model for p in rows})
    store = Store(study_db, create=False)
    numeric = "regexp_full_match(e.sample_size, '[0-9]+')"
    cells = store.query(
        f"SELECT e.dataset, e.sample_size, e.repeat, e.fold, e.seed, e.model, e.status <> ? AS run, "
        f"r.search_seconds AS seconds FROM expected_cells e LEFT JOIN current_results r USING (cell_id) "
        f"WHERE {numeric} AND list_contains(?, e.model)", [Status.MISSING.value, models])
    base_cells = store.query(
        f"SELECT {', '.join(SPLIT)}, search_seconds AS seconds FROM current_results e "
        f"WHERE status = ? AND model = ? AND {numeric}", [Status.OK.value, base])
    return spent(rows, cells, base_cells), cells, base_cells


def so_far_lines(study_db: str, pilot_name: str, study_name: str, base: str, rows: list[Price],
                 families: dict[str, str], race: dict[int, int], study: pd.DataFrame | None = None,
                 budget: float | None = None, cut_sizes: list[int] | None = None, thin: bool = False) -> list[str]:
    """Part way through the study: per priced entry and size, what its cells cost so far against the plan's price
    of the same cells, and the price of those still to run, as priced and at the spent ÷ price so far
    (:func:`pipeline.report.stats.price.spent`); a race whose leaders the study does not plan yet, priced as its
    k dearest attention entries on the splits it plans there. With a ``budget``, the stated cut applied again at
    that cost over ``cut_sizes`` (``study``: the base's first repeat; :func:`replanned`)."""
    got, cells, base_cells = part_way(study_db, base, rows)
    out = [f"Each entry priced on the pilot {pilot_name}, part way through {study_name}: the trial-hours its cells "
           f"took so far against the plan's price of the same cells (its ratio to {base} on the pilot times what "
           f"{base} took on each cell's split), and the plan's price of its cells still to run, as priced and at the "
           "entry's spent ÷ price so far at that size:", "",
           "| entry | training rows | cells run of planned | spent h | the plan's price h | spent ÷ price | "
           "still to run: price h | at spent ÷ price h |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for x in got:
        factor = "–" if x.factor != x.factor else f"×{x.factor:.2f}"
        out.append(f"| {x.model} | {x.sample_size:,} | {x.run:,} of {x.planned:,} | {_hours(x.hours)} | "
                   f"{_hours(x.priced)} | {factor} | {_hours(x.rest)} | {_hours(_at_factor(x))} |")
    out += ["", _so_far_total(got), *_race_lines(rows, families, race, cells, base_cells)]
    if budget is not None and study is not None:
        out += ["", replanned(rows, families, race, got, cells, base_cells, study, budget, cut_sizes or [], thin)]
    return out


def replanned(rows: list[Price], families: dict[str, str], race: dict[int, int], got: list[Spent],
              cells: pd.DataFrame, base_cells: pd.DataFrame, study: pd.DataFrame, budget: float,
              cut_sizes: list[int], thin: bool = False) -> str:
    """Part way, the plan as it stands at what the cells cost (:func:`pipeline.report.stats.price.to_run`) against
    the budget; over it, the stated cut applied again (:func:`pipeline.report.stats.price.replan`), from every
    dataset, or with ``thin`` to the datasets the plan keeps now: what it keeps and the plan's total."""
    if not cut_sizes:
        raise ValueError("--budget with --so-far sets the plan against the budget: name the sizes the cut may thin "
                         "(--cut)")
    sunk = sum(x.hours for x in got)
    current = planned_datasets(cells, cut_sizes)
    now = to_run(rows, families, race, got, cells, base_cells)(current)
    raced = "".join(f", the race's {k} leaders at {n:,} rows as the {k} attention entries that would cost most there "
                    "(its leaders, once the study plans them)" for n, k in sorted(race.items()))
    head = (f"The plan against the budget of {budget:g} trial-hours, at what the cells cost (docs/STUDY.md): the "
            f"{sunk:.1f} spent so far, and each cell still to run at its entry's spent ÷ price at its size{raced}. "
            f"As it stands: {sunk + sum(now.values()):.1f} trial-hours in all (still to run: {_each(now)})")
    if sunk + sum(now.values()) <= budget:
        return f"{head}, within the budget: it stands."
    plan = replan(rows, families, race, got, cells, base_cells, study, budget, cut_sizes, current if thin else None)
    verdict = ("" if plan.within else f" The rule cannot bring it within {budget:g}: every size it may cut keeps "
               "one dataset.")
    if thin:
        start = (f"the stated cut's steps thin the datasets it keeps at {', '.join(f'{s:,}' for s in cut_sizes)} "
                 "rows, in the same order, never bringing back one an earlier cut dropped (a dataset where cells had "
                 "run stays)")
    else:
        whole = replan(rows, families, race, got, cells, base_cells, study, math.inf, cut_sizes)
        start = (f"the stated cut applies again, from every dataset at {', '.join(f'{s:,}' for s in cut_sizes)} rows "
                 f"({whole.total:.1f} trial-hours in all; a dataset where cells had run stays)")
    of = "it kept" if thin else "that reach it"
    return (f"{head}, over the budget: {start}. It keeps {'; '.join(_kept(plan, s, of) for s in cut_sizes)}. "
            f"Planned: {plan.total:.1f} trial-hours in all (still to run: {_each(plan.by_size)}): for what is left, "
            f"{on_two_cores(plan.total - plan.spent)}.{verdict}")


def _each(by_size: dict[int, float]) -> str:
    return ", ".join(f"{s:,} rows {h:.1f}" for s, h in sorted(by_size.items()))


def _at_factor(x: Spent) -> float:
    return x.rest * (1.0 if x.factor != x.factor else x.factor)


def _so_far_total(got: list[Spent]) -> str:
    run, planned = sum(x.run for x in got), sum(x.planned for x in got)
    hours, priced, matched = sum(x.hours for x in got), sum(x.priced for x in got), sum(x.matched for x in got)
    rest, at = sum(x.rest for x in got), sum(_at_factor(x) for x in got)
    unpriced = sum(x.unpriced for x in got)
    ratio = f"; spent ÷ price ×{matched / priced:.2f}" if priced > 0 else ""
    left = (f" ({unpriced:,} of them on a split the base did not finish: not priced, left out of both)"
            if unpriced else "")
    return (f"So far: {hours:.1f} trial-hours on {run:,} of {planned:,} cells (the plan priced them at {priced:.1f}"
            f"{ratio}). Still to run: {planned - run:,} cells{left}, priced at {rest:.1f} trial-hours, {at:.1f} at each "
            f"entry's spent ÷ price at its size (as priced where none of its cells there ran yet): {on_two_cores(at)}.")


def _race_lines(rows: list[Price], families: dict[str, str], race: dict[int, int], cells: pd.DataFrame,
                base_cells: pd.DataFrame) -> list[str]:
    """A raced size whose leaders the study does not plan yet: at most what its k dearest attention entries
    would cost on the splits the study plans there for the priced entries."""
    out = []
    for size, k in sorted(race.items()):
        there = cells[cells.sample_size.astype(int) == size]
        if there.empty or there.model.map(families).eq(ATTENTION).any():
            continue  # nothing planned there, or the race was decided and its leaders planned
        names, hours = race_bound(rows, families, there, base_cells, size, k)
        n = len(there[SPLIT].drop_duplicates())
        out += ["", f"Not planned yet: the race's {k} leaders at {size:,} rows, decided by validation at the size "
                    f"below once every cell there has run; on the {n} splits the study plans there, at most "
                    f"{hours:.1f} trial-hours as priced (the {k} attention entries that cost most there: "
                    f"{', '.join(names)})."]
    return out
