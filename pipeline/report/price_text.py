"""A pilot's price of new entries over a study, in Markdown (``attnbench price PILOT STUDY``): what a suite's
header quotes as its plan and total before the chunks start (:mod:`pipeline.report.stats.price`)."""

from __future__ import annotations

import pandas as pd

from pipeline.data.store import Store
from pipeline.records import Status
from pipeline.report.stats.price import Price, prices


def _hours(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def entries_and_cells(pilot_db: str, study_db: str, base: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pilot's finished cells of its new entries (the models the study does not hold) and of the base;
    the base's finished cells of the study's first repeat (the splits new entries run: its 3 folds)."""
    ok = Status.OK.value
    held = set(Store(study_db, create=False).query("SELECT DISTINCT model FROM current_results").model)
    pilot = Store(pilot_db, create=False).query(
        "SELECT dataset, sample_size, repeat, fold, seed, model, search_seconds AS seconds FROM current_results "
        "WHERE status = ? AND regexp_full_match(sample_size, '[0-9]+')", [ok])
    pilot = pilot[(pilot.model == base) | ~pilot.model.isin(held)]
    study = Store(study_db, create=False).query(
        "SELECT dataset, sample_size, search_seconds AS seconds FROM current_results "
        "WHERE status = ? AND model = ? AND repeat = 0 AND regexp_full_match(sample_size, '[0-9]+')", [ok, base])
    return pilot, study


def markdown(pilot_db: str, study_db: str, pilot_name: str, study_name: str, base: str = "ft_transformer",
             extend: list[int] | None = None) -> str:
    pilot, study = entries_and_cells(pilot_db, study_db, base)
    rows = prices(pilot, study, base, extend)
    if not rows:
        return f"The pilot {pilot_name!r} holds no finished cell of an entry the study {study_name!r} does not run.\n"
    out = [f"<!-- printed by `attnbench price {pilot_name} {study_name}"
           f"{f' --base {base}' if base != 'ft_transformer' else ''}"
           f"{''.join(f' --extend {n}' for n in sorted(extend or []))}` -->",
           f"Each entry {study_name} does not run yet, priced on the pilot {pilot_name} against {base} (the study's "
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
    return "\n".join(out) + "\n"


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
    return (f"Projected: {total:.1f} trial-hours, every entry at every size listed ({each}){said}: on 2 cores, at "
            f"least {total / 2:.1f} hours of wall time.{unpriced}")
