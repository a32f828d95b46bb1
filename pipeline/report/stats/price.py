"""What new entries would cost over a whole study, priced on a pilot before any chunk runs (issue 59 item 2).

An entry's price at a training size is its trial time on the pilot's cells over the base entry's (the
study's own model, run on the same splits) on the same cells, times the base's trial time over the study at
that size: a ratio of two measurements made on the same machine, scaled by what the base cost where the
entry will run. Only splits both finished count, so a cell one side failed costs neither. A size the study
plans but the pilot did not run (10,000 rows) is priced by the entry's ratio at the pilot's largest size,
and said to be.

Trial time is each cell's whole search (``search_seconds``, the sum of its trials' own run times), the
figure the chunks' logs give as trial-hours.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from pipeline.models.kinds import ATTENTION

SPLIT = ["dataset", "sample_size", "repeat", "fold", "seed"]


@dataclass(frozen=True)
class Price:
    """One entry at one training size."""

    model: str
    sample_size: int
    cells: int  # pilot cells both the entry and the base finished (0: priced from another size)
    hours: float  # the entry's trial-hours on them
    base_hours: float  # the base's on the same cells
    ratio: float
    priced_at: int  # the size whose ratio priced it (itself, or the pilot's largest)
    study_cells: int  # the base's cells in the study at this size
    study_base_hours: float
    projected: float  # ratio × study_base_hours

    @property
    def measured(self) -> bool:
        return self.priced_at == self.sample_size


def prices(pilot: pd.DataFrame, study: pd.DataFrame, base: str, extend: list[int] | None = None) -> list[Price]:
    """``pilot``: its finished cells (:data:`SPLIT`, ``model``, ``seconds``), the base's among them; ``study``:
    the base's finished cells over the study, where the entries will run (``sample_size``, ``seconds``).
    One :class:`Price` per entry and size the base ran in the pilot, and per entry and size of ``extend``; one
    that cannot be priced (no pilot cell both finished, no base cell in the study there) has a NaN
    ``projected``, never a zero."""
    pilot = pilot.assign(sample_size=pilot.sample_size.astype(int))
    study = study.assign(sample_size=study.sample_size.astype(int))
    if base not in set(pilot.model):
        raise ValueError(f"the pilot holds no finished cell of the base entry {base!r}")
    if study.empty:
        raise ValueError(f"the study holds no finished cell of the base entry {base!r} in its first repeat")
    wide = pilot.groupby([*SPLIT, "model"]).seconds.sum().unstack("model")
    scale = study.groupby("sample_size").seconds.agg(["count", "sum"])
    sizes = sorted(int(x) for x in wide[base].dropna().index.get_level_values("sample_size").unique())

    def at(size: int) -> tuple[int, float]:
        return (int(scale.loc[size, "count"]), float(scale.loc[size, "sum"]) / 3600) if size in scale.index else (0, math.nan)

    out: list[Price] = []
    for model in sorted(m for m in wide.columns if m != base):
        both = wide[[model, base]].dropna()
        measured: dict[int, Price] = {}
        for size in sizes:
            g = both[both.index.get_level_values("sample_size") == size]
            hours, base_hours = float(g[model].sum()) / 3600, float(g[base].sum()) / 3600
            ratio = hours / base_hours if len(g) and base_hours > 0 else math.nan
            n, s = at(size)
            measured[size] = Price(model, size, len(g), hours if len(g) else math.nan,
                                   base_hours if len(g) else math.nan, ratio, size, n, s, ratio * s)
        out += measured.values()
        priced = [p for p in measured.values() if p.ratio == p.ratio]
        top = max(priced, key=lambda p: p.sample_size) if priced else None
        for size in sorted(set(extend or []) - set(measured)):
            n, s = at(size)
            ratio = top.ratio if top else math.nan
            out.append(Price(model, size, 0, math.nan, math.nan, ratio, top.sample_size if top else max(sizes),
                             n, s, ratio * s))
    return out


def is_attention(families: Mapping[str, str], p: Price) -> bool:
    """Whether ``p``'s entry is in the attention family (``families``: entry → family): the one question of an
    entry's kind the price asks, since the race at a raced size is among attention entries only."""
    return families.get(p.model) == ATTENTION


