"""Suite files: YAML → typed, validated :class:`SuiteSpec`.

A suite names datasets, the evaluation protocol, and the models with their search budgets.
Unknown keys are errors, and every error names the file, the key and what is allowed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pipeline.errors import SpecError
from pipeline.suite_datasets import DatasetSpec, LocalFile, OpenMLSuite, Strict, dataset_label
from pipeline.suite_text import read_suite_file, validation_problems

if TYPE_CHECKING:
    from pipeline.models.registry import ModelInfo
    from pipeline.models.versions import CodeVersion

# ----------------------------------------------------------------------------------------- protocol
class Preprocessing(Strict):
    numeric: Literal["standard", "quantile"] = "standard"
    max_categories: int = Field(default=256, ge=2, description="rarer levels share one 'other' code")


SampleSize = int | Literal["all"]


class MoreRepeats(Strict):
    """Repeated cross-validation where one repeat cannot decide: more seeded repeats of the k-fold (the
    first repeat's splits stay as they are; each repeat is seeded on its own) for the datasets named, at
    each one's largest training size only, for every model of the suite (so that every model is compared on
    the same splits). Decided before the run, at the cap: no dataset stops at the repeat that happened to
    look decided."""

    repeats: int = Field(ge=2, description="repeats in all at the largest size, the first included")
    datasets: list[str] = Field(min_length=1, description="the datasets (their names in the suite) to repeat")
    at: Literal["largest", "grid"] = Field(
        default="largest", description="largest: each dataset's largest size ('all' where it has it); grid: its "
        "largest numbered size, so that adding 'all' to a study keeps the repeats it ran where they are")


class Protocol(Strict):
    """How data is split. Official OpenML folds are used when the task has them."""

    folds: int = Field(default=5, ge=2, description="k of the seeded stratified k-fold without official folds")
    repeats: int = Field(default=1, ge=1)
    max_folds: int | None = Field(default=None, ge=1, description="run only the first N folds of each repeat")
    max_repeats: int | None = Field(default=None, ge=1)
    validation_fraction: float = Field(default=0.2, gt=0.0, lt=0.9)
    sample_sizes: list[SampleSize] = Field(default_factory=lambda: list[SampleSize](["all"]), min_length=1)
    subset_seeds: int = Field(default=1, ge=1, description="different nested subsets per size below 'all'")
    sizes_of: dict[str, Annotated[list[SampleSize], Field(min_length=1)]] | None = Field(
        default=None, description="per dataset named, the sizes it is read at, some of sample_sizes (default: all "
        "of them): large datasets at the large sizes only, say; which cells exist, so the cells kept keep their ids")
    all_min_gain: float = Field(
        default=0.0, ge=0.0, description="'all' (the whole training part) is left out of a dataset whose training "
        "part is less than (1 + this) times the largest numbered size below it: 0.1 reads no 10,217 rows beside 10,000")
    all_max_rows: int | None = Field(
        default=None, ge=8, description="'all' is left out of a dataset whose training part holds more rows than "
        "this: its largest numbered size not above it is its largest (e.g. 98304)")
    preprocessing: Preprocessing = Preprocessing()
    more_repeats: MoreRepeats | None = Field(
        default=None, description="more repeats of the k-fold, at the largest size, for the datasets named")
    metric: Literal["accuracy", "balanced_accuracy", "roc_auc", "log_loss", "r2", "rmse"] | None = Field(
        default=None, description="the test metric verdicts and pages read: for classification datasets accuracy, "
        "balanced_accuracy, roc_auc or log_loss, for regression ones r2 or rmse (the other kind keeps its own: "
        "accuracy, R²); how results are read, not how a cell runs: no cell id changes")

    def repeats_of(self, dataset: str) -> int:
        """The repeats of the seeded k-fold a dataset is split into: ``repeats``, or ``more_repeats``'s where
        it names the dataset (its repeats past ``repeats`` run at its largest size only)."""
        more = self.more_repeats
        return max(self.repeats, more.repeats) if more and dataset in more.datasets else self.repeats

    def sizes_for(self, dataset: str) -> list[SampleSize]:
        """The sizes a dataset is read at: ``sizes_of``'s where it names it, else every one of ``sample_sizes``
        (in the protocol's order either way)."""
        named = (self.sizes_of or {}).get(dataset)
        return [s for s in self.sample_sizes if named is None or s in named]

    @model_validator(mode="after")
    def _sizes_of(self) -> Protocol:
        for name, sizes in (self.sizes_of or {}).items():
            if extra := [s for s in sizes if s not in self.sample_sizes]:
                raise ValueError(f"sizes_of.{name}: {extra} are not among sample_sizes {self.sample_sizes}")
        return self

    @field_validator("sample_sizes")
    @classmethod
    def _sizes(cls, v: list[SampleSize]) -> list[SampleSize]:
        for s in v:
            if isinstance(s, int) and s < 8:
                raise ValueError(f"sample size {s} is too small (at least 8 rows)")
        if len(set(v)) != len(v):
            raise ValueError(f"sample sizes repeat: {v}")
        return v


# ------------------------------------------------------------------------------------------- models
class Resources(Strict):
    """What one trial asks of the cluster."""

    cpus: float = Field(default=1, gt=0)
    gpus: float = Field(default=0, ge=0, description="whole or fractional GPUs; 0 runs on CPU")
    workers: int = Field(default=1, ge=1, description=">1 trains torch models with DDP on Ray Train workers")
    backend: Literal["auto", "tune", "train"] = Field(
        default="auto",
        description="auto: Ray Train (TorchTrainer) only when workers > 1; tune: train inside the "
        "Tune trial; train: always launch a TorchTrainer",
    )


OWN_MODEL_KEYS = {"builder", "learner", "kind", "defaults"}  # the keys that declare a model of one's own
# Keys added after results existed, left out of an entry's hash at these values so that its cells keep their ids.
LATER_KEYS = {"clock": "wall"}
# Keys that choose which of the protocol's cells an entry has, not how a cell runs: never in its hash.
PLAN_KEYS = {"sample_sizes", "repeats", "datasets_at", "every_repeat_on"}
# How the entry runs from a training size on: in the ids of those cells only (SuiteSpec.cell_hash), never in the
# entry's hash, so that adding it keeps the ids of the cells below that size.
SIZE_KEYS = {"from_size"}
Domain = Annotated[dict[str, Any], Field(description="{uniform|loguniform|int|logint: [lo, hi]} or {choice: [...]}")]


class FromSize(Strict):
    """How an entry's cells run from a training size on: its caps set for large data (a time limit, the
    epochs or boosting rounds of ``fixed``), where the small sizes' caps would stop a model still improving."""

    fixed: dict[str, Any] = Field(default_factory=dict, description="replaces the entry's fixed values key by key")
    trial_timeout_s: float | None = Field(default=None, gt=0)
    time_budget_s: float | None = Field(default=None, gt=0)

    def key(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), sort_keys=True)


