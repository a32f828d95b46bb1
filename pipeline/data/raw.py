"""A dataset as a source gives it (:class:`RawDataset`: features, target, task type, official folds), where
it comes from (:func:`source_of`), and :func:`validate`, which every loader's result passes: what no model
can learn from is refused with the reason, what can be repaired is, with a note. Kept apart from the
loaders (:mod:`pipeline.data.sources`, :mod:`pipeline.data.openml_source`) so that they import it, not
each other.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.errors import DataError
from pipeline.suite_datasets import (
    DatasetSpec,
    LocalFile,
    OpenMLTask,
    SklearnDataset,
    SyntheticDataset,
    synthetic_source,
)

TaskType = str  # "binary" | "multiclass" | "regression"

# A categorical column with about one level per row is an id or free text, not a category: more levels
# than HIGH_CARDINALITY_SHARE of its non-missing rows, and more than HIGH_CARDINALITY_MIN. Ingest says
# so (a note) and the features table flags it (high_cardinality); the column is kept as it is.
HIGH_CARDINALITY_SHARE = 0.5
HIGH_CARDINALITY_MIN = 20
@dataclass
class RawDataset:
    name: str
    source: str
    features: pd.DataFrame  # one column per feature; categoricals as pandas 'category'
    y: pd.Series
    task_type: TaskType
    target: str
    openml_id: int | None = None
    openml_task_id: int | None = None
    # Official folds where the source has them: columns repeat, fold, row_id, role ('train' | 'test').
    folds: pd.DataFrame | None = None
    description: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def categorical(self) -> list[str]:
        return [c for c in self.features.columns if isinstance(self.features[c].dtype, pd.CategoricalDtype)]

    def checksum(self) -> str:
        h = hashlib.sha256()
        h.update(pd.util.hash_pandas_object(self.features, index=False).values.tobytes())
        h.update(pd.util.hash_pandas_object(self.y.astype(str), index=False).values.tobytes())
        return h.hexdigest()[:16]


def source_of(spec: DatasetSpec) -> str:
    """Where a dataset entry's rows come from, as ``RawDataset.source`` records it (without loading it)."""
    if isinstance(spec, OpenMLTask):
        return f"openml-task:{spec.openml_task}"
    if isinstance(spec, LocalFile):
        return f"file:{Path(spec.file)}"
    if isinstance(spec, SklearnDataset):
        return f"sklearn:{spec.sklearn}"
    if isinstance(spec, SyntheticDataset):
        return synthetic_source(spec)
    raise DataError(f"expand OpenML suites before loading: {spec}")


def high_cardinality(col: pd.Series) -> bool:
    """A categorical column with about one level per row (see HIGH_CARDINALITY_SHARE): an id or free
    text rather than a category.

    >>> high_cardinality(pd.Series([f"id{i}" for i in range(100)], dtype="category"))
    True
    >>> high_cardinality(pd.Series(["a", "b"] * 50, dtype="category")), high_cardinality(pd.Series(np.arange(100.0)))
    (False, False)
    """
    if not isinstance(col.dtype, pd.CategoricalDtype):
        return False
    levels = int(col.nunique())
    return levels > HIGH_CARDINALITY_MIN and levels > HIGH_CARDINALITY_SHARE * int(col.notna().sum())


def validate(ds: RawDataset) -> RawDataset:
    """Reject what no model can learn from, with the reason; note what was repaired."""
    where = f"dataset {ds.name!r} ({ds.source})"
    if len(ds.features) == 0 or ds.features.shape[1] == 0:
        raise DataError(f"{where}: it is empty ({ds.features.shape[0]} rows, {ds.features.shape[1]} features)")
    if ds.task_type not in ("binary", "multiclass", "regression"):
        raise DataError(f"{where}: unknown task type {ds.task_type!r}")
    if ds.y.isna().any():
        raise DataError(f"{where}: the target {ds.target!r} has {int(ds.y.isna().sum())} missing values")
    if ds.task_type == "regression":
        yv = pd.to_numeric(ds.y, errors="coerce")
        if yv.isna().any() or not np.isfinite(yv.to_numpy(dtype=float)).all():
            raise DataError(f"{where}: the regression target {ds.target!r} has non-numeric, NaN or infinite values")
        ds.y = yv.astype(float)
    else:
        counts = ds.y.astype(str).value_counts()
        if len(counts) < 2:
            raise DataError(f"{where}: the target {ds.target!r} has a single class ({counts.index[0]!r})")
        if ds.task_type == "binary" and len(counts) != 2:
            raise DataError(f"{where}: task_type is binary, but the target {ds.target!r} has {len(counts)} "
                            "distinct values; use multiclass, or regression for a continuous target")
        numeric = pd.to_numeric(ds.y, errors="coerce")
        if (ds.task_type == "multiclass" and numeric.notna().all() and len(counts) > 20
                and len(counts) > 0.5 * len(ds.y) and (numeric % 1 != 0).any()):
            raise DataError(f"{where}: task_type is multiclass, but the target {ds.target!r} looks continuous "
                            f"({len(counts)} distinct non-integer values in {len(ds.y)} rows); use task_type: "
                            "regression")
    ds.features.columns = [str(c) for c in ds.features.columns]
    if ds.features.columns.duplicated().any():
        raise DataError(f"{where}: duplicate feature names {ds.features.columns[ds.features.columns.duplicated()].tolist()}")
    empty = [c for c in ds.features.columns if ds.features[c].isna().all()]
    if empty:
        ds.features = ds.features.drop(columns=empty)
        ds.notes.append(f"dropped all-missing features: {empty}")
        if ds.features.shape[1] == 0:
            raise DataError(f"{where}: every feature is missing in every row")
    infinite: dict[str, int] = {}
    for c in ds.features.columns:
        col = ds.features[c]
        if not isinstance(col.dtype, pd.CategoricalDtype):
            num = pd.to_numeric(col, errors="coerce").astype(float)
            n_inf = int(np.isinf(num.to_numpy()).sum())
            if n_inf:
                infinite[str(c)] = n_inf
            ds.features[c] = num.replace([np.inf, -np.inf], np.nan)
    if infinite:
        ds.notes.append(f"{sum(infinite.values())} infinite values became missing (feature: count): "
                        + ", ".join(f"{c}: {n}" for c, n in list(infinite.items())[:8])
                        + (" …" if len(infinite) > 8 else ""))
    wide = [c for c in ds.features.columns if high_cardinality(ds.features[c])]
    if wide:
        how = (f"leave {'it' if len(wide) == 1 else 'them'} out with drop: [{', '.join(wide)}] in the suite entry"
               if ds.source.startswith("file:") else "kept as it is")
        ds.notes.append("categorical column" + ("s" if len(wide) > 1 else "") + " with about one level per row (an "
                        "id or free text?): " + ", ".join(f"{c} ({ds.features[c].nunique():,} levels in "
                                                          f"{int(ds.features[c].notna().sum()):,} rows)" for c in wide[:8])
                        + (" …" if len(wide) > 8 else "") + f"; {how}")
    return ds
