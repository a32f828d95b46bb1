"""What a suite's pending cells will cost, before anything runs (issue 84 item 2, issue 81 item 3).

Each pending cell is priced from finished cells of the same model entry (its key in the results: the label, or
the model's name) in the results file and in the references named, by the nearest evidence there is, in this
order, and each price says which it came from:

1. ``measured``: the entry's cells on this dataset at this size (other folds, repeats): their median;
2. ``other datasets``: the entry's cells at this size on other datasets: their median;
3. ``scaled, this dataset``: the entry's cells on this dataset at the nearest other size, times the ratio of
   training rows (below the cell's size where there is one);
4. ``scaled``: the entry's cells at the nearest other size on any dataset, their median, times that ratio;
5. ``unpriced``: the entry has no finished cell anywhere read (a model of one's own, a new label).

Where an entry is given a base (``ratios``: entry → base, an entry the plan also runs of the same family, e.g.
TabM → FT-Transformer), a cell of it that rules 3 and 4 would scale by rows is priced instead ``by ratio to base``:
the base's price of the same dataset and size (measured, or priced as above) times the entry's trial time over the
base's at the nearest size where both finished the same datasets (the pilot's way: two measurements on the same
machine and data, as one ratio). Which entries are priced so is the caller's choice, named: a ratio between
unlike models (a boosting model's to a network's) says little.

A cell's cost is its whole search (``search_seconds``, its trials' own time summed: what the chunks count as
trial-hours). Cost in rows is taken as linear: a network's epochs cost in proportion to its rows, and the epochs
early stopping allows vary either way, which the basis column makes visible. Priced from other datasets (rules 2
and 4), cost is taken as linear in the features too, where both sides know them (``n_features``): an
FT-Transformer makes a token of each, a tree scans each. An ``all`` size is a dataset's own row count: it is
priced as measured on the same dataset's ``all`` cells, else scaled by rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

MEASURED, OTHER_DATASETS, BY_BASE, SCALED_HERE, SCALED, UNPRICED = (
    "measured", "other datasets", "by ratio to base", "scaled, this dataset", "scaled", "unpriced")
BASES = (MEASURED, OTHER_DATASETS, BY_BASE, SCALED_HERE, SCALED, UNPRICED)
PENDING = ["model", "dataset", "sample_size", "n_train", "spec_hash", "n_features"]
SEEN = ["model", "dataset", "sample_size", "n_train", "seconds", "spec_hash", "n_features"]


def price_cells(pending: pd.DataFrame, seen: pd.DataFrame, ratios: dict[str, str] | None = None) -> pd.DataFrame:
    """``pending`` (one row per cell: model, dataset, sample_size, n_train, spec_hash) with ``seconds``,
    ``basis`` and ``same_version`` added; ``seen``: finished cells (model, dataset, sample_size, n_train,
    seconds, spec_hash). Where an entry's own version (its cells' spec hashes) has finished cells, only those
    price it; else every version under its key does, and ``same_version`` says so."""
    seen = seen.dropna(subset=["seconds", "n_train"])
    seen = seen[seen.n_train > 0].astype({"sample_size": str})
    same = seen.spec_hash.isin(pending.spec_hash)
    versioned = set(seen[same].model)
    seen = seen[same | ~seen.model.isin(versioned)].copy()
    # Seconds per feature where the features are known on both sides, else plain seconds (a factor of 1).
    wide = "n_features" in seen and "n_features" in pending and seen.n_features.notna().all() \
        and pending.n_features.notna().all()
    seen["per"] = seen.seconds / seen.n_features if wide else seen.seconds
    by_cell = seen.groupby(["model", "dataset", "sample_size"]).seconds.median()
    by_size = seen[seen.sample_size != "all"].groupby(["model", "sample_size"]).per.median()
    rows = {m: g for m, g in seen.groupby("model")}
    out = pending.copy().astype({"sample_size": str})
    prices, bases = [], []
    for c in out.itertuples(index=False):
        s, basis = _price(c, by_cell, by_size, rows.get(c.model), float(c.n_features) if wide else 1.0)
        prices.append(s)
        bases.append(basis)
    out["seconds"], out["basis"] = prices, bases
    out["same_version"] = out.model.isin(versioned)
    for entry, base in (ratios or {}).items():
        _by_base(out, seen, entry, base)
    return out


def _by_base(out: pd.DataFrame, seen: pd.DataFrame, entry: str, base: str) -> None:
    """Rules 3 and 4's cells of ``entry`` re-priced by its ratio to ``base``, in place."""
    point = seen.groupby(["model", "dataset", "sample_size"]).seconds.median()
    planned = out[out.model == base].groupby(["dataset", "sample_size"]).seconds.median()
    base_at = {**planned.to_dict(), **{k[1:]: v for k, v in point.items() if k[0] == base}}
    for i, c in out[(out.model == entry) & out.basis.isin([SCALED_HERE, SCALED])].iterrows():
        ratio = _ratio(point, str(c.model), base, seen, int(c.n_train))
        if ratio is not None and (c.dataset, c.sample_size) in base_at and pd.notna(base_at[c.dataset, c.sample_size]):
            out.loc[i, ["seconds", "basis"]] = [float(base_at[c.dataset, c.sample_size]) * ratio, BY_BASE]


