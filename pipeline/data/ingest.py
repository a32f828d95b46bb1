"""Fetch a suite's datasets into DuckDB once, with their splits; read them back for a run.

The results file is the cache: a dataset already stored is not fetched again, so a run that has
ingested its data needs neither OpenML nor the original file any more.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.data import sources, splits
from pipeline.data.store import Store, table_name
from pipeline.errors import DataError
from pipeline.spec import DatasetSpec, LocalFile, OpenMLTask, Protocol, dataset_label

log = logging.getLogger(__name__)
TARGET = "__target__"
ROW_ID = "__row_id__"


@dataclass
class StoredDataset:
    name: str
    task_type: str
    classes: list[str] | None
    features: pd.DataFrame
    y: pd.Series
    checksum: str
    has_official_folds: bool


def split_key(protocol: Protocol, seed: int, checksum: str, official: bool) -> str:
    blob = json.dumps({
        "folds": None if official else protocol.folds, "repeats": None if official else protocol.repeats,
        "val": protocol.validation_fraction, "subset_seeds": protocol.subset_seeds, "seed": seed, "data": checksum,
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def ingest(store: Store, spec: DatasetSpec, protocol: Protocol, seed: int, *, refresh: bool = False) -> StoredDataset:
    """Make sure the dataset and its splits for this protocol are in the store; return it."""
    name = dataset_label(spec)
    if isinstance(spec, OpenMLTask) and not spec.name:
        # Unnamed OpenML tasks are stored under their dataset's own name, e.g. 'credit-g'.
        hit = store.query("SELECT dataset FROM datasets WHERE openml_task_id = ? AND source = ?",
                          [spec.openml_task, sources.source_of(spec)])
        name = str(hit.dataset.iloc[0]) if len(hit) else ""
    raw = _check_name(store, spec, name) if name else None
    stored = None if refresh or not name else read(store, name)
    if stored is not None:
        _check_current(store, spec, stored)
    if stored is None:
        raw = raw or sources.load(spec)
        other = store.query("SELECT source FROM datasets WHERE dataset = ?", [raw.name])
        if len(other) and other.source.iloc[0] != raw.source and isinstance(spec, OpenMLTask) and not spec.name:
            raw.name = f"{raw.name}-task{spec.openml_task}"
        if raw.folds is None:  # the protocol's folds must be possible before anything is stored
            y = raw.y.astype(str) if raw.task_type != "regression" else raw.y.astype(float)
            try:
                splits.make_folds(y, raw.task_type, protocol.folds, protocol.repeats, seed)
            except DataError as err:
                raise DataError(f"dataset {raw.name!r} ({raw.source}): {err}") from None
        _write(store, raw)
        stored = read(store, raw.name)
        assert stored is not None
    name = stored.name
    key = split_key(protocol, seed, stored.checksum, stored.has_official_folds)
    if not store.has_splits(name, key):
        if stored.has_official_folds:
            folds = store.query("SELECT repeat, fold, row_id, role FROM splits WHERE dataset = ? AND split_key = "
                                "'official' ORDER BY repeat, fold, role, row_id", [name])
            if not len(folds):
                raise DataError(f"dataset {name!r}: its official folds are missing from the store; use --refresh")
        else:
            folds = splits.make_folds(stored.y, stored.task_type, protocol.folds, protocol.repeats, seed)
        s = splits.carve_validation(folds, stored.y, stored.task_type, protocol.validation_fraction, seed)
        o = splits.train_orders(s, stored.y, stored.task_type, protocol.subset_seeds, seed)
        store.write_splits(name, key, s, o)
    return stored


def _check_current(store: Store, spec: DatasetSpec, stored: StoredDataset) -> None:
    """Refuse a stored copy that no longer matches its suite entry (target, task type, categorical
    columns), naming the command that replaces it; using it would run the old data under the new entry."""
    if not isinstance(spec, LocalFile):
        return
    meta = store.query("SELECT target, task_type FROM datasets WHERE dataset = ?", [stored.name]).iloc[0]
    changed = []
    if spec.target != meta.target:
        changed.append(f"target {spec.target!r} (stored: {meta.target!r})")
    if spec.task_type and spec.task_type != meta.task_type:
        changed.append(f"task_type {spec.task_type!r} (stored: {meta.task_type!r})")
    if spec.categorical is not None:
        held = sorted(c for c in stored.features.columns if isinstance(stored.features[c].dtype, pd.CategoricalDtype))
        if sorted(spec.categorical) != held:
            changed.append(f"categorical {sorted(spec.categorical)} (stored: {held})")
    if changed:
        raise DataError(f"dataset {stored.name!r}: the suite entry changed since it was stored: {'; '.join(changed)}; "
                        f"replace the stored copy with `attnbench fetch SUITE --db {store.path} --refresh`")


def _check_name(store: Store, spec: DatasetSpec, name: str) -> sources.RawDataset | None:
    """Refuse a name the database already holds for other rows: results are keyed by dataset name, so
    reusing it would score one dataset's cells on another's data.

    A local file at another path keeps the name when it holds the same rows (same checksum), or when it
    is not there at all (the database was copied to another machine: the stored rows serve). The loaded
    rows are returned so they are not read twice.
    """
    held = store.query("SELECT source, checksum FROM datasets WHERE dataset = ?", [name])
    source = sources.source_of(spec)
    if not len(held) or held.source.iloc[0] == source:
        return None
    held_source = str(held.source.iloc[0])
    if isinstance(spec, LocalFile) and held_source.startswith("file:"):
        if not Path(spec.file).is_file():
            log.warning("dataset %r: %s is not here; using the rows stored from %s", name, spec.file, held_source)
            return None
        raw = sources.load(spec)
        if raw.checksum() == held.checksum.iloc[0]:
            return raw
    raise DataError(
        f"dataset name {name!r} is already used in {store.path} for {held_source}, and this suite gives it "
        f"to {source}; results are keyed by dataset name, so give this entry another 'name:' or use another --db")


def _write(store: Store, raw: sources.RawDataset) -> None:
    checksum = raw.checksum()
    frame = raw.features.copy()
    for c in raw.categorical:
        frame[c] = frame[c].astype("string")
    frame[TARGET] = raw.y.astype(str) if raw.task_type != "regression" else raw.y.astype(float)
    frame[ROW_ID] = np.arange(len(frame))
    cat = set(raw.categorical)
    features = pd.DataFrame({
        "dataset": raw.name,
        "position": range(raw.features.shape[1]),
        "name": list(raw.features.columns),
        "kind": ["categorical" if c in cat else "numeric" for c in raw.features.columns],
        "n_missing": [int(raw.features[c].isna().sum()) for c in raw.features.columns],
        "n_levels": [int(raw.features[c].nunique()) if c in cat else None for c in raw.features.columns],
    })
    classes = sorted(raw.y.astype(str).unique()) if raw.task_type != "regression" else None
    # Official folds go in under the key 'official'; ingest() carves validation from them per protocol.
    official = raw.folds
    meta = {
        "dataset": raw.name, "source": raw.source, "task_type": raw.task_type, "target": raw.target,
        "n_rows": len(frame), "n_features": raw.features.shape[1], "n_numeric": raw.features.shape[1] - len(cat),
        "n_categorical": len(cat), "n_classes": len(classes) if classes else None,
        "classes": json.dumps(classes) if classes else None, "openml_id": raw.openml_id,
        "openml_task_id": raw.openml_task_id, "checksum": checksum, "data_table": table_name(raw.name, checksum),
        "has_official_folds": official is not None, "description": raw.description,
        "notes": "; ".join(raw.notes) or None, "fetched_at": datetime.now(timezone.utc).replace(tzinfo=None),
    }
    if official is not None:
        empty = pd.DataFrame(columns=["repeat", "fold", "seed", "row_id", "rank"])
        store.write_dataset(meta, features, frame, official, empty, split_key="official")
    else:
        store.write_dataset(meta, features, frame, pd.DataFrame(columns=["repeat", "fold", "row_id", "role"]),
                            pd.DataFrame(columns=["repeat", "fold", "seed", "row_id", "rank"]), split_key="none")
    for note in raw.notes:
        log.warning("dataset %s: %s", raw.name, note)


def read(store: Store, name: str) -> StoredDataset | None:
    meta = store.query("SELECT * FROM datasets WHERE dataset = ?", [name])
    if not len(meta):
        return None
    m = meta.iloc[0]
    feats = store.query("SELECT name, kind FROM features WHERE dataset = ? ORDER BY position", [name])
    frame = store.query(f'SELECT * FROM "{m.data_table}" ORDER BY "{ROW_ID}"')
    y = frame.pop(TARGET)
    frame = frame.drop(columns=[ROW_ID])[list(feats.name)]
    for n, kind in zip(feats.name, feats.kind):
        frame[n] = frame[n].astype("category") if kind == "categorical" else frame[n].astype(float)
    classes = json.loads(m.classes) if m.classes else None
    return StoredDataset(name=name, task_type=m.task_type, classes=classes, features=frame, y=y,
                         checksum=m.checksum, has_official_folds=bool(m.has_official_folds))
