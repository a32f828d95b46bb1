"""``attnbench run --dry-run``: the plan a run would run and its price, before anything runs or is written.

The cells are planned exactly as ``run`` plans them (the same datasets loaded, the same ids, the results
file's done cells and a ``--against`` reference's counted as done); each pending cell is then priced from the
finished cells of its entry in that file and in the references given (:mod:`pipeline.pricing`).
Nothing is written: no results file is made, no Ray is started.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pipeline import pricing
from pipeline.data.references import Reference
from pipeline.data.store import Store
from pipeline.errors import AttnbenchError
from pipeline.records import Status
from pipeline.runner import _cells, _done_cells, _pending
from pipeline.spec import SuiteSpec


@dataclass
class DryRun:
    suite: str
    cells: int
    done: int
    priced: pd.DataFrame  # one row per pending cell: model, dataset, sample_size, n_train, seconds, basis
    sources: list[str]  # where the prices were read
    slots: int  # trials this machine runs at a time (its CPUs over a trial's)


def dry_run(suite: SuiteSpec, db: str | Path, *, against: Reference | None = None,
            price_from: Iterable[Reference] = (), ratios: dict[str, str] | None = None, num_cpus: int | None = None,
            progress: Callable[[str], None] = lambda _: None) -> DryRun:
    store = Store(db)
    if against is not None:
        suite = against.adopt_protocol(suite)
    prepared, cells, _ = _cells(store, suite, progress)
    keys = {m.key for m in suite.models}
    if unknown := sorted({k for pair in (ratios or {}).items() for k in pair} - keys):
        raise AttnbenchError(f"--price-ratio names {unknown}, not entries of suite {suite.name!r} "
                             f"(its entries: {', '.join(sorted(keys))})")
    splits = {(c.dataset, c.split_key, c.repeat, c.fold, c.sample_size, c.seed) for c, _ in cells}
    if against is not None:
        against.check(prepared, splits)
    done, _ = _done_cells(store, suite, cells, splits, against)
    pending, _ = _pending(cells, done, force=False, retry_failed=False)
    rows = pd.DataFrame([{"model": c.model, "dataset": c.dataset, "sample_size": c.sample_size, "n_train": c.n_train,
                          "spec_hash": suite.cell_hash(c.model, c.n_train),
                          "n_features": int(ds.dataset.features.shape[1])} for c, ds in pending],
                        columns=pricing.PENDING)
    seen, sources = [], []
    if store.exists:
        seen.append(store.query(SEEN_SQL.format(table="results", datasets="datasets")))
        sources.append(str(db))
    for ref in [*([against] if against is not None else []), *price_from]:
        seen.append(ref.df(SEEN_SQL.format(table="ref_results", datasets="ref_datasets")))
        sources.append(ref.name)
    observed = pd.concat(seen, ignore_index=True) if seen else pd.DataFrame(columns=pricing.SEEN)
    cpus = num_cpus or os.cpu_count() or 1
    per_trial = max((m.resources.cpus for m in suite.models), default=1)
    return DryRun(suite.name, len(cells), len(cells) - len(pending), pricing.price_cells(rows, observed, ratios), sources,
                  max(int(cpus // per_trial), 1))


SEEN_SQL = ("SELECT r.model, r.dataset, CAST(r.sample_size AS VARCHAR) AS sample_size, r.n_train, "
            "r.search_seconds AS seconds, r.spec_hash, d.n_features FROM {table} r LEFT JOIN {datasets} d USING (dataset) "
            f"WHERE r.status = {Status.OK.sql} AND r.search_seconds IS NOT NULL AND r.variant IS NULL")


def text(d: DryRun) -> str:
    """What ``run --dry-run`` prints: the pending cells per entry and size with their price and its basis, the
    total in trial-hours, and the wall time on this machine's trial slots."""
    from pipeline.clock import hms

    pts = pricing.points(d.priced)
    lines = [f"dry run of suite {d.suite!r}: {d.cells:,} cells, {d.done:,} already done, {len(d.priced):,} to run; "
             f"priced from the finished cells of each entry in {', '.join(d.sources) or 'nothing (none given)'}",
             "", "| entry | size | cells | trial-hours | priced on |", "| --- | --- | ---: | ---: | --- |"]
    for p in pts:
        size = p.sample_size if p.sample_size == "all" else f"{int(p.sample_size):,}"
        hours = f"{p.hours:.2f}" + (f" + {p.unpriced} unpriced" if p.unpriced else "")
        lines.append(f"| {p.model} | {size} | {p.cells:,} | {hours} | {p.basis}"
                     f"{'' if p.same_version else ' (other versions of the entry)'} |")
    total = sum(p.hours for p in pts)
    unpriced = sum(p.unpriced for p in pts)
    wall = pricing.wall_hours(total, d.slots) * 3600
    lines += ["", f"total: {total:.2f} trial-hours" + (f" and {unpriced:,} cells unpriced (no finished cell of their "
                                                        "entry was read)" if unpriced else "")
              + f"; at least {hms(wall)} of wall time on this machine's {d.slots} trial slot"
              + ("s" if d.slots != 1 else "") + " (no slot idle). Nothing was run or written."]
    return "\n".join(lines) + "\n"