def raced(rows: list[Price], families: Mapping[str, str], race: Mapping[int, int]) -> list[Price]:
    """``rows`` at each size of ``race`` (size → k) cut to the entries that could run there when the race's k
    leaders do (docs/STUDY.md): every entry outside the attention family (``families``: entry → family), and
    the k attention entries that cost most there, an upper bound on whichever k lead. Other sizes unchanged."""
    out = [p for p in rows if p.sample_size not in race or not is_attention(families, p)]
    for size, k in race.items():
        at = [p for p in rows if p.sample_size == size and is_attention(families, p)]
        out += dearest(at, k)
    return sorted(out, key=lambda p: (p.model, p.sample_size))


def dearest(rows: list[Price], k: int) -> list[Price]:
    """The ``k`` rows that project the most trial-hours, dearest first (one not priced last, a tie by name)."""
    return sorted(rows, key=lambda p: (-(p.projected if p.projected == p.projected else -math.inf), p.model))[:k]


@dataclass(frozen=True)
class Plan:
    """The entries priced per size once a study's cut rule ran, and what that projects."""

    reach: dict[int, list[str]]  # per size cut: every dataset that reaches it, the base's cheapest first
    every: dict[int, int]  # per size cut: keep ranks 1, 1 + k, 1 + 2k, … of ``reach`` (1: every dataset)
    by_size: dict[int, float]  # projected trial-hours per size, on the datasets kept (part way: still to run)
    budget: float
    held: dict[int, list[str]] = field(default_factory=dict)  # part way: kept whatever the rank, where cells had run
    spent: float = 0.0  # part way: the trial-hours spent so far, on every cell that ran

    def kept(self, size: int) -> list[str]:
        ranked = set(self.reach[size][:: self.every[size]]) | set(self.held.get(size, []))
        return [d for d in self.reach[size] if d in ranked]

    @property
    def total(self) -> float:
        return self.spent + sum(self.by_size.values())

    @property
    def within(self) -> bool:
        return self.total <= self.budget


def base_hours(study: pd.DataFrame) -> pd.Series:
    """The base's trial-hours per (size, dataset) over the study (``dataset``, ``sample_size``, ``seconds``)."""
    return study.assign(sample_size=study.sample_size.astype(int)).groupby(["sample_size", "dataset"]).seconds.sum() / 3600


def reach_order(study: pd.DataFrame, sizes: list[int]) -> dict[int, list[str]]:
    """Per size, the datasets the base finished there over the study (``study``: ``dataset``, ``sample_size``,
    ``seconds``), in order of its trial-hours there, cheapest first (a tie by name)."""
    hours = base_hours(study)
    return {s: sorted(hours.loc[s].index, key=lambda d: (float(hours.loc[(s, d)]), d)) if s in hours.index.levels[0]
            else [] for s in sizes}


def thin(reach: dict[int, list[str]], budget: float, project: Callable[[Plan], dict[int, float]],
         held: dict[int, list[str]] | None = None, spent: float = 0.0) -> Plan:
    """The stated cut's steps (docs/STUDY.md): for k = 2, 3, …, each size of ``reach`` in turn (in its order:
    the largest first) keeps ranks 1, 1 + k, 1 + 2k, … of the datasets that reach it (and ``held``'s), until
    ``spent`` plus what ``project`` makes of the plan is within ``budget``, or every size keeps one dataset."""
    every = {s: 1 for s in reach}

    def plan() -> Plan:
        draft = Plan(reach, dict(every), {}, budget, dict(held or {}), spent)
        return dataclasses.replace(draft, by_size=project(draft))

    out, k = plan(), 2
    while not out.within and any(len(reach[s][:: every[s]]) > 1 for s in reach):
        for s in reach:
            if len(reach[s][:: every[s]]) > 1:
                every[s] = k
                out = plan()
                if out.within:
                    break
        k += 1
    return out


def cut(rows: list[Price], study: pd.DataFrame, budget: float, sizes: list[int]) -> Plan:
    """The study's stated cut (docs/STUDY.md, fixed before its entries ran), applied while the projected total
    passes ``budget`` trial-hours: fewer datasets, never an entry (:func:`thin`), in order of the base's
    trial-hours at each size over the study (``study``: its finished cells, ``dataset``, ``sample_size``,
    ``seconds``), so that cheap and costly datasets both stay. A cut size's projection is each entry's ratio
    there times the base's trial-hours on the datasets kept."""
    hours = base_hours(study)
    ratio: dict[int, float] = {}
    for p in rows:
        if p.ratio == p.ratio and p.projected == p.projected:
            ratio[p.sample_size] = ratio.get(p.sample_size, 0.0) + p.ratio

    def project(plan: Plan) -> dict[int, float]:
        out = {}
        for size, r in sorted(ratio.items()):
            kept = plan.kept(size) if size in plan.reach else list(hours.loc[size].index)
            out[size] = r * float(hours.loc[[(size, d) for d in kept]].sum()) if kept else 0.0
        return out

    return thin(reach_order(study, sizes), budget, project)