class ModelSpec(Strict):
    name: str
    builder: str | None = Field(
        default=None, description="your own model: a torch nn.Module class by import path (package.module:Class) "
        "whose constructor takes n_num, cat_cardinalities, d_out and its hyperparameters; trained with our recipe")
    learner: str | None = Field(
        default=None, description="your own model: a Learner subclass by import path (package.module:Class), for "
        "anything that is not a torch module")
    kind: str | None = Field(
        default=None, description="your own model's kind: attention, network, boosting, trees, or a word of your "
        "own, in any case; required with 'builder' unless the class's module declares it in its INFO (with "
        "'learner': default the Learner's own kind)")
    defaults: dict[str, Any] = Field(default_factory=dict, description="your own model's default hyperparameters "
                                     "(on top of its constructor's or Learner's)")
    trials: int = Field(default=4, ge=1)
    time_budget_s: float = Field(default=600, gt=0, description="seconds the trials of one cell may spend in all (their own run time, summed); no trial starts once it is spent")
    trial_timeout_s: float = Field(default=300, gt=0, description="one trial is stopped and recorded past this")
    clock: Literal["wall", "cpu"] = Field(
        default="wall", description="what trial_timeout_s is read on: wall seconds, or cpu: CPU seconds of the "
        "trial's process (its threads together), which other work on a shared machine does not change; for CPU "
        "trials (a GPU fit's work is not the host's CPU time)")
    search: Literal["random", "tpe", "asha"] = Field(
        default="random", description="random: defaults, then seeded samples; tpe: Optuna TPE; asha: random with "
        "successive halving on epochs (torch) or boosting rounds")
    space: dict[str, Domain | int | float | str | bool | None] = Field(default_factory=dict)
    fixed: dict[str, Any] = Field(default_factory=dict)
    resources: Resources = Resources()
    label: str | None = Field(default=None, description="name in results; defaults to the model name")
    sample_sizes: list[SampleSize] | None = Field(
        default=None, description="the protocol's sample sizes this entry runs at (default: all of them); which "
        "cells exist, not how one runs: changing it keeps the ids of the cells the entry keeps")
    repeats: int | None = Field(
        default=None, ge=1, description="the first N of the protocol's repeats this entry runs (default: every "
        "one, more_repeats included); 1: its folds once. Which cells exist, not how one runs, as sample_sizes")
    datasets_at: dict[int, Annotated[list[str], Field(min_length=1)]] | None = Field(
        default=None, description="at a training size, the datasets this entry runs (default: every one that reaches "
        "it), e.g. a stated cut's; which cells exist, not how one runs, as sample_sizes")
    every_repeat_on: list[str] | None = Field(
        default=None, min_length=1, description="datasets on which this entry runs every repeat the protocol plans "
        "there (more_repeats' at the largest size) though 'repeats' holds it to fewer elsewhere, e.g. where a "
        "study's pick runs its dataset's repeats; which cells exist, not how one runs, as sample_sizes")
    from_size: dict[int, FromSize] | None = Field(
        default=None, description="from a training size on (its cells of at least that many training rows; the "
        "largest such size applies), the values its cells run with instead of the entry's: a time limit, fixed "
        "values (epoch or round caps), e.g. {24576: {trial_timeout_s: 5400, fixed: {n_estimators: 20000}}}; "
        "these cells' ids carry them, the other cells' ids are unchanged")
    compress: list[Literal["prune", "quantize", "pca"]] = Field(
        default_factory=list, description="torch models: also score compressed variants of each trial's model, "
        "each stored as a model of its own (<key>+prune: 30% of each hidden layer's neurons removed; "
        "<key>+quantize: int8 dynamic quantization, on the CPU; <key>+pca: retrained on the principal "
        "components that keep 90% of the numeric variance)")

    @property
    def key(self) -> str:
        return self.label or self.name

    def size_rule(self, n_train: int) -> tuple[int, FromSize] | None:
        """The ``from_size`` rule a cell of ``n_train`` training rows runs under (the largest size not above
        it) and that size; None where none applies."""
        applies = [s for s in (self.from_size or {}) if s <= n_train]
        return (max(applies), (self.from_size or {})[max(applies)]) if applies else None

    def at(self, n_train: int) -> ModelSpec:
        """The entry as its cells of ``n_train`` training rows run it: its ``from_size`` rule applied."""
        rule = self.size_rule(n_train)
        if rule is None:
            return self
        over = rule[1]
        update: dict[str, Any] = {"fixed": {**self.fixed, **over.fixed}}
        if over.trial_timeout_s is not None:
            update["trial_timeout_s"] = over.trial_timeout_s
        if over.time_budget_s is not None:
            update["time_budget_s"] = over.time_budget_s
        return self.model_copy(update=update)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", v):
            raise ValueError(f"model name {v!r}: use letters, digits, '_', '.' and '-'")
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str | None) -> str | None:
        from pipeline.models.kinds import normal_kind

        return None if v is None else normal_kind(v)  # a ValueError lists the accepted words

    @field_validator("builder", "learner")
    @classmethod
    def _importable(cls, v: str | None, info: ValidationInfo) -> str | None:
        from pipeline.models.import_paths import checked_class

        if v is not None:
            checked_class(str(info.field_name), v)  # ImportPathError (a ValueError) says what is wrong
        return v

    def model_info(self) -> ModelInfo:
        """The registered model this entry names, or the model it declares by import path."""
        from pipeline.models.registry import declared, get

        if self.builder is None and self.learner is None:
            return get(self.name)
        return declared(self.name, builder=self.builder, learner=self.learner, kind=self.kind,
                        defaults=self.defaults, source="suite")

    def code_paths(self) -> list[str]:
        """The import paths of this model's code from outside attnbench (a builder or Learner of one's
        own, or an installed package's model): their code goes into the entry's cells' ids."""
        if self.builder is not None or self.learner is not None:
            return [p for p in (self.builder, self.learner) if p is not None]
        from pipeline.models.registry import TORCH_LEARNER

        info = self.model_info()
        if not info.source.startswith("package"):
            return []
        return sorted({info.builder, info.learner} - {TORCH_LEARNER})

    @field_validator("space")
    @classmethod
    def _space(cls, v: dict[str, Any]) -> dict[str, Any]:
        from pipeline.models.values import check_domain

        for key, dom in v.items():
            if isinstance(dom, dict):
                check_domain(key, dom)
        return v

    @model_validator(mode="after")
    def _keys(self) -> ModelSpec:
        from pipeline.models.registry import NOT_INSTALLED, REGISTRY

        own = self.builder is not None or self.learner is not None
        if not own:
            if self.name in NOT_INSTALLED:
                raise ValueError(f"model {self.name!r} needs the {NOT_INSTALLED[self.name]} package, an optional "
                                 "extra: pip install -e '.[fm]'")
            if self.name not in REGISTRY:
                raise ValueError(f"unknown model {self.name!r}; registered models: {', '.join(sorted(REGISTRY))} "
                                 "(or declare your own with 'builder' or 'learner')")
            given = [k for k in ("kind", "defaults") if getattr(self, k)]
            if given:
                raise ValueError(f"model {self.name!r}: {' and '.join(map(repr, given))} describe a model of your own "
                                 "(with 'builder' or 'learner'); a registered model's values are changed with 'fixed'")
        elif self.name in REGISTRY:
            raise ValueError(f"model {self.name!r} is registered ({REGISTRY[self.name].source}); give your model "
                             "another name")
        info = self.model_info()
        info.check_keys(self.space, self.fixed)
        if self.fixed.get("context_rows") and not self.label:
            raise ValueError(f"model {self.name!r}: fixed.context_rows subsamples its training context, which is "
                             f"not the model's own protocol: give the entry a label of its own (e.g. "
                             f"'{self.name}-ctx{self.fixed['context_rows']}')")
        if own:
            from pipeline.models.registry import check_declared_kind

            check_declared_kind(self.builder, self.kind)
        if self.clock == "cpu" and self.resources.gpus > 0:
            raise ValueError(f"model {self.name!r}: clock 'cpu' reads a trial's limit in CPU seconds, and a GPU's "
                             "work is not the host's CPU time; use the wall clock for GPU trials")
        if self.search == "asha" and not info.capabilities.rungs:
            raise ValueError(f"model {self.name!r}: search 'asha' stops trials at rungs, and its Learner has none "
                             "(it trains in one go); use random or tpe")
        if self.compress and not info.capabilities.compress:
            raise ValueError(f"model {self.name!r}: compress applies to models whose Learner can prune, quantize "
                             "and retrain on principal components (torch networks)")
        if len(set(self.compress)) != len(self.compress):
            raise ValueError(f"compress lists a method twice: {self.compress}")
        for size, over in (self.from_size or {}).items():
            if size < 8:
                raise ValueError(f"model {self.name!r}: from_size {size} is not a training size (at least 8 rows)")
            info.check_keys(self.space, {**self.fixed, **over.fixed})
        return self


