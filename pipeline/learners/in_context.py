"""What the in-context tabular transformers (TabICL, TabPFN v2) share: no training loop, weights from a
local checkpoint, and the limits their pre-training set.

``fit`` stores the training rows as the model's context and loads the checkpoint; ``predict`` runs the
forward pass over context and query rows, with the package's own preprocessing and ensembling at their
defaults. The validation part is not used: nothing is selected or stopped on it.

Weights: a model entry's ``checkpoint`` (classification) or ``regressor_checkpoint`` (regression), else
the environment variable the learner names, else the file the package's own download would have put in
its cache. This project's machines cannot reach the weights' hosts: with no file in any of these places
``suites check`` and ``run`` refuse the suite in one line saying where they looked (nothing is written),
and a package is never left to try a download mid-trial (it would wait on the network, then fail).

Limits: the rows, features and classes a model declares it takes. A run leaves a cell beyond them out
of its plan, with a notice (the runner asks :attr:`InContextLearner.limits`), and the learner refuses one
with :class:`NotApplicable` should it be asked anyway: never run past them, never a failure.

The packages are an optional extra (``pip install -e '.[fm]'``); without them these models are not
registered (``attnbench models`` says how to add them).
"""

from __future__ import annotations

import abc
import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, Learner, OnStep, on_all_classes
from pipeline.records import StopReason

EXTRA = "fm"
INSTALL = f"pip install -e '.[{EXTRA}]'"
TASKS = {"classification": "checkpoint", "regression": "regressor_checkpoint"}  # task → config key


class NotApplicable(ValueError):
    """A cell beyond what a model declares it can take (rows, features, classes)."""


@dataclass(frozen=True)
class Limits:
    """What a model declares it takes: training rows (on a CPU, maybe fewer), features, classes."""

    max_train_rows: int | None = None
    max_features: int | None = None
    max_classes: int | None = None
    max_train_rows_cpu: int | None = None

    def problem(self, n_train: int, n_features: int, n_classes: int, gpu: bool) -> str | None:
        """Why a cell of this shape is past the limits (None: within them)."""
        rows = self.max_train_rows if gpu or self.max_train_rows_cpu is None else self.max_train_rows_cpu
        where = "" if gpu or self.max_train_rows_cpu is None else " on a CPU"
        for value, limit, what in ((n_train, rows, f"training rows{where}"), (n_features, self.max_features, "features"),
                                   (n_classes, self.max_classes, "classes")):
            if limit is not None and value > limit:
                return f"{value:,} {what}, above its declared {limit:,}"
        return None


def task_of(task_type: str) -> str:
    return "regression" if task_type == "regression" else "classification"


