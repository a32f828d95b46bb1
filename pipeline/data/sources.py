"""Where datasets come from: OpenML (tasks and suites), local files, scikit-learn's bundled sets, and
synthetic tasks with known structure (:mod:`pipeline.data.synthetic`).

Everything here runs on the driver, once per dataset; workers read splits from the object store and
never contact OpenML. Each loader returns a :class:`RawDataset` that :func:`validate` has checked.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.errors import DataError
from pipeline.spec import (
    DatasetSpec,
    LocalFile,
    OpenMLSuite,
    OpenMLTask,
    SklearnDataset,
    SyntheticDataset,
    dataset_label,
    synthetic_source,
)

TaskType = str  # "binary" | "multiclass" | "regression"

# A categorical column with about one level per row is an id or free text, not a category: more levels
# than HIGH_CARDINALITY_SHARE of its non-missing rows, and more than HIGH_CARDINALITY_MIN. Ingest says
# so (a note) and the features table flags it (high_cardinality); the column is kept as it is.
HIGH_CARDINALITY_SHARE = 0.5
HIGH_CARDINALITY_MIN = 20
# The note that records a file entry's `drop:` with the stored copy (its columns as a JSON list).
DROPPED = "columns left out by the suite entry's drop: "


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


# -------------------------------------------------------------------------------------------- openml
def configure_openml(cache_dir: str | None = None, server: str | None = None) -> None:
    import openml

    if cache_dir:
        openml.config.set_root_cache_directory(str(Path(cache_dir).expanduser()))
    if server:
        openml.config.server = server


OPENML_TIMEOUT_S = float(os.environ.get("ATTNBENCH_NET_TIMEOUT_S", "30"))


@contextlib.contextmanager
def network_timeout(seconds: float | None = None) -> Iterator[None]:
    """A timeout on every connection attempt and read of the openml client, which passes none to
    ``requests`` (a server that accepts and then says nothing would hold it forever). For the length of
    the block, a ``requests`` call without a timeout of its own gets this one."""
    import requests

    limit = OPENML_TIMEOUT_S if seconds is None else seconds
    plain = requests.Session.request

    def request(self: requests.Session, method: Any, url: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and kwargs.get("timeout") is None:  # openml passes keywords only
            kwargs["timeout"] = limit
        return plain(self, method, url, *args, **kwargs)

    requests.Session.request = request  # type: ignore[method-assign]
    try:
        yield
    finally:
        requests.Session.request = plain  # type: ignore[method-assign]


def openml_error(what: str, err: Exception) -> DataError:
    """An OpenML failure as one line: what the server said, or that it is unreachable and not cached."""
    import openml

    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if isinstance(err, openml.exceptions.OpenMLServerException):
        return DataError(f"OpenML {what}: the server answered: {text}")
    return DataError(
        f"OpenML {what}: could not load it ({type(err).__name__}: {text}). OpenML is unreachable and it is "
        f"not in the local cache ({openml.config.get_cache_directory()}). Connect once with `attnbench fetch "
        f"SUITE`, or point --openml-cache at a cache that has it."
    )


def load_openml_task(task_id: int, name: str | None = None) -> RawDataset:
    import openml

    try:
        with network_timeout():
            task: Any = openml.tasks.get_task(  # a supervised task: it has target_name
                task_id, download_splits=True, download_data=True, download_qualities=False,
                download_features_meta_data=False,
            )
            dataset = task.get_dataset()
            x, y, cat_mask, names = dataset.get_data(target=task.target_name)
    except DataError:
        raise
    except Exception as err:  # the client raises many types (HTTP, XML, arff, cache); all mean "not loadable"
        raise openml_error(f"task {task_id}", err) from err
    x = pd.DataFrame(x, columns=names)
    for c, is_cat in zip(names, cat_mask):
        if is_cat and not isinstance(x[c].dtype, pd.CategoricalDtype):
            x[c] = x[c].astype("category")
    kind = task.task_type_id
    if kind == openml.tasks.TaskType.SUPERVISED_REGRESSION:
        task_type = "regression"
    elif kind == openml.tasks.TaskType.SUPERVISED_CLASSIFICATION:
        task_type = "binary" if pd.Series(y).nunique() == 2 else "multiclass"
    else:
        raise DataError(f"OpenML task {task_id} is a {kind.name} task; only classification and regression run here")
    repeats, folds, _samples = task.get_split_dimensions()
    rows = []
    for r in range(repeats):
        for f in range(folds):
            train, test = task.get_train_test_split_indices(fold=f, repeat=r, sample=0)
            rows.append(pd.DataFrame({"repeat": r, "fold": f, "row_id": train, "role": "train"}))
            rows.append(pd.DataFrame({"repeat": r, "fold": f, "row_id": test, "role": "test"}))
    return validate(RawDataset(
        name=name or dataset.name,
        source=source_of(OpenMLTask(openml_task=task_id)),
        features=x,
        y=pd.Series(y, name=task.target_name).reset_index(drop=True),
        task_type=task_type,
        target=task.target_name,
        openml_id=int(dataset.dataset_id),
        openml_task_id=task_id,
        folds=pd.concat(rows, ignore_index=True),
        description=(dataset.description or "")[:2000],
    ))


def openml_suite_tasks(suite_id: int | str) -> list[int]:
    import openml

    try:
        with network_timeout():
            suite = openml.study.get_suite(suite_id)
    except Exception as err:  # see load_openml_task
        raise openml_error(f"suite {suite_id}", err) from err
    return [int(t) for t in (suite.tasks or [])]


# --------------------------------------------------------------------------------------------- files
def load_file(spec: LocalFile) -> RawDataset:
    """The file's rows; where the file is not there and the entry names its OpenML dataset, that
    dataset's rows from OpenML (or the client's cache). Either is refused when the entry's checksum
    says other rows."""
    path = Path(spec.file)
    if not path.is_file():
        if spec.openml_id is None:
            raise DataError(f"{path}: data file not found")
        raw = _openml_copy(spec)
    else:
        raw = _read_file(spec, path)
    if spec.checksum and raw.checksum() != spec.checksum:
        raise DataError(f"dataset {raw.name!r} ({raw.source}): other rows than the suite entry's (checksum "
                        f"{raw.checksum()}, the entry says {spec.checksum}); not the data the suite was written for")
    return raw


def _openml_copy(spec: LocalFile) -> RawDataset:
    """The rows of the OpenML dataset a file entry is a copy of, loaded as the file would be."""
    import openml

    path, did = Path(spec.file), int(spec.openml_id or 0)
    where = (f"{path} is not there; its rows are OpenML dataset {did} (https://www.openml.org/d/{did}"
             + (f", checksum {spec.checksum}" if spec.checksum else "") + ")")
    try:
        with network_timeout():
            dataset: Any = openml.datasets.get_dataset(did, download_data=True, download_qualities=False,
                                                       download_features_meta_data=False)
            frame, *_ = dataset.get_data(dataset_format="dataframe")
    except Exception as err:  # the client raises many types (HTTP, XML, arff, cache); all mean "not loadable"
        text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise DataError(f"dataset {dataset_label(spec)!r}: {where}, and OpenML could not give it ({text}); put the "
                        f"file at {path}, or connect once (the OpenML cache: {openml.config.get_cache_directory()})"
                        ) from None
    frame = pd.DataFrame(frame)
    raw = _from_frame(spec, frame, f"openml-dataset:{did}", str(path))
    raw.notes.append(f"loaded from OpenML dataset {did}: {path} was not there")
    return raw


def _read_file(spec: LocalFile, path: Path) -> RawDataset:
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            df = pd.read_parquet(path)
        elif suffix in (".csv", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            with path.open(newline="") as fh:
                header = next(csv.reader(fh, delimiter=sep), [])
            seen = [h for i, h in enumerate(header) if h in header[:i]]
            if seen:  # pandas would rename them silently (a, a.1)
                raise DataError(f"{path}: duplicate column names {seen}")
            df = pd.read_csv(path, sep=sep)
        elif suffix == ".arff":
            df = _read_arff(path)
        else:
            raise DataError(f"{path}: unsupported file type {suffix!r}; use .parquet, .csv, .tsv or .arff")
    except DataError:
        raise
    except Exception as err:  # pyarrow, the csv parser and liac-arff raise their own types for bad files
        raise DataError(f"{path}: cannot read the file ({type(err).__name__}: {err})") from err
    return _from_frame(spec, df, source_of(spec), str(path))


def _from_frame(spec: LocalFile, df: pd.DataFrame, source: str, path: str) -> RawDataset:
    """A file entry's frame as a dataset: its drop, target and categorical columns applied."""
    dup = df.columns[df.columns.duplicated()].tolist()
    if dup:
        raise DataError(f"{path}: duplicate column names {dup}")
    drop = list(spec.drop or [])
    absent = [c for c in drop if c not in df.columns]
    if absent:
        raise DataError(f"{path}: drop names {', '.join(map(repr, absent))}, not a column of the file; columns: "
                        f"{', '.join(map(str, df.columns[:30]))}" + (" …" if len(df.columns) > 30 else ""))
    df = df.drop(columns=drop)
    if spec.target not in df.columns:
        raise DataError(f"{path}: target column {spec.target!r} not found; columns: {', '.join(map(str, df.columns[:30]))}")
    y = df.pop(spec.target)
    if spec.categorical is not None:
        missing = sorted(set(spec.categorical) - set(df.columns))
        if missing:
            raise DataError(f"{path}: categorical columns {missing} not in the file")
        for c in spec.categorical:
            df[c] = df[c].astype("string").astype("category")
    for c in df.columns:
        if df[c].dtype == object or pd.api.types.is_string_dtype(df[c].dtype) or pd.api.types.is_bool_dtype(df[c].dtype):
            df[c] = df[c].astype("string").astype("category")
    task_type = spec.task_type or _infer_task(y)
    return validate(RawDataset(
        name=dataset_label(spec), source=source, features=df.reset_index(drop=True),
        y=y.reset_index(drop=True), task_type=task_type, target=spec.target,
        openml_id=spec.openml_id, openml_task_id=spec.openml_task,
        notes=[DROPPED + json.dumps(sorted(drop))] if drop else [],
    ))