@dataclass(frozen=True)
class Spent:
    """One priced entry at one training size, part way through the study: what the cells that ran cost against
    the plan's price of the same cells, and the plan's price of the cells still to run."""

    model: str
    sample_size: int
    planned: int  # the study's cells of the entry at this size
    run: int  # those with an outcome (finished or failed)
    hours: float  # their trial-hours (a cell that failed before its trials recorded time: none)
    priced: float  # the plan's price of the run cells whose split the base finished: ratio × the base's hours there
    matched: float  # the entry's own trial-hours on those same cells
    rest: float  # the plan's price of the cells still to run whose split the base finished
    unpriced: int  # cells still to run on a split the base did not finish: no price

    @property
    def factor(self) -> float:
        """Spent ÷ price, on the cells both have a figure for; NaN before any such cell ran."""
        return self.matched / self.priced if self.priced > 0 else math.nan


def spent(rows: list[Price], cells: pd.DataFrame, base: pd.DataFrame) -> list[Spent]:
    """Per entry and size of ``rows`` that the study plans. ``cells``: the study's planned cells of the priced
    entries (:data:`SPLIT`, ``model``, ``run``: whether it has an outcome, ``seconds``: its trial time, NaN for
    none); ``base``: the base's finished cells of the study (:data:`SPLIT`, ``seconds``). Each cell is priced
    as the plan priced it: the entry's ratio at that size (:func:`prices`) times the base's trial time on the
    same split."""
    ratio = {(p.model, p.sample_size): p.ratio for p in rows}
    base_s = base.assign(sample_size=base.sample_size.astype(int)).groupby(SPLIT).seconds.sum().rename("base")
    cells = cells.assign(sample_size=cells.sample_size.astype(int)).join(base_s, on=SPLIT)
    out = []
    for (model, size), g in cells.groupby(["model", "sample_size"], sort=True):
        r = ratio.get((model, int(size)))
        if r is None:
            continue
        ran, rest = g[g.run], g[~g.run]
        both = ran[ran.base.notna() & ran.seconds.notna()]
        out.append(Spent(model, int(size), len(g), len(ran), float(ran.seconds.fillna(0).sum()) / 3600,
                         r * float(both.base.sum()) / 3600, float(both.seconds.sum()) / 3600,
                         r * float(rest.base.sum()) / 3600, int(rest.base.isna().sum())))
    return out


def race_bound(rows: list[Price], families: Mapping[str, str], splits: pd.DataFrame, base: pd.DataFrame,
               size: int, k: int) -> tuple[list[str], float]:
    """The race's ``k`` leaders at ``size``, before they are known: the price of each attention entry on
    ``splits`` (:data:`SPLIT`: the splits the study plans there for the priced entries) at its ratio, and the
    ``k`` dearest with their sum, an upper bound on whichever ``k`` lead."""
    at = base.assign(sample_size=base.sample_size.astype(int))
    on = splits.assign(sample_size=splits.sample_size.astype(int))[SPLIT].drop_duplicates()
    hours = float(on.merge(at[[*SPLIT, "seconds"]], on=SPLIT).seconds.sum()) / 3600
    top = dearest([dataclasses.replace(p, projected=p.ratio * hours) for p in rows if p.sample_size == size
                   and is_attention(families, p) and p.ratio == p.ratio], k)
    return [p.model for p in top], sum(p.projected for p in top)


