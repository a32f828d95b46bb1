"""A trial's validation and test predictions, and how the results file keeps them.

Classification probabilities are stored as unsigned 16-bit integers (``round(p × 65535)``, DuckDB
``USMALLINT[]``): every probability to within 7.6e-6, half the size of float32 (DuckDB does not compress
list floats), readable in SQL as ``list_transform(proba, lambda x: x / 65535)``. A binary task keeps only the
positive class's column. Regression values are float32 (``FLOAT[]``). The targets of a cell's
validation and test rows are stored once per cell. A stored probability of 0 decodes to half a step
(7.6e-6): scores from stored predictions match the trial's own to within that rounding, except the
log-loss of rows whose true class got less than 1e-5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

SCALE = 65535
PARTS = ("valid", "test")


@dataclass
class Predictions:
    """What a fitted model predicted on the validation and test rows of its fold, with their targets."""

    valid: np.ndarray  # N × C probabilities, or N values
    test: np.ndarray | None
    y_valid: np.ndarray
    y_test: np.ndarray | None

    def to_json(self) -> dict[str, Any]:
        return {k: None if v is None else np.asarray(v).tolist() for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Predictions:
        def arr(key: str) -> Any:
            return None if d.get(key) is None else np.asarray(d[key])

        return cls(valid=arr("valid"), test=arr("test"), y_valid=arr("y_valid"), y_test=arr("y_test"))


def encode(pred: np.ndarray) -> dict[str, Any]:
    """One part's predictions as stored: ``n_rows``, ``n_cols`` and either ``proba`` (N × C
    probabilities; two columns keep the second only) or ``value`` (N values: regression)."""
    pred = np.asarray(pred)
    if pred.ndim == 1:
        v = pred.astype(np.float32)
        return {"n_rows": len(v), "n_cols": 1, "proba": None, "value": v}
    p = np.clip(np.nan_to_num(pred.astype(np.float64), nan=0.0), 0.0, 1.0)
    if p.shape[1] == 2:
        p = p[:, 1:]
    q = np.rint(p * SCALE).astype(np.uint16)
    return {"n_rows": p.shape[0], "n_cols": p.shape[1], "proba": q.reshape(-1), "value": None}


def decode(n_rows: int, n_cols: int, proba: Any, value: Any) -> np.ndarray:
    """The stored form back to what :func:`pipeline.metrics.score` takes: N × C probabilities
    (renormalised; a stored 0 is half a step), or N values."""
    if not hasattr(proba, "__len__"):  # None, or a reader's NULL (pandas.NA)
        return np.asarray(value, dtype=np.float64).reshape(-1)
    q = np.asarray(proba, dtype=np.float64).reshape(int(n_rows), int(n_cols))
    p = np.where(q == 0, 0.5, q) / SCALE
    if n_cols == 1:  # a binary task's positive class
        p = np.concatenate([1.0 - p, p], axis=1)
    return p / p.sum(axis=1, keepdims=True)


def target(y: Any, task_type: str) -> np.ndarray:
    """A stored target vector: class indices, or values."""
    y = np.asarray(y, dtype=np.float64)
    return y if task_type == "regression" else y.astype(np.int64)


def put_predictions(con: Any, trials: list[Any]) -> None:
    """Write the trials' kept predictions and their cells' targets (tables ``predictions`` and
    ``targets``) on the results file's connection ``con``, inside its transaction."""
    preds, targets = [], {}
    for t in trials:
        kept = getattr(t, "predictions", None)
        if kept is None:
            continue
        for part in PARTS:
            pred, y = getattr(kept, part), getattr(kept, f"y_{part}")
            if pred is None:
                continue
            preds.append({"cell_id": t.cell_id, "trial_id": t.trial_id, "part": part, **encode(pred)})
            targets[(t.cell_id, part)] = {"cell_id": t.cell_id, "part": part, "n_rows": len(y),
                                          "y": np.asarray(y, dtype=np.float64)}
    if not preds:
        return
    p_df = pd.DataFrame(preds)
    y_df = pd.DataFrame(list(targets.values()))
    con.register("p_df", p_df)
    con.register("y_df", y_df)
    con.execute("INSERT OR REPLACE INTO predictions SELECT cell_id, trial_id, part, n_rows, n_cols, "
                "proba::USMALLINT[], value::FLOAT[] FROM p_df")
    con.execute("INSERT OR REPLACE INTO targets SELECT cell_id, part, n_rows, y::DOUBLE[] FROM y_df")
    con.unregister("p_df")
    con.unregister("y_df")
