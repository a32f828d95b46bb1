"""Where datasets come from: OpenML (tasks and suites: :mod:`pipeline.data.openml_source`), local files,
scikit-learn's bundled sets, and synthetic tasks with known structure (:mod:`pipeline.data.synthetic`);
:func:`load` takes any suite entry to its loader.

Everything here runs on the driver, once per dataset; workers read splits from the object store and
never contact OpenML. Each loader returns a :class:`~pipeline.data.raw.RawDataset` that
:func:`~pipeline.data.raw.validate` has checked.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.openml_source import load_openml_task, network_timeout, openml_suite_tasks
from pipeline.data.raw import RawDataset, TaskType, source_of, validate
from pipeline.errors import DataError
from pipeline.suite_datasets import (
    DatasetSpec,
    LocalFile,
    OpenMLSuite,
    OpenMLTask,
    SklearnDataset,
    SyntheticDataset,
    dataset_label,
)

# The note that records a file entry's `drop:` with the stored copy (its columns as a JSON list).
DROPPED = "columns left out by the suite entry's drop: "


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
            df = pd.read_csv(path, sep=sep, na_values=[*CSV_MISSING, *(spec.na_values or [])], keep_default_na=True)
        elif suffix == ".arff":
            df = _read_arff(path)
        else:
            raise DataError(f"{path}: unsupported file type {suffix!r}; use .parquet, .csv, .tsv or .arff")
    except DataError:
        raise
    except Exception as err:  # pyarrow, the csv parser and liac-arff raise their own types for bad files
        raise DataError(f"{path}: cannot read the file ({type(err).__name__}: {err})") from err
    return _from_frame(spec, df, source_of(spec), str(path))


# What a CSV's reader takes as missing beyond pandas' own markers (the empty field, NA, N/A, NaN, null, #N/A, …):
# '?', the ARFF and UCI files' marker, which a CSV exported from them keeps.
CSV_MISSING = ["?"]


def _from_frame(spec: LocalFile, df: pd.DataFrame, source: str, path: str) -> RawDataset:
    """A file entry's frame as a dataset: its drop, target and categorical columns applied (and its na_values
    read as missing in a parquet's or ARFF's text columns: a CSV's reader took them already)."""
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
    if spec.na_values:
        for c in df.columns:
            if df[c].dtype == object or pd.api.types.is_string_dtype(df[c].dtype):
                df[c] = df[c].mask(df[c].isin(spec.na_values))
    y = df.pop(spec.target)
    if problem := numbers_but_markers(df, set(spec.categorical or [])):
        raise DataError(f"{path}: {problem}")
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


def numbers_but_markers(df: pd.DataFrame, categorical: set[str]) -> str | None:
    """The first text column (not named categorical) whose values are numbers but for a few markers, said with
    them and the two ways forward; None if none. Read as text it would become a categorical of as many levels
    as numbers (an age of 57 levels): never silently."""
    for c in df.columns:
        col = df[c]
        if c in categorical or not (col.dtype == object or pd.api.types.is_string_dtype(col.dtype)):
            continue
        values = col.dropna().astype(str).str.strip()
        numeric = pd.to_numeric(values, errors="coerce").notna()
        others = values[~numeric].value_counts()
        if len(values) and numeric.mean() >= 0.5 and 0 < len(others) <= 3 and values[numeric].nunique() > 10:
            said = ", ".join(f"{v!r} ({n:,} row{'s' if n != 1 else ''})" for v, n in others.items())
            return (f"column {c!r} holds numbers but for {said}: add {list(others.index)} to the entry's na_values to "
                    f"read {'it' if len(others) == 1 else 'them'} as missing, or name the column in categorical to "
                    "keep its values as levels")
    return None


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