def to_run(rows: list[Price], families: Mapping[str, str], race: Mapping[int, int], got: list[Spent],
           cells: pd.DataFrame, base: pd.DataFrame) -> Callable[[dict[int, list[str]]], dict[int, float]]:
    """Part way through a study, what its cells still to run cost at what its cells cost so far: per size,
    trial-hours, given the datasets each size of the map runs on (a raced size the map leaves out runs on the
    datasets the study plans there; every other size as planned). A cell is priced as the plan priced it times its
    entry's spent ÷ price at that size (``got``; at a size none of its cells reached yet, at the size its ratio
    came from; 1 where none ran there either). A size of the map, and a raced size, is priced on the first
    repeat's splits of its datasets, less the cells that ran, for the entries that run there: at a raced size the
    race's k leaders once the study plans them, before that its k dearest attention entries, and every other
    entry. ``cells``: the study's planned cells of the priced entries (:data:`SPLIT`, ``model``, ``run``);
    ``base``: the base's finished cells (:data:`SPLIT`, ``seconds``)."""
    measured = {(x.model, x.sample_size): x.factor for x in got if x.factor == x.factor}
    came_from = {(p.model, p.sample_size): p.priced_at for p in rows}

    def factor(model: str, size: int) -> float:
        return measured.get((model, size), measured.get((model, came_from.get((model, size), size)), 1.0))

    cells = cells.assign(sample_size=cells.sample_size.astype(int))
    ran = {(m, int(s), d, int(f)) for m, s, d, f in cells[cells.run][["model", "sample_size", "dataset", "fold"]]
           .itertuples(index=False)}
    first = base.assign(sample_size=base.sample_size.astype(int))
    first = first[first.repeat.astype(int) == 0].groupby(["sample_size", "dataset", "fold"]).seconds.sum() / 3600
    planned = planned_datasets(cells, sorted(race))

    def hours(p: Price, datasets: list[str]) -> float:
        there = first.loc[p.sample_size] if p.sample_size in first.index.get_level_values(0) else first.iloc[:0]
        return p.ratio * factor(p.model, p.sample_size) * float(sum(
            h for (d, fold), h in there.items() if d in datasets and (p.model, p.sample_size, d, int(fold)) not in ran))

    def cost(on: dict[int, list[str]]) -> dict[int, float]:
        on = {**planned, **on}
        out = {x.sample_size: 0.0 for x in got}
        for x in got:
            if x.sample_size not in on:
                out[x.sample_size] += x.rest * factor(x.model, x.sample_size)
        for size, kept in on.items():
            priced = [p for p in rows if p.sample_size == size and p.ratio == p.ratio]
            entries = [hours(p, kept) for p in priced if size not in race or not is_attention(families, p)]
            if size in race:
                attention = {p.model for p in priced if is_attention(families, p)}
                leaders = set(cells[cells.sample_size == size].model) & attention
                raced = sorted((hours(p, kept) for p in priced if p.model in (leaders or attention)), reverse=True)
                entries += raced[: race[size]]
            out[size] = sum(entries)
        return out

    return cost


def planned_datasets(cells: pd.DataFrame, sizes: list[int]) -> dict[int, list[str]]:
    """Per size, the datasets the study plans there for the priced entries (``cells``: ``dataset``, ``sample_size``)."""
    at = cells.assign(sample_size=cells.sample_size.astype(int))
    return {s: sorted(set(at[at.sample_size == s].dataset)) for s in sizes}


def replan(rows: list[Price], families: Mapping[str, str], race: Mapping[int, int], got: list[Spent],
           cells: pd.DataFrame, base: pd.DataFrame, study: pd.DataFrame, budget: float, sizes: list[int],
           thin_from: dict[int, list[str]] | None = None) -> Plan:
    """The stated cut applied again part way through the study, at what its cells cost (docs/STUDY.md): every
    trial-hour spent so far counts, and the cells still to run are priced by :func:`to_run` on the datasets each
    step keeps (:func:`thin`); a dataset where a planned cell at a size has run stays there (``held``: nothing
    that ran is dropped; its cells still to run there are priced). ``study``: the base's first repeat
    (``dataset``, ``sample_size``, ``seconds``), whose cost orders the datasets. ``thin_from`` (per size, the
    datasets the plan keeps now): thin those, by the same steps in the same order, instead of cutting from every
    dataset, so that a later cut only drops datasets and never brings back one an earlier cut dropped."""
    cost = to_run(rows, families, race, got, cells, base)
    at = cells.assign(sample_size=cells.sample_size.astype(int))
    held = {s: sorted(set(at[(at.sample_size == s) & at.run].dataset)) for s in sizes}
    reach = reach_order(study, sizes)
    if thin_from is not None:
        reach = {s: [d for d in reach[s] if d in set(thin_from.get(s, []))] for s in sizes}
    return thin(reach, budget, lambda plan: cost({s: plan.kept(s) for s in plan.reach}), held,
                sum(x.hours for x in got))