def dropped(notes: Any) -> list[str]:
    """The columns a stored copy's suite entry left out (``drop:``), read back from its notes.

    >>> dropped(DROPPED + '["id", "comment"]; other notes'), dropped(None)
    (['id', 'comment'], [])
    """
    text = notes if isinstance(notes, str) else ""
    at = text.find(DROPPED)
    if at < 0:
        return []
    names, _ = json.JSONDecoder().raw_decode(text, at + len(DROPPED))
    return [str(n) for n in names]


def _read_arff(path: Path) -> pd.DataFrame:
    import arff  # liac-arff, a dependency of openml

    with path.open() as fh:
        obj = arff.load(fh)
    cols = [a[0] for a in obj["attributes"]]
    df = pd.DataFrame(obj["data"], columns=cols)
    for name, kind in obj["attributes"]:
        if isinstance(kind, list):
            df[name] = pd.Categorical(df[name], categories=kind)
    return df


def _infer_task(y: pd.Series) -> TaskType:
    if isinstance(y.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return "binary" if y.nunique(dropna=True) == 2 else "multiclass"
    n = y.nunique(dropna=True)
    if n == 2:
        return "binary"
    if pd.api.types.is_integer_dtype(y) and n <= 20:
        return "multiclass"
    return "regression"


# ------------------------------------------------------------------------------------------- sklearn
def load_sklearn(spec: SklearnDataset) -> RawDataset:
    from sklearn import datasets

    loader = getattr(datasets, f"load_{spec.sklearn}")
    bunch = loader(as_frame=True)
    x = bunch.data.copy()
    task_type = "regression" if spec.sklearn == "diabetes" else ("binary" if len(bunch.target_names) == 2 else "multiclass")
    y = bunch.target
    if task_type != "regression":
        y = pd.Series(np.asarray(bunch.target_names)[y.to_numpy()], name="target").astype("category")
    openml = {"breast_cancer": 1510, "wine": 187, "iris": 61, "digits": 28}.get(spec.sklearn)
    return validate(RawDataset(
        name=dataset_label(spec), source=source_of(spec), features=x.reset_index(drop=True),
        y=y.reset_index(drop=True), task_type=task_type, target="target", openml_id=openml,
        description=(bunch.DESCR or "")[:2000],
    ))


# ---------------------------------------------------------------------------------------- dispatch
def load_synthetic(spec: SyntheticDataset) -> RawDataset:
    from pipeline.data import synthetic

    x, y = synthetic.generate(spec.synthetic, spec.n_rows, spec.n_noise, spec.n_cat_noise, spec.seed)
    informative = synthetic.INFORMATIVE[spec.synthetic]
    return validate(RawDataset(
        name=dataset_label(spec), source=source_of(spec), features=x, y=y, task_type="binary", target="label",
        description=f"Synthetic ({spec.synthetic}): {synthetic.DESCRIPTION[spec.synthetic]}. Informative "
                    f"features: {', '.join(informative)}; {spec.n_noise} numeric and {spec.n_cat_noise} categorical "
                    f"noise features; {spec.n_rows} rows, seed {spec.seed}.",
    ))


def expand(datasets: list[DatasetSpec]) -> list[DatasetSpec]:
    """Replace every OpenML suite entry by its tasks (this asks OpenML, or its cache)."""
    out: list[DatasetSpec] = []
    for d in datasets:
        if isinstance(d, OpenMLSuite):
            out.extend(OpenMLTask(openml_task=t) for t in openml_suite_tasks(d.openml_suite))
        else:
            out.append(d)
    return out


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


def load(spec: DatasetSpec) -> RawDataset:
    if isinstance(spec, OpenMLTask):
        return load_openml_task(spec.openml_task, spec.name)
    if isinstance(spec, LocalFile):
        return load_file(spec)
    if isinstance(spec, SklearnDataset):
        return load_sklearn(spec)
    if isinstance(spec, SyntheticDataset):
        return load_synthetic(spec)
    raise DataError(f"expand OpenML suites before loading: {spec}")


# ------------------------------------------------------------------------------------------ checks
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
