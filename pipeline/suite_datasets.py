"""A suite file's dataset entries: an OpenML task, every task of an OpenML suite, a local file, a dataset
bundled with scikit-learn, a seeded synthetic task; which one a mapping is, and the name each is stored
under. Typed and strict, as the rest of a suite (:mod:`pipeline.spec`); loading them is
:mod:`pipeline.data.sources`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator


class Strict(BaseModel):
    """A part of a suite file: unknown keys are errors, values are not coerced, nothing changes once read."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class OpenMLTask(Strict):
    """One OpenML task; its own folds are used."""

    openml_task: int = Field(gt=0)
    name: str | None = None


class OpenMLSuite(Strict):
    """Every task of an OpenML benchmark suite, resolved through the openml client at fetch time.

    Pin the task list with ``attnbench suites pin`` for reproducible runs.
    """

    openml_suite: int | str
    name: str | None = None


class LocalFile(Strict):
    """A parquet, csv, tsv or arff file with a target column.

    ``drop`` removes columns before anything else reads the file (an id, free text): they are not
    features, and a name that is not a column is refused. ``categorical`` names columns to treat as
    categorical on top of those whose values are text or booleans, which are always categorical
    (a listed numeric column becomes categorical; an unlisted text column stays categorical: leave it
    out with ``drop``)."""

    file: str
    target: str
    name: str | None = None
    task_type: Literal["binary", "multiclass", "regression"] | None = None
    categorical: list[str] | None = None  # None: infer from the column types
    na_values: list[str] | None = Field(default=None, min_length=1, description="values that mean missing, on top of "
                                        "those read by default (a CSV's empty field, NA, N/A, NaN, null, ?, …)")
    drop: list[str] | None = Field(default=None, description="columns to remove before anything else (ids, "
                                   "free text)")
    openml_id: int | None = Field(default=None, description="the OpenML dataset the file is a copy of: where "
                                  "its rows come from when the file is not there")
    openml_task: int | None = None
    checksum: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$", description="the rows' checksum "
                                 "(attnbench's, 16 hex digits): another file or download under this entry is refused")

    @model_validator(mode="after")
    def _drop(self) -> LocalFile:
        drop = self.drop or []
        twice = sorted({c for c in drop if drop.count(c) > 1})
        if twice:
            raise ValueError(f"drop lists {twice} twice")
        if self.target in drop:
            raise ValueError(f"drop lists the target {self.target!r}; a target cannot be dropped")
        both = sorted(set(drop) & set(self.categorical or []))
        if both:
            raise ValueError(f"{both} are both in drop and in categorical; keep them in one")
        return self


class SklearnDataset(Strict):
    """A real dataset bundled with scikit-learn (no network needed)."""

    sklearn: Literal["breast_cancer", "wine", "digits", "iris", "diabetes"]
    name: str | None = None


class SyntheticDataset(Strict):
    """A seeded binary task whose informative features are known (pipeline/data/synthetic.py): an
    interaction of two numeric features, of a numeric and a categorical one, or the additive control."""

    synthetic: Literal["interaction", "num_cat_interaction", "additive"]
    n_rows: int = Field(default=2000, ge=50, le=10_000_000)
    n_noise: int = Field(default=6, ge=0, le=10_000, description="uninformative numeric features")
    n_cat_noise: int = Field(default=0, ge=0, le=10_000, description="uninformative categorical features (4 levels)")
    seed: int = Field(default=0, ge=0)
    name: str | None = None


def _dataset_kind(v: Any) -> str | None:
    if isinstance(v, BaseModel):
        return type(v).__name__
    if isinstance(v, dict):
        for key, tag in (("openml_task", "OpenMLTask"), ("openml_suite", "OpenMLSuite"),
                         ("file", "LocalFile"), ("sklearn", "SklearnDataset"), ("synthetic", "SyntheticDataset")):
            if key in v and not (key == "openml_task" and "file" in v):
                return tag
    return None


DatasetSpec = Annotated[
    Annotated[OpenMLTask, Tag("OpenMLTask")]
    | Annotated[OpenMLSuite, Tag("OpenMLSuite")]
    | Annotated[LocalFile, Tag("LocalFile")]
    | Annotated[SklearnDataset, Tag("SklearnDataset")]
    | Annotated[SyntheticDataset, Tag("SyntheticDataset")],
    Discriminator(
        _dataset_kind,
        custom_error_type="dataset_kind",
        custom_error_message="a dataset needs one of the keys openml_task, openml_suite, file (+ target), sklearn "
                             "or synthetic",
    ),
]


def dataset_label(d: DatasetSpec) -> str:
    """The dataset's key in the database: its given name, else one derived from its source."""
    if d.name:
        return d.name
    if isinstance(d, OpenMLTask):
        return f"openml-task-{d.openml_task}"
    if isinstance(d, OpenMLSuite):
        return f"openml-suite-{d.openml_suite}"
    if isinstance(d, LocalFile):
        return Path(d.file).stem
    if isinstance(d, SyntheticDataset):  # e.g. interaction-2000r-6n-s0, num_cat_interaction-2000r-6n-2c-s0
        return f"{d.synthetic}-{d.n_rows}r-{d.n_noise}n" + (f"-{d.n_cat_noise}c" if d.n_cat_noise else "") + f"-s{d.seed}"
    return d.sklearn


def synthetic_source(d: SyntheticDataset) -> str:
    """A synthetic entry's source: its kind and every parameter that decides its rows."""
    return (f"synthetic:{d.synthetic}?n_rows={d.n_rows}&n_noise={d.n_noise}&n_cat_noise={d.n_cat_noise}"
            f"&seed={d.seed}")