class SuiteSpec(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    description: str = ""
    seed: int = 0
    datasets: list[DatasetSpec] = Field(min_length=1)
    protocol: Protocol = Protocol()
    models: list[ModelSpec] = Field(min_length=1)
    source_path: str | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _unique(self) -> SuiteSpec:
        keys = [m.key for m in self.models]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise ValueError(f"model entries repeat: {sorted(dup)} (give each a distinct 'label')")
        labels = [dataset_label(d) for d in self.datasets]
        dup = {k for k in labels if labels.count(k) > 1}
        if dup:
            raise ValueError(f"dataset names repeat: {sorted(dup)} (give each a distinct 'name')")
        problem = self.entry_sizes_problem(given_only=True)
        if problem:
            raise ValueError(problem)
        # An OpenML suite's datasets are known once it is asked for its tasks: the run checks them then.
        if not any(isinstance(d, OpenMLSuite) for d in self.datasets) and (problem := self.names_problem(labels)):
            raise ValueError(problem)
        return self

    def names_problem(self, labels: list[str]) -> str | None:
        """The first dataset name the suite gives (``protocol.more_repeats``, an entry's ``datasets_at``) that
        is not one of ``labels``, its datasets' names, in one line; None if none."""
        more = self.protocol.more_repeats
        if more and (unknown := sorted(set(more.datasets) - set(labels))):
            return f"protocol.more_repeats.datasets: {unknown} are not datasets of the suite"
        if unknown := sorted(set(self.protocol.sizes_of or {}) - set(labels)):
            return f"protocol.sizes_of: {unknown} are not datasets of the suite"
        for m in self.models:
            if named := sorted({d for ds in (m.datasets_at or {}).values() for d in ds} - set(labels)):
                return f"model entry {m.key!r}: datasets_at names {named}, not datasets of the suite"
            if named := sorted(set(m.every_repeat_on or []) - set(labels)):
                return f"model entry {m.key!r}: every_repeat_on names {named}, not datasets of the suite"
        return None

    def entry_sizes_problem(self, given_only: bool = False) -> str | None:
        """The first model entry whose ``sample_sizes`` are not some of the protocol's, in one line; None if
        none. ``given_only``: only where the suite gives the protocol's sizes (one that leaves them out to take
        a reference's, ``run --against``, is checked once it has them)."""
        if given_only and "sample_sizes" not in self.protocol.model_fields_set:
            return None
        sizes = set(self.protocol.sample_sizes)
        for m in self.models:
            if m.sample_sizes is not None and (not m.sample_sizes or set(m.sample_sizes) - sizes):
                return (f"model entry {m.key!r}: sample_sizes {m.sample_sizes} must be some of the protocol's "
                        f"{self.protocol.sample_sizes}")
            at = set(m.datasets_at or {}) - {x for x in (m.sample_sizes or sizes) if x != "all"}
            if at:
                return f"model entry {m.key!r}: datasets_at {sorted(at)} are not sizes it runs at"
        return None

    def model(self, key: str) -> ModelSpec:
        return {m.key: m for m in self.models}[key]

    @functools.cached_property
    def model_code(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Per model entry, the digest of each of its outside code's import paths
        (:func:`pipeline.models.import_paths.code_digest`); the run records it with its provenance."""
        from pipeline.models.import_paths import code_digest

        return {m.key: {p: code_digest(p) for p in m.code_paths()} for m in self.models if m.code_paths()}

    @functools.cached_property
    def our_code(self) -> dict[str, CodeVersion]:
        """Per model entry, the versions of attnbench's own files its results depend on
        (:mod:`pipeline.models.versions`): its module and Learner, the training loop, the preprocessing,
        the scoring, and those of our modules that its outside code imports."""
        from pipeline.models.versions import code_version

        out = {}
        for m in self.models:
            info = m.model_info()
            imported = tuple(sorted({mod for d in self.model_code.get(m.key, {}).values()
                                     for mod in d.get("attnbench", [])}))
            out[m.key] = code_version(info.builder, info.learner, variants=bool(m.compress), imported=imported)
        return out

    @functools.cached_property
    def model_hashes(self) -> dict[str, str]:
        """A short hash per model entry of everything in it that decides its search (budget, space,
        fixed values, resources, compression) and of its code where it comes from outside attnbench:
        changing an entry, or editing its model's code, gives its cells new ids, so they run again and
        the old results become history. The protocol is not in it: what of the protocol a cell depends
        on goes into its id with the split (:func:`pipeline.plan.cell_id`). Computed once, from the
        suite as written: a copy the runner adapts to its cluster (GPUs asked for but absent) keeps
        these, so a cell's id does not depend on the hardware it ran on."""
        return {m.key: self._entry_hash(m, code=True) for m in self.models}

    def _entry_hash(self, m: ModelSpec, code: bool) -> str:
        # A registered model's entry leaves out the keys that declare models of one's own, so that its
        # cells keep the ids they had before those keys existed.
        entry = m.model_dump(mode="json", exclude=(OWN_MODEL_KEYS - m.model_fields_set) | PLAN_KEYS | SIZE_KEYS)
        for key, default in LATER_KEYS.items():
            if entry.get(key) == default:
                del entry[key]
        if code and m.key in self.model_code:
            entry["code"] = {p: d["digest"] for p, d in self.model_code[m.key].items()}
        if code and (ours := self.our_code[m.key].key()):  # version 1 of every file adds nothing
            entry["attnbench_code"] = ours
        return hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:12]

    def model_hash(self, key: str, code: bool = True) -> str:
        """The entry's hash (``model_hashes``); ``code=False``: without its code, as before schema 6."""
        return self.model_hashes[key] if code else self._entry_hash(self.model(key), code=False)

    def cell_hash(self, key: str, n_train: int) -> str:
        """The hash of the entry as its cells of ``n_train`` training rows run it: the entry's own where no
        ``from_size`` rule applies (so adding one keeps the other cells' ids), else the entry's with the rule."""
        rule = self.model(key).size_rule(n_train)
        if rule is None:
            return self.model_hash(key)
        blob = json.dumps([self.model_hash(key), rule[0], rule[1].key()])
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------------ loading
def parse_suite(data: Any, path: str = "<suite>") -> SuiteSpec:
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a suite must be a YAML mapping with 'name', 'datasets' and 'models'")
    try:
        spec = SuiteSpec.model_validate({**data, "source_path": path})
    except ValidationError as err:
        raise SpecError(validation_problems(path, err)) from None
    return spec


def load_suite(path: str | Path) -> SuiteSpec:
    """Read and validate a suite file; relative dataset file paths resolve against the suite's folder."""
    p = Path(path)
    spec = parse_suite(read_suite_file(p), str(p))
    datasets = []
    for d in spec.datasets:
        if isinstance(d, LocalFile) and not Path(d.file).is_absolute():
            d = d.model_copy(update={"file": str((p.parent / d.file).resolve())})
        datasets.append(d)
    return spec.model_copy(update={"datasets": datasets})


def default_suite_path() -> Path:
    """``suites/smoke.yaml`` of the checkout the package runs from, else of the working directory."""
    here = Path(__file__).resolve().parent.parent / "suites" / "smoke.yaml"
    return here if here.is_file() else Path.cwd() / "suites" / "smoke.yaml"
