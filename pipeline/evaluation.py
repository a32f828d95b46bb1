"""The one evaluation every model gets, and the one rule that selects a cell's trial.

:func:`evaluate` scores a fitted model's predictions on a fold's validation part (and its test part)
with :mod:`pipeline.metrics`, whatever the model: a trial, a compressed variant and the scikit-learn
estimators all go through it. :func:`select` is the selection rule: validation only, never test.
Both are pure functions: no Ray, no torch, no store.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.data.preprocess import FoldData, Part
from pipeline.metrics import score
from pipeline.predictions import Predictions
from pipeline.records import Metrics, TrialRecord


@dataclass
class _Validation:
    val_score: float  # higher is better: accuracy, or −RMSE
    val_loss: float  # log-loss or MSE


@dataclass
class Scores(Metrics, _Validation):
    """A fitted model's scores: validation (what selection reads), then the test metrics (:class:`Metrics`)
    with the prediction time."""

    predict_seconds: float | None = None
    predict_rows_per_s: float | None = None

    def as_dict(self) -> dict[str, float]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def evaluate(predict: Callable[[Part], Any], data: FoldData, *, test: bool = True) -> Scores:
    """Validation score and loss; with ``test``, the test metrics and the prediction time (one pass)."""
    return evaluate_kept(predict, data, test=test)[0]


def evaluate_kept(predict: Callable[[Part], Any], data: FoldData, *, test: bool = True) -> tuple[Scores, Predictions]:
    """:func:`evaluate`, and the predictions it scored (kept for post-hoc ensembles)."""
    valid = predict(data.valid)
    val = score(data.task_type, data.valid.y, valid, data.n_classes)
    out = Scores(val_score=val["score"], val_loss=val["loss"])
    kept = Predictions(valid=np.asarray(valid), test=None, y_valid=data.valid.y, y_test=None)
    if test:
        t0 = time.perf_counter()
        pred = predict(data.test)
        seconds = time.perf_counter() - t0
        metrics = score(data.task_type, data.test.y, pred, data.n_classes)
        metrics.pop("score"), metrics.pop("loss")
        out = dataclasses.replace(out, **metrics, predict_seconds=seconds,
                                  predict_rows_per_s=len(data.test) / max(seconds, 1e-9))
        kept.test, kept.y_test = np.asarray(pred), data.test.y
    return out, kept


def select(trials: Sequence[TrialRecord]) -> TrialRecord | None:
    """The trial a cell keeps: the best validation score; on a tie the lower validation loss, then the
    earlier trial. Test scores play no part. None when no trial has a validation score."""
    scored = [t for t in trials if t.val_score is not None]
    if not scored:
        return None
    return max(scored, key=lambda t: (t.val_score, -(t.val_loss if t.val_loss is not None else math.inf),
                                      -t.trial_index))
