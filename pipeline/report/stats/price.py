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

import math
from dataclasses import dataclass

import pandas as pd

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