class InContextLearner(Learner):
    """An in-context model: a subclass names its package (``requires``), its checkpoints' environment
    variables and cache, its limits, and builds the package's estimator (:meth:`estimator`)."""

    kind = "attention"
    requires: ClassVar[tuple[str, ...]] = ()  # modules the extra installs; without them: not registered
    env: ClassVar[dict[str, str]] = {}  # task → environment variable naming a checkpoint file
    limits: ClassVar[Limits] = Limits()
    # context_rows: N subsamples the training context to N rows (seeded; stratified for classes), the
    # declared option for a cell past the row limit; an entry that sets it must carry a label of its own.
    defaults = {"checkpoint": None, "regressor_checkpoint": None, "n_estimators": 8, "context_rows": None}
    quick = {"n_estimators": 1}
    capabilities = Capabilities(gpu=True, rungs=None, budget=None, cost=1.0, in_context=True)

    @classmethod
    def installed(cls) -> bool:
        return all(importlib.util.find_spec(m) is not None for m in cls.requires)

    @classmethod
    def cached(cls, task: str) -> list[Path]:
        """Where the package's own download keeps the checkpoint for ``task`` (its cache)."""
        return []

    @classmethod
    def places(cls, config: dict[str, Any], task: str) -> list[Path]:
        """Where the weights for ``task`` are looked for, in order."""
        given = config.get(TASKS[task])
        out = [Path(str(given)).expanduser()] if given else []
        var = cls.env.get(task)
        if var and os.environ.get(var):
            out.append(Path(os.environ[var]).expanduser())
        return out + cls.cached(task)

    @classmethod
    def weights(cls, config: dict[str, Any], task: str) -> Path | None:
        return next((p for p in cls.places(config, task) if p.is_file()), None)

    @classmethod
    def weights_status(cls, config: dict[str, Any]) -> str:
        """The weights found for each task, in words (``attnbench models``)."""
        found = {t: cls.weights(config, t) for t in TASKS}
        return "; ".join(f"{t}: {p}" if p else f"{t}: no weights" for t, p in found.items())

    @classmethod
    def missing_weights(cls, config: dict[str, Any]) -> str:
        looked = [str(p) for t in TASKS for p in cls.places(config, t)]
        variables = " or ".join(cls.env.values())
        return (f"no weights: looked in {', '.join(looked) or 'no place'}; give a checkpoint file as the entry's "
                f"fixed 'checkpoint' (classification) or 'regressor_checkpoint' (regression), or set {variables}")

    @classmethod
    def build_problem(cls, info: Any, defaults: Any, space: Any, fixed: Any) -> str | None:
        """No weights for any task: the suite is refused (``suites check``, ``run``) before anything is
        written; a task without its own is the trial's error, which says where it looked."""
        if not cls.installed():
            return f"needs the {', '.join(cls.requires)} package ({INSTALL})"
        config = {**dict(defaults), **dict(fixed)}
        if all(cls.weights(config, t) is None for t in TASKS):
            return cls.missing_weights(config)
        return None

    @abc.abstractmethod
    def estimator(self, regression: bool, path: Path, data: FoldData) -> Any:
        """The package's estimator for the task, loading the checkpoint at ``path``."""

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        started = time.perf_counter()
        context = self.context(data)
        problem = self.limits.problem(len(context), context.x_num.shape[1] + context.x_cat.shape[1],
                                      data.n_classes, self.use_gpu)
        if problem:
            raise NotApplicable(f"not applicable: {self.info.name}: {problem}")
        task = task_of(data.task_type)
        path = self.weights(self.config, task)
        if path is None:
            raise FileNotFoundError(f"{self.info.name} ({task}): {self.missing_weights(self.config)}")
        self.data = data.without_parts()
        self.model = self.estimator(task == "regression", path, data)
        self.model.fit(self.features(context), context.y)
        return FitReport(iterations=1, best_iteration=1, stop_reason=StopReason.COMPLETE, n_params=self.n_params(),
                         device=self.device_name(), curve=[{"iteration": 1, "seconds": time.perf_counter() - started}])

    def context(self, data: FoldData) -> Part:
        """The training rows the model reads: all of them, or ``context_rows`` of them drawn with the
        learner's seed (each class keeping its share)."""
        n = self.config.get("context_rows")
        if not n or len(data.train) <= int(n):
            return data.train
        from sklearn.model_selection import train_test_split

        y = data.train.y
        classes = data.task_type != "regression" and np.bincount(y).min() >= 2
        keep, _ = train_test_split(np.arange(len(y)), train_size=int(n), random_state=self.seed,
                                   stratify=y if classes else None)
        return data.train.take(np.sort(keep))

    def features(self, part: Part) -> np.ndarray:
        """Numeric columns (NaN kept: the packages impute their own way) beside the categorical codes
        (0, missing, as NaN)."""
        cat = np.where(part.x_cat == 0, np.nan, part.x_cat).astype(np.float32)
        return np.concatenate([part.x_num.astype(np.float32), cat], axis=1)

    def categorical_columns(self) -> list[int]:
        n_num = len(self.data.num_names)
        return list(range(n_num, n_num + len(self.data.cat_names)))

    def device_name(self) -> str:
        return "cuda" if self.use_gpu else "cpu"

    def n_params(self) -> int:
        return 0

    def predict(self, part: Part) -> np.ndarray:
        x = self.features(part)
        if self.data.task_type == "regression":
            return np.asarray(self.model.predict(x), dtype=np.float64)
        return on_all_classes(self.model.predict_proba(x), self.model.classes_, self.data.n_classes)
