"""The learner contract: everything the harness asks of a model, and the one voice that answers it.

A Learner class declares what its models are and can do (:class:`Capabilities`: GPU, ASHA rungs and
what a rung counts, distributed training, compression, relative cost, the libraries a worker imports
and the provenance records), and its models' whole default configuration, search space and tiny
warm-up configuration (classmethods over a registry entry). No module outside the learners and the
registry asks what kind a model is: they ask its Learner.

An instance is built from a model's registry entry and one whole configuration; :meth:`Learner.fit`
trains on a fold's train part with early stopping on its valid part and reports what the training
cost (:class:`FitReport`); :meth:`Learner.predict` gives probabilities (N × classes) or values in the
target's units for any part. Torch models share one learner (:class:`pipeline.learners.torch.TorchLearner`);
each library has its own. A Learner module imports its library inside ``fit``, never at import time.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from pipeline.clock import Stopwatch
from pipeline.data.preprocess import FoldData, Part
from pipeline.models.registry import ModelInfo
from pipeline.records import StopReason

# Asked after each epoch (torch) or boosting round with (iteration, validation score, higher is
# better); returning False stops training there, keeping the best iteration so far (ASHA's rungs).
OnStep = Callable[[int, float], bool]


@dataclass(frozen=True)
class Capabilities:
    """What a Learner's models can do, as the scheduler, the searchers and the workers need to know."""

    gpu: bool = False  # trains on a GPU when the trial is given one
    rungs: str | None = None  # what one ASHA step counts ('epochs', 'boosting rounds'); None: no rungs
    budget: str | None = None  # the configuration key that caps the iterations a fit runs (max_epochs, n_estimators)
    grace: int = 1  # ASHA's first rung, in those steps
    distributed: bool = False  # can train on several Ray Train workers (DDP)
    compress: bool = False  # pruning, quantization and PCA variants apply
    cost: float = 1.0  # relative cost of a trial per training row and feature (scheduling order only)
    libraries: tuple[str, ...] = ()  # modules a worker imports before its first trial; their versions are recorded
    in_context: bool = False  # no training loop: fit keeps the training rows as context, predict is a forward pass


@dataclass
class FitReport:
    """What one fit did: iterations are epochs (torch) or boosting rounds."""

    iterations: int  # run
    best_iteration: int  # kept (early stopping restores or keeps the best)
    stop_reason: StopReason | str  # one of StopReason's, or a word of a user Learner's own
    n_params: int  # torch: parameters; boosting: tree nodes (XGBoost) or leaf values (CatBoost)
    device: str
    curve: list[dict[str, float]] = field(default_factory=list)  # one point per iteration
    precision: str | None = None  # a torch model: what it trained in, fp32, bf16 or fp16 (pipeline.train.precision)


