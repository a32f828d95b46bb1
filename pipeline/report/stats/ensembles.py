"""Tuned + ensembled, from the predictions the results file keeps (no retraining): per cell, Caruana's
greedy ensemble of the model's trials; per split, one of all the trials of a family's models. Chosen
on validation predictions, scored on test with :func:`pipeline.metrics.headline` (``score``'s accuracy
or R², without scikit-learn's per-call checks)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pipeline.ensemble import caruana
from pipeline.metrics import headline
from pipeline.predictions import decode, target
from pipeline.report.stats.aggregate import SPLIT

# pooled: False for a cell's own trials, True for all the trials of a family's models on a split
COLUMNS = [*SPLIT, "task_type", "model", "pooled", "score", "val_score", "members", "candidates", "selected_score"]


def _one(members: list[tuple[np.ndarray, np.ndarray]], y_valid: np.ndarray, y_test: np.ndarray,
         task_type: str) -> dict[str, Any]:
    valid, tests = [v for v, _ in members], [t for _, t in members]
    ens = caruana(valid, y_valid, task_type == "regression")
    return {"score": headline(task_type, y_test, ens.predict(tests)),
            "val_score": ens.val_score, "members": ens.members, "candidates": len(members),
            # the one trial best on validation: the ensemble's first pick
            "selected_score": headline(task_type, y_test, tests[ens.first])}


def ensembles(cells: pd.DataFrame, preds: pd.DataFrame, targets: pd.DataFrame, family: dict[str, str]) -> pd.DataFrame:
    """``cells``: the ok cells (the ``scores`` view's keys with ``cell_id``); ``preds``: their trials'
    stored predictions (cell_id, trial_id, trial_index, part, n_rows, n_cols, proba, value);
    ``targets``: their targets. A family ensemble needs every cell of the split to have the same
    validation and test targets (the same rows in the same order); a split where they differ has none."""
    if cells.empty or preds.empty:
        return pd.DataFrame(columns=COLUMNS)
    ys = {(r.cell_id, r.part): r.y for r in targets.itertuples(index=False)}
    decoded: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for cell_id, g in preds.sort_values("trial_index").groupby("cell_id", sort=False):
        parts: dict[str, dict[str, np.ndarray]] = {}
        for r in g.itertuples(index=False):
            parts.setdefault(r.trial_id, {})[r.part] = decode(r.n_rows, r.n_cols, r.proba, r.value)
        decoded[cell_id] = [(p["valid"], p["test"]) for p in parts.values() if "valid" in p and "test" in p]
    rows = []
    by_split: dict[tuple[Any, ...], list[Any]] = {}
    for c in cells.itertuples(index=False):
        members = decoded.get(c.cell_id)
        if not members or (c.cell_id, "valid") not in ys or (c.cell_id, "test") not in ys:
            continue
        y_valid, y_test = target(ys[(c.cell_id, "valid")], c.task_type), target(ys[(c.cell_id, "test")], c.task_type)
        key = tuple(getattr(c, k) for k in SPLIT)
        rows.append({**dict(zip(SPLIT, key)), "task_type": c.task_type, "model": c.model, "pooled": False,
                     **_one(members, y_valid, y_test, c.task_type)})
        by_split.setdefault((key, family.get(c.model, "unknown")), []).append((c, members, y_valid, y_test))
    for (key, fam), group in by_split.items():
        if len(group) < 2:  # one model: its own ensemble already says it
            continue
        c0, _, y_valid, y_test = group[0]
        if any(not (np.array_equal(g[2], y_valid) and np.array_equal(g[3], y_test)) for g in group[1:]):
            continue
        pooled = [m for g in group for m in g[1]]
        rows.append({**dict(zip(SPLIT, key)), "task_type": c0.task_type, "model": f"{fam} (all models)",
                     "pooled": True, **_one(pooled, y_valid, y_test, c0.task_type)})
    return pd.DataFrame(rows, columns=COLUMNS)
