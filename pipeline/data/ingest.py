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
from pipeline.data.raw import RawDataset, high_cardinality
from pipeline.data.schema import table_name
from pipeline.data.store import Store
from pipeline.errors import DataError
from pipeline.spec import Protocol
from pipeline.suite_datasets import DatasetSpec, LocalFile, OpenMLTask, dataset_label

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


@dataclass
class Prepared:
    """A suite's dataset, ready to run: its rows and the splits its protocol asks for, read from the
    store or made in memory. Nothing of it is written until :func:`commit`, so a run refused after
    preparing (no cell left, a bad address) leaves the results file as it was."""

    dataset: StoredDataset
    split_key: str
    parts: pd.DataFrame  # repeat, fold, row_id, role ('train' | 'valid' | 'test')
    orders: pd.DataFrame  # repeat, fold, seed, row_id, rank: the nested training subsets
    raw: RawDataset | None = None  # to be stored (a dataset the store does not hold yet)
    new_splits: bool = False  # parts and orders are to be stored

    @property
    def name(self) -> str:
        return self.dataset.name

    def fold_sizes(self) -> pd.DataFrame:
        """One row per fold: repeat, fold and its training rows (n_train), in order."""
        train = self.parts[self.parts.role == "train"]
        return (train.groupby(["repeat", "fold"]).size().rename("n_train").reset_index()
                .sort_values(["repeat", "fold"], ignore_index=True))