class Learner(abc.ABC):
    """Fit on a fold, predict any part, report the cost. ``config`` is the whole configuration
    (defaults with the trial's suggestion on top: :meth:`pipeline.learners.resolve.ResolvedModel.config`).

    A Learner is its model's one declaration, in class attributes: ``name`` (a Learner of this package
    with a name is registered under it; one named by import path in a suite takes the entry's name),
    ``kind``, ``display_name``, ``description``, ``paper``, ``protocol`` (where the model leaves the
    shared protocol), ``capabilities``, ``defaults``, ``space``, ``quick`` (a tiny fit) and, for a torch
    model, ``training`` (its recipe defaults) and ``builder`` (``module:function`` that builds its
    network; default: the Learner builds it). The registry builds :class:`ModelInfo` from them."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "other"
    display_name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    protocol: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    defaults: ClassVar[Mapping[str, Any]] = {}
    space: ClassVar[Mapping[str, Any]] = {}
    quick: ClassVar[Mapping[str, Any]] = {}
    training: ClassVar[Mapping[str, Any]] = {}
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {}  # keys that take one of these words (checked in suites)
    builder: ClassVar[str] = ""

    @classmethod
    def config_defaults(cls, info: ModelInfo) -> dict[str, Any]:
        """Every configurable key of the model with its default."""
        return dict(info.defaults)

    @classmethod
    def search_space(cls, info: ModelInfo) -> dict[str, Any]:
        """The model's default search space."""
        return dict(info.space)

    @classmethod
    def task_defaults(cls, info: ModelInfo, task_type: str) -> dict[str, Any]:
        """Defaults that differ by task (RealMLP-TD's learning rate), over :meth:`config_defaults`;
        a cell applies them once its dataset's task is known, below the suite's own values."""
        return {}

    @classmethod
    def quick_config(cls, info: ModelInfo) -> dict[str, Any]:
        """What makes a fit of the model tiny (a worker's warm-up fits each model of its run so)."""
        return dict(info.quick)

    @classmethod
    def build_problem(cls, info: ModelInfo, defaults: Mapping[str, Any], space: Mapping[str, Any],
                      fixed: Mapping[str, Any]) -> str | None:
        """Why no configuration of this search can be built (``suites check``); None when one can."""
        return None

    def __init__(self, info: ModelInfo, config: Mapping[str, Any], *, threads: int = 1, use_gpu: bool = False,
                 seed: int = 0, max_seconds: float = math.inf, clock: str = "wall", device: Any = None) -> None:
        """``max_seconds`` on ``clock`` (:mod:`pipeline.clock`: wall, or the process's CPU seconds) from the
        start of ``fit``: the learner stops there and keeps its best epoch or round (:meth:`elapsed`).
        ``device``: a torch device to train on, for the learners that take one (the torch learner); the
        others train on a GPU when ``use_gpu``, else on the CPU."""
        self.info, self.config = info, dict(config)
        self.threads, self.use_gpu, self.seed, self.max_seconds = max(1, threads), use_gpu, seed, max_seconds
        self.clock, self.device = clock, device
        self.watch = Stopwatch(clock)

    def start_clock(self) -> None:
        """Start counting toward ``max_seconds`` (a fit calls it as it starts)."""
        self.watch = Stopwatch(self.clock)

    def past_limit(self) -> bool:
        """Whether ``max_seconds`` has passed on the learner's clock since :meth:`start_clock`."""
        return self.watch.elapsed() > self.max_seconds

    @abc.abstractmethod
    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        """Train on ``data.train``, early-stopping on ``data.valid``."""

    @abc.abstractmethod
    def predict(self, part: Part) -> np.ndarray:
        """Class probabilities (N × n_classes), or predictions in the target's original units (N)."""

    def flops_per_row(self, part: Part) -> float | None:
        """Forward FLOPs per row on ``part``, where the learner can count them."""
        return None

    def feature_attention(self, part: Part, rows: int = 512) -> np.ndarray | None:
        """Mean feature-to-feature attention (F × F) on ``part``'s first ``rows`` rows, for attention models."""
        return None


def rounds_report(losses: list[float], best_round: int, max_rounds: int, pruned: bool, n_params: int,
                  device: str, timed_out: bool = False) -> FitReport:
    """A boosting fit's report from its validation losses per round and the round it kept."""
    run = len(losses) or best_round
    stop = (StopReason.PRUNED if pruned else StopReason.TIME_LIMIT if timed_out
            else StopReason.EARLY_STOPPING if run < max_rounds else StopReason.MAX_EPOCHS)
    return FitReport(iterations=run, best_iteration=best_round, stop_reason=stop, n_params=n_params, device=device,
                     curve=[{"iteration": i + 1, "val_loss": float(v)} for i, v in enumerate(losses)])


def on_all_classes(proba: np.ndarray, classes: np.ndarray, n_classes: int) -> np.ndarray:
    """A boosting library's probabilities over the classes it saw in training, put back on the
    dataset's full class list (a class absent from a small training part gets probability 0)."""
    full = np.zeros((len(proba), n_classes))
    full[:, np.asarray(classes).astype(int)] = proba
    return full
