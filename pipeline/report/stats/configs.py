"""One architecture at two configurations (issue 59 item 4: FT-Transformer at its published size, d_token 192,
beside the study's d_token 64): per training size, on the splits both entries finished, what the second
configuration changes in accuracy and in cost.

Each dataset is decided on its own splits by :func:`pipeline.report.stats.verdicts.decide` (the corrected
interval of the dataset's design); the mean difference over datasets has a t-interval over datasets, the
units (the splits of one dataset share rows, datasets do not). The cost is the ratio of the two entries'
trial time (each cell's whole search, ``search_seconds``) summed over the same cells, so neither pays for a
split the other did not run; its memory and size are the ratios of the two entries' median peak memory and
parameter count over the same cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.records import COMPARED_VERDICTS, Verdict
from pipeline.report.stats.claims import mean_interval
from pipeline.report.stats.verdicts import decide

COLUMNS = ["dataset", "sample_size", "repeat", "fold", "model", "model_name", "score", "seconds", "searched", "bound",
           "peak_mb", "n_params"]


@dataclass(frozen=True)
class SizeChange:
    """``model`` against ``base`` (the same architecture) at one training size, over ``datasets``."""

    model: str
    base: str
    sample_size: str
    datasets: int
    splits: int
    verdicts: dict[str, int]
    mean: float
    low: float
    high: float
    cost_ratio: float
    hours: float
    base_hours: float
    memory_ratio: float = math.nan  # the median peak memory of its cells over the base's, on the same cells
    params_ratio: float = math.nan  # the same of their parameters


def pairs_of_configurations(cells: pd.DataFrame) -> list[tuple[str, str]]:
    """(entry, base) for every architecture run as more than one entry, both at defaults or both searched
    (``searched``: a default beside its own search is what tuning changes, not a second configuration): the
    base is the entry named as the architecture (``ft_transformer`` for ``ft_transformer-192``), else the
    first by name."""
    out = []
    for (name, _), g in cells.groupby(["model_name", "searched"], sort=True):
        entries = sorted(set(g.model))
        if len(entries) < 2:
            continue
        base = name if name in entries else entries[0]
        out += [(m, base) for m in entries if m != base]
    return out


def changes(cells: pd.DataFrame, folds: dict[str, int], model: str, base: str) -> list[SizeChange]:
    """``cells``: finished cells (:data:`COLUMNS`; a cell's subset seeds already one row each or averaged
    here; ``bound``: still improving when its epochs, rounds or time ran out, so never called behind);
    ``folds``: each dataset's k. One :class:`SizeChange` per training size both entries ran."""
    per_split = cells[cells.model.isin([model, base])].groupby(
        ["dataset", "sample_size", "repeat", "fold", "model"]).agg(score=("score", "mean"), seconds=("seconds", "sum"),
                                                                   bound=("bound", "any"), peak=("peak_mb", "max"),
                                                                   params=("n_params", "max"))
    # the splits both finished; a peak or a parameter count not measured leaves a split out of its ratio only
    wide = per_split[["score", "seconds", "bound"]].unstack("model").dropna()
    sizes = per_split[["peak", "params"]].unstack("model").reindex(wide.index)
    if wide.empty or model not in wide["score"] or base not in wide["score"]:
        return []
    out = []
    for size, at in wide.groupby(level="sample_size", sort=False):
        verdicts = {v.value: 0 for v in Verdict}
        means = []
        for dataset, g in at.groupby(level="dataset"):
            d = (g["score"][model] - g["score"][base]).to_numpy(dtype=float)
            bound = (bool(g["bound"][model].astype(bool).any()), bool(g["bound"][base].astype(bool).any()))
            decision = decide(d, folds=folds.get(str(dataset), 3), bound=bound)
            verdicts[decision.verdict.value] += 1
            if decision.verdict in COMPARED_VERDICTS:
                means.append(decision.diff)
        mean, low, high = mean_interval(np.asarray(means, dtype=float))
        hours, base_hours = float(at["seconds"][model].sum()) / 3600, float(at["seconds"][base].sum()) / 3600
        measured = sizes.loc[at.index]
        out.append(SizeChange(model, base, str(size), int(at.index.get_level_values("dataset").nunique()), len(at),
                              verdicts, mean, low, high, hours / base_hours if base_hours > 0 else math.nan, hours,
                              base_hours, _median_ratio(measured["peak"], model, base),
                              _median_ratio(measured["params"], model, base)))
    return sorted(out, key=lambda c: (int(c.sample_size) if c.sample_size.isdigit() else math.inf))


def _median_ratio(wide: pd.DataFrame, model: str, base: str) -> float:
    """The median of ``model``'s column over the median of ``base``'s, on the rows both measured."""
    if model not in wide or base not in wide:
        return math.nan
    both = wide[[model, base]].dropna().astype(float)
    if both.empty or float(both[base].median()) <= 0:
        return math.nan
    return float(both[model].median()) / float(both[base].median())