def split_key(protocol: Protocol, seed: int, checksum: str, official: bool) -> str:
    """What decides every split of a dataset: its rows, its test folds (the task's own, or the seeded
    k-fold's k), the validation share, the seed and the code that splits (``splits.SPLIT_VERSION``;
    version 1 adds nothing, so keys made before it existed stay as they were). More repeats or subset
    seeds add splits without changing the ones there are (each is seeded on its own), so they are not
    part of it."""
    version = {"splitting": splits.SPLIT_VERSION} if splits.SPLIT_VERSION > 1 else {}
    blob = json.dumps({
        "folds": None if official else protocol.folds, "val": protocol.validation_fraction, "seed": seed,
        "data": checksum, **version,
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def ingest(store: Store, spec: DatasetSpec, protocol: Protocol, seed: int, *, refresh: bool = False) -> StoredDataset:
    """Make sure the dataset and its splits for this protocol are in the store; return it."""
    return commit(store, prepare(store, spec, protocol, seed, refresh=refresh))


def prepare(store: Store, spec: DatasetSpec, protocol: Protocol, seed: int, *, refresh: bool = False) -> Prepared:
    """The dataset and its splits for this protocol, from the store where it holds them, else loaded
    from the source and split in memory; every check that can refuse it runs here. Writes nothing."""
    name = dataset_label(spec)
    held = store.exists
    if isinstance(spec, OpenMLTask) and not spec.name:
        # Unnamed OpenML tasks are stored under their dataset's own name, e.g. 'credit-g'.
        hit = store.query("SELECT dataset FROM datasets WHERE openml_task_id = ? AND source = ?",
                          [spec.openml_task, sources.source_of(spec)]) if held else pd.DataFrame()
        name = str(hit.dataset.iloc[0]) if len(hit) else ""
    raw = _check_name(store, spec, name) if name and held else None
    stored = None if refresh or not name or not held else read(store, name)
    if stored is not None:
        _check_current(store, spec, stored)
        raw = None
    else:
        raw = raw or sources.load(spec)
        other = store.query("SELECT source FROM datasets WHERE dataset = ?", [raw.name]) if held else pd.DataFrame()
        if len(other) and other.source.iloc[0] != raw.source and isinstance(spec, OpenMLTask) and not spec.name:
            raw.name = f"{raw.name}-task{spec.openml_task}"
        if name and held and not refresh:  # by the name it is stored under (an OpenML task's may carry -taskN)
            _check_rows_only(store, raw)
        if raw.folds is None:  # the protocol's folds must be possible before anything is stored
            y = raw.y.astype(str) if raw.task_type != "regression" else raw.y.astype(float)
            try:
                splits.make_folds(y, raw.task_type, protocol.folds, protocol.repeats_of(raw.name), seed)
            except DataError as err:
                raise DataError(f"dataset {raw.name!r} ({raw.source}): {err}") from None
        stored = _as_stored(raw)
    key = split_key(protocol, seed, stored.checksum, stored.has_official_folds)
    if raw is None and _covers(store, stored, key, protocol):
        parts, orders = store.fold_rows(stored.name, key)
        return Prepared(stored, key, parts, orders)
    if stored.has_official_folds:
        folds = (raw.folds if raw is not None else
                 store.query("SELECT repeat, fold, row_id, role FROM splits WHERE dataset = ? AND split_key = "
                             "'official' ORDER BY repeat, fold, role, row_id", [stored.name]))
        if folds is None or not len(folds):
            raise DataError(f"dataset {stored.name!r}: its official folds are missing from the store; use --refresh")
    else:
        folds = splits.make_folds(stored.y, stored.task_type, protocol.folds, protocol.repeats_of(stored.name), seed)
    parts = splits.carve_validation(folds, stored.y, stored.task_type, protocol.validation_fraction, seed)
    orders = splits.train_orders(parts, stored.y, stored.task_type, protocol.subset_seeds, seed)
    return Prepared(stored, key, parts, orders, raw=raw, new_splits=True)


def commit(store: Store, prepared: Prepared) -> StoredDataset:
    """Store what :func:`prepare` made (the dataset's rows, its splits) and return the stored dataset."""
    if prepared.raw is not None:
        _write(store, prepared.raw)
    if prepared.new_splits:
        store.write_splits(prepared.name, prepared.split_key, prepared.parts, prepared.orders)
    stored = read(store, prepared.name)
    assert stored is not None
    return stored


def _covers(store: Store, ds: StoredDataset, key: str, protocol: Protocol) -> bool:
    """The store holds this split key's splits with every repeat and subset seed the protocol asks for."""
    have = store.query("SELECT count(DISTINCT repeat) AS repeats, count(DISTINCT seed) AS seeds FROM train_order "
                       "WHERE dataset = ? AND split_key = ?", [ds.name, key]).iloc[0]
    if ds.has_official_folds:
        need = store.query("SELECT count(DISTINCT repeat) AS n FROM splits WHERE dataset = ? AND split_key = "
                           "'official'", [ds.name]).n.iloc[0]
    else:
        need = protocol.repeats_of(ds.name)
    return int(have.repeats) >= int(need) and int(have.seeds) >= protocol.subset_seeds


def _as_stored(raw: RawDataset) -> StoredDataset:
    """A loaded dataset as :func:`read` returns it once stored: categoricals as text categories,
    numerics as floats, class labels as text."""
    frame = raw.features.copy()
    cat = set(raw.categorical)
    for c in frame.columns:
        frame[c] = (frame[c].astype("string").astype(object).where(frame[c].notna()).astype("category")
                    if c in cat else frame[c].astype(float))
    y = raw.y.astype(str) if raw.task_type != "regression" else raw.y.astype(float)
    classes = sorted(y.unique()) if raw.task_type != "regression" else None
    return StoredDataset(name=raw.name, task_type=raw.task_type, classes=classes, features=frame,
                         y=y.reset_index(drop=True), checksum=raw.checksum(), has_official_folds=raw.folds is not None)


def _check_current(store: Store, spec: DatasetSpec, stored: StoredDataset) -> None:
    """Refuse a stored copy that no longer matches its suite entry (target, task type, categorical
    columns), naming the command that replaces it; using it would run the old data under the new entry."""
    if not isinstance(spec, LocalFile):
        return
    meta = store.query("SELECT target, task_type, notes FROM datasets WHERE dataset = ?", [stored.name]).iloc[0]
    changed = []
    held_drop = sorted(sources.dropped(meta.notes))
    if sorted(spec.drop or []) != held_drop:
        # a column the entry now drops is still in the stored copy, or one it no longer drops is not
        changed.append(f"drop {sorted(spec.drop or [])} (stored: {held_drop})")
    if spec.target != meta.target:
        changed.append(f"target {spec.target!r} (stored: {meta.target!r})")
    if spec.task_type and spec.task_type != meta.task_type:
        changed.append(f"task_type {spec.task_type!r} (stored: {meta.task_type!r})")
    if spec.categorical is not None:
        held = sorted(c for c in stored.features.columns if isinstance(stored.features[c].dtype, pd.CategoricalDtype))
        if sorted(spec.categorical) != held:
            changed.append(f"categorical {sorted(spec.categorical)} (stored: {held})")
    if not changed:
        return
    if spec.target != meta.target and Path(spec.file).is_file():
        columns = _columns(Path(spec.file))
        if columns is not None and spec.target not in columns:  # a typo: nothing to replace the stored copy with
            raise DataError(f"dataset {stored.name!r}: the target {spec.target!r} is not a column of {spec.file} "
                            f"(columns: {', '.join(columns[:30])}); the stored copy's target is {meta.target!r}")
    raise DataError(f"dataset {stored.name!r}: the suite entry changed since it was stored: {'; '.join(changed)}; "
                    "to keep both, give this entry another 'name:'; to replace the stored copy (its results then "
                    f"stay only as superseded history), run `attnbench fetch SUITE --db {store.path} --refresh`")


def _columns(path: Path) -> list[str] | None:
    """A data file's column names, read without loading its rows where the format allows."""
    try:
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            return [str(c) for c in pq.read_schema(path).names]
        if path.suffix.lower() in (".csv", ".tsv"):
            return [str(c) for c in pd.read_csv(path, sep="\t" if path.suffix.lower() == ".tsv" else ",", nrows=0).columns]
        return None  # arff: the usual message stands
    except Exception as err:  # an unreadable file says nothing about the target; the usual message stands
        log.warning("%s: cannot read its columns (%s)", path, err)
        return None


def _check_rows_only(store: Store, raw: RawDataset) -> None:
    """A file exported from a reference holds a dataset's description and results but not its rows; the
    rows loaded from the source take their place only if they are the rows those results were run on."""
    held = store.query("SELECT checksum FROM datasets WHERE dataset = ? AND data_table IS NULL", [raw.name])
    if len(held) and held.checksum.iloc[0] != raw.checksum():
        raise DataError(
            f"dataset {raw.name!r}: {store.path} holds results on rows with checksum {held.checksum.iloc[0]}, "
            f"but {raw.source} now gives checksum {raw.checksum()}; results on other rows would be compared "
            f"with these, so use another --db or give this entry another 'name:'")


def _check_name(store: Store, spec: DatasetSpec, name: str) -> RawDataset | None:
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


def _write(store: Store, raw: RawDataset) -> None:
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
        # about one level per row: an id or free text (raw.high_cardinality; ingest's notes say so too)
        "high_cardinality": [high_cardinality(raw.features[c]) for c in raw.features.columns],
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
    if m.data_table is None or pd.isna(m.data_table):
        return None  # described but its rows are not here (a file exported from a reference)
    feats = store.query("SELECT name, kind FROM features WHERE dataset = ? ORDER BY position", [name])
    frame = store.query(f'SELECT * FROM "{m.data_table}" ORDER BY "{ROW_ID}"')
    y = frame.pop(TARGET)
    frame = frame.drop(columns=[ROW_ID])[list(feats.name)]
    for n, kind in zip(feats.name, feats.kind):
        frame[n] = frame[n].astype("category") if kind == "categorical" else frame[n].astype(float)
    classes = json.loads(m.classes) if m.classes else None
    return StoredDataset(name=name, task_type=m.task_type, classes=classes, features=frame, y=y,
                         checksum=m.checksum, has_official_folds=bool(m.has_official_folds))
