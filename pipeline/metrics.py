"""Scores of predictions against the truth; one function for every model family."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def selection(task_type: str, y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """Only ``score`` and ``loss`` of :func:`score` (the same values), without scikit-learn's other
    metrics: what a training loop needs from its validation part after every epoch."""
    if task_type == "regression":
        pred = np.asarray(pred, dtype=np.float64).reshape(-1)
        if not np.isfinite(pred).all():
            return {"score": -math.inf, "loss": math.inf}
        mse = float(np.mean((pred - y) ** 2))
        return {"score": -math.sqrt(mse), "loss": mse}
    proba = np.asarray(pred, dtype=np.float64)
    if not np.isfinite(proba).all():
        return {"score": -math.inf, "loss": math.inf}
    proba = np.clip(proba, 1e-15, 1.0)
    proba = proba / proba.sum(axis=1, keepdims=True)
    rows = np.arange(len(y))
    return {"score": float(np.mean(proba.argmax(axis=1) == y)), "loss": float(-np.mean(np.log(proba[rows, y])))}


def headline(task_type: str, y: np.ndarray, pred: np.ndarray) -> float:
    """The report's headline of :func:`score` alone, the same value without scikit-learn's checks
    (milliseconds a call, most of a report's post-hoc ensembles over thousands of cells): accuracy,
    or R² (scikit-learn's convention for a constant target: 1 if predicted exactly, else 0; fewer than
    two rows: NaN)."""
    y = np.asarray(y).reshape(-1)
    if len(y) != len(pred):
        raise ValueError(f"{len(pred)} predictions for {len(y)} targets")
    if task_type == "regression":
        pred = np.asarray(pred, dtype=np.float64).reshape(-1)
        if not np.isfinite(pred).all() or len(y) < 2:
            return math.nan
        y = y.astype(np.float64)
        ss_res, ss_tot = float(np.sum((y - pred) ** 2)), float(np.sum((y - y.mean()) ** 2))
        if ss_tot == 0.0:
            return 1.0 if ss_res == 0.0 else 0.0
        return 1.0 - ss_res / ss_tot
    proba = np.asarray(pred, dtype=np.float64)
    if not np.isfinite(proba).all():
        return math.nan
    # score clips at 1e-15 and renormalises each row; a row's scale does not move its argmax
    return float(np.mean(np.clip(proba, 1e-15, 1.0).argmax(axis=1) == y))


def score(task_type: str, y: np.ndarray, pred: np.ndarray, n_classes: int) -> dict[str, float]:
    """Classification: ``pred`` is N × C probabilities. Regression: N predicted values.

    Returned keys: accuracy, balanced_accuracy, roc_auc, log_loss — or rmse, r2 — plus ``score``
    (higher is better: accuracy, or −RMSE) and ``loss`` (log-loss or MSE) for model selection.
    """
    from sklearn import metrics as skm

    if task_type == "regression":
        pred = np.asarray(pred, dtype=np.float64).reshape(-1)
        if not np.isfinite(pred).all():
            return {"rmse": math.nan, "r2": math.nan, "score": -math.inf, "loss": math.inf}
        mse = float(np.mean((pred - y) ** 2))
        rmse = math.sqrt(mse)
        return {"rmse": rmse, "r2": float(skm.r2_score(y, pred)), "score": -rmse, "loss": mse}
    proba = np.asarray(pred, dtype=np.float64)
    if not np.isfinite(proba).all():
        return {"accuracy": math.nan, "balanced_accuracy": math.nan, "roc_auc": math.nan,
                "log_loss": math.nan, "score": -math.inf, "loss": math.inf}
    proba = np.clip(proba, 1e-15, 1.0)
    proba = proba / proba.sum(axis=1, keepdims=True)
    labels = proba.argmax(axis=1)
    out: dict[str, Any] = {
        "accuracy": float(skm.accuracy_score(y, labels)),
        "balanced_accuracy": float(skm.balanced_accuracy_score(y, labels)) if len(np.unique(y)) > 1 else math.nan,
        "log_loss": float(skm.log_loss(y, proba, labels=list(range(n_classes)))),
    }
    present = np.unique(y)
    if len(present) < 2:
        out["roc_auc"] = math.nan
    elif n_classes == 2:
        out["roc_auc"] = float(skm.roc_auc_score(y, proba[:, 1]))
    else:
        # One-vs-rest over the classes present in y, probabilities renormalised over them.
        sub = proba[:, present] / proba[:, present].sum(axis=1, keepdims=True)
        remap = np.searchsorted(present, y)
        out["roc_auc"] = float(skm.roc_auc_score(remap, sub, multi_class="ovr", labels=list(range(len(present))))
                               if len(present) > 2 else skm.roc_auc_score(remap, sub[:, 1]))
    out["score"] = out["accuracy"]
    out["loss"] = out["log_loss"]
    return out
