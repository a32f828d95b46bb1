"""The floor every model must clear: a constant predictor's test scores on each split.

A classifier that predicts the training part's class shares for every row (so its label is the
majority class) and a regressor that predicts the training mean, scored on the split's test fold by
the same :func:`pipeline.metrics.score` as every model. A model that scores no better learned nothing
there; the report flags it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.preprocess import encode_target
from pipeline.metrics import score
from pipeline.records import TEST_METRICS

# (repeat, fold, sample size label, training rows, subset seed)
Split = tuple[int, int, str, int, int]


def constant_predictions(task_type: str, y_train: np.ndarray, n_rows: int, n_classes: int) -> np.ndarray:
    """What the constant predictor says for ``n_rows`` rows: the training class shares (N × C), or the
    training mean (N)."""
    if task_type == "regression":
        return np.full(n_rows, float(np.mean(y_train)))
    shares = np.bincount(y_train, minlength=n_classes) / max(len(y_train), 1)
    return np.tile(shares, (n_rows, 1))


def constant_scores(task_type: str, y: pd.Series, classes: list[str] | None, parts: pd.DataFrame,
                    orders: pd.DataFrame, splits: Iterable[Split]) -> list[dict[str, Any]]:
    """The constant predictor's test metrics on each split: its training rows are the first
    ``n_train`` of the split's (repeat, fold, seed) order (``orders`` lists each order's rows by rank),
    its test rows the fold's test part."""
    target = encode_target(y, task_type, classes)
    n_classes = len(classes) if classes else 0
    tests = {k: g.row_id.to_numpy() for k, g in parts[parts.role == "test"].groupby(["repeat", "fold"])}
    trains = {k: g.row_id.to_numpy() for k, g in orders.groupby(["repeat", "fold", "seed"], sort=False)}  # rank order
    out = []
    for repeat, fold, size, n_train, seed in splits:
        train = trains[(repeat, fold, seed)][:n_train]
        test = tests[(repeat, fold)]
        pred = constant_predictions(task_type, target[train], len(test), n_classes)
        metrics = score(task_type, target[test], pred, n_classes)
        row = {"repeat": repeat, "fold": fold, "sample_size": size, "seed": seed, "task_type": task_type,
               "n_train": n_train, "predictor": "training mean" if task_type == "regression" else "majority class",
               "score": metrics["r2"] if task_type == "regression" else metrics["accuracy"]}
        for key in TEST_METRICS:
            row[key] = metrics.get(key)
        out.append(row)
    return out