def _ratio(point: pd.Series, model: str, base: str, seen: pd.DataFrame, n_train: int) -> float | None:
    """``model``'s trial time over ``base``'s on the (dataset, size) points both finished, at the nearest such
    size (below ``n_train`` where there is one); None where they share none."""
    if model not in point.index.get_level_values(0) or base not in point.index.get_level_values(0):
        return None
    both = point[model].to_frame("entry").join(point[base].rename("base"), how="inner").reset_index()
    if not len(both):
        return None
    rows = seen.groupby("sample_size").n_train.median()
    sizes = rows[rows.index.isin(both.sample_size)]
    at = both[both.sample_size == _nearest(sizes, n_train)]
    return float(at.entry.sum() / at.base.sum())


def pending_of(plans: list[Any]) -> pd.DataFrame:
    """The PENDING rows of cell plans (:class:`pipeline.engine.cells.CellPlan`: their ``base`` results' keys)."""
    return pd.DataFrame([{"model": p.base.model, "dataset": p.base.dataset, "sample_size": str(p.base.sample_size),
                          "n_train": p.base.n_train, "spec_hash": p.base.spec_hash,
                          "n_features": getattr(p, "n_features", None)} for p in plans], columns=PENDING)


def _price(c: Any, by_cell: pd.Series, by_size: pd.Series, rows: pd.DataFrame | None,
           features: float) -> tuple[float, str]:
    if (c.model, c.dataset, c.sample_size) in by_cell.index:
        return float(by_cell[c.model, c.dataset, c.sample_size]), MEASURED
    if c.sample_size != "all" and (c.model, c.sample_size) in by_size.index:
        return float(by_size[c.model, c.sample_size]) * features, OTHER_DATASETS
    if rows is None or not len(rows):
        return float("nan"), UNPRICED
    here = rows[rows.dataset == c.dataset]
    if len(here):
        n = _nearest(here.groupby("sample_size").n_train.median(), int(c.n_train))
        at = here[here.sample_size == n]
        return float(at.seconds.median() * c.n_train / at.n_train.median()), SCALED_HERE
    n = _nearest(rows.groupby("sample_size").n_train.median(), int(c.n_train))
    at = rows[rows.sample_size == n]
    return float(at.per.median() * features * c.n_train / at.n_train.median()), SCALED


def _nearest(sizes: pd.Series, n_train: int) -> str:
    """Of the sizes seen (label → its median training rows), the largest not above ``n_train``, else the
    smallest above it."""
    below = sizes[sizes <= n_train]
    return str(below.idxmax() if len(below) else sizes.idxmin())


@dataclass(frozen=True)
class Point:
    """One entry at one size: its pending cells and their price."""

    model: str
    sample_size: str
    cells: int
    hours: float  # the priced cells' trial-hours
    unpriced: int
    basis: str  # the bases its cells were priced on, in BASES' order ("measured 3, scaled 2")
    same_version: bool  # priced on cells of this version of the entry (else on other versions under its key)


def points(priced: pd.DataFrame) -> list[Point]:
    """Per (model, size), in the order the plan lists them."""
    out = []
    for (model, size), g in priced.groupby(["model", "sample_size"], sort=False):
        counts = g.basis.value_counts()
        out.append(Point(str(model), str(size), len(g), float(g.seconds.sum(skipna=True)) / 3600,
                         int((g.basis == UNPRICED).sum()),
                         ", ".join(f"{b} {int(counts[b])}" for b in BASES if b in counts), bool(g.same_version.all())))
    return out


def wall_hours(trial_hours: float, slots: int) -> float:
    """The wall time of that many trial-hours on ``slots`` trials at a time, at best (no slot idle)."""
    return trial_hours / max(slots, 1)
