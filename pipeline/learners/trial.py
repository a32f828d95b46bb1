"""Fit one model with one configuration on one fold, and score it: the unit every trial runs.

Every trial of the engine scores validation and test (selection reads validation only). Knows
nothing of Ray: it runs the same in a test, a notebook or a worker.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.clock import Stopwatch
from pipeline.cost import Measure, Usage
from pipeline.data.preprocess import FoldData, Part
from pipeline.evaluation import Scores, evaluate_kept
from pipeline.learners import make_learner
from pipeline.learners.base import FitReport, OnStep
from pipeline.models.registry import ModelInfo
from pipeline.predictions import Predictions
from pipeline.records import VariantRecord

log = logging.getLogger(__name__)


@dataclass
class Context:
    threads: int = 1
    use_gpu: bool = False
    seed: int = 0
    max_seconds: float = math.inf
    clock: str = "wall"  # what max_seconds is read on (pipeline.clock)
    on_step: OnStep | None = None
    shard: tuple[int, int] = (0, 1)
    wrap: Callable[[Any], Any] | None = None


@dataclass
class TrialOutcome:
    """What one fit and its scoring produced, typed: the Learner's fit report, what the fit used, the
    one evaluation's scores, and what only some models give (FLOPs, an attention map, the compressed
    variants' records)."""

    fit: FitReport
    usage: Usage
    scores: Scores
    flops_per_row: float | None = None
    attention: dict[str, Any] | None = None
    variants: list[VariantRecord] | None = None
    predictions: Predictions | None = None  # validation and test predictions, for post-hoc ensembles

    def to_json(self) -> dict[str, Any]:
        kept, self.predictions = self.predictions, None
        try:
            out = dataclasses.asdict(self)
        finally:
            self.predictions = kept
        out["predictions"] = kept.to_json() if kept is not None else None
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TrialOutcome:
        kept = d.get("predictions")
        return cls(**{**d, "fit": FitReport(**d["fit"]), "usage": Usage(**d["usage"]), "scores": Scores(**d["scores"]),
                      "variants": VariantRecord.from_stored(d.get("variants")) or None,
                      "predictions": Predictions.from_json(kept) if kept is not None else None})


def fit_and_score(info: ModelInfo, config: dict[str, Any], data: FoldData, ctx: Context, *,
                  score_test: bool = False, attention: bool = False, compress: Sequence[str] = (),
                  keep_predictions: bool = False) -> TrialOutcome:
    """Train with the whole ``config``, then score on validation (and test when asked); with
    ``compress`` (and ``score_test``), each compressed variant too; with ``keep_predictions``, the
    outcome carries what was scored."""
    trial = Stopwatch(ctx.clock)
    extra = {"shard": ctx.shard, "wrap": ctx.wrap} if info.capabilities.distributed else {}
    learner = make_learner(info, config, threads=ctx.threads, use_gpu=ctx.use_gpu, seed=ctx.seed,
                           max_seconds=ctx.max_seconds, clock=ctx.clock, **extra)
    with Measure(gpu=ctx.use_gpu and _cuda()) as m:
        report = learner.fit(data, ctx.on_step)
    scores, predictions = evaluate_kept(learner.predict, data, test=score_test)
    out = TrialOutcome(fit=report, usage=m.usage, scores=scores, predictions=predictions if keep_predictions else None)
    if score_test:
        out.flops_per_row = learner.flops_per_row(data.test)
        if attention:
            fa = learner.feature_attention(data.test)
            if fa is not None:
                out.attention = {"features": data.feature_names, "map": fa.tolist()}
        if compress:
            out.variants = [_variant(learner, data, method, m.usage, ctx.max_seconds - trial.elapsed())
                            for method in compress]
    return out


def _variant(learner: Any, data: FoldData, method: str, trained: Usage, seconds_left: float) -> VariantRecord:
    """One compressed variant, within what is left of the trial's time limit. A variant that fails is
    recorded with its error, and one that would change nothing (pruning a model with no prunable layer)
    as not applicable; the trial it came from stands either way."""
    from pipeline.learners.compression import RETRAINS, NotApplicable, variant

    try:
        return variant(learner, data, method, trained, max_seconds=max(1.0, seconds_left))
    except NotApplicable as err:  # no variant: it would repeat the model's own figures under another name
        return VariantRecord(method=method, retrained=RETRAINS[method], error=f"not applicable: {err}")
    except Exception as err:  # recorded in the variant's row, never raised past the trial
        return VariantRecord(method=method, retrained=RETRAINS[method],
                             error="".join(traceback.format_exception(err))[-4000:])


def tiny_fold(task_type: str, n: int = 96, seed: int = 0) -> FoldData:
    """Made-up rows for a warm-up fit: three numeric and two categorical features and a target of the
    task type (two or three classes, or values)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x_num = rng.normal(size=(n, 3)).astype(np.float32)
    x_cat = rng.integers(1, 5, size=(n, 2)).astype(np.int64)
    n_classes = {"binary": 2, "multiclass": 3}.get(task_type, 0)
    y = (np.arange(n) % n_classes).astype(np.int64) if n_classes else x_num[:, 0].astype(np.float64)
    cut = [0, n // 2, 3 * n // 4, n]
    part = [Part(x_num[a:b], x_cat[a:b], y[a:b]) for a, b in itertools.pairwise(cut)]
    return FoldData(task_type=task_type, n_classes=n_classes, num_names=["n0", "n1", "n2"], cat_names=["c0", "c1"],
                    cat_cardinalities=[5, 5], train=part[0], valid=part[1], test=part[2],
                    y_std=float(y.std()) if not n_classes else 1.0)


def warm_up(info: ModelInfo, config: dict[str, Any], task_type: str, ctx: Context, compress: Sequence[str] = ()) -> None:
    """One tiny fit and scoring on made-up rows, so that what a library does once per process (imports,
    thread pools, kernels paged in on first use) is done before the first measured trial. A failure is
    logged and left to the real trials, which record their own."""
    try:
        fit_and_score(info, config, tiny_fold(task_type), ctx, score_test=True, compress=compress)
    except Exception as err:  # the trials with this configuration will record the same error
        log.warning("warm-up of %s (%s) failed: %s", info.name, task_type, f"{type(err).__name__}: {err}")


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())
