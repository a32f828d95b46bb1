"""Post-hoc ensembles from stored predictions, with no retraining: Caruana's greedy selection.

Caruana et al. (ICML 2004), as TabArena and AutoGluon use it: start from nothing; at each of a fixed
number of iterations add, with replacement, the member whose addition makes the averaged validation
prediction best; keep the iteration that was best. "Best" is the rule that selects a cell's trial
(:func:`pipeline.evaluation.select`): the higher validation score (accuracy; regression: −RMSE), then
the lower validation loss (log-loss; MSE), then the earlier member. The first iteration therefore picks
the selected trial itself, and the ensemble is never worse than it on validation. Test predictions
are only averaged with the weights validation chose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ITERATIONS = 25  # TabArena's and AutoGluon's default ensemble size is of this order (25-40)
EPS = 1e-15  # the clip of pipeline.metrics.score's log-loss


@dataclass
class Ensemble:
    """How often each member was picked (its weight is that over the total), and what it scored on
    validation."""

    counts: np.ndarray  # one count per member
    val_score: float
    val_loss: float
    first: int  # the member of the first iteration: the one the selection rule picks alone

    @property
    def weights(self) -> np.ndarray:
        return self.counts / self.counts.sum()

    @property
    def members(self) -> int:
        return int((self.counts > 0).sum())

    def predict(self, preds: Sequence[np.ndarray]) -> np.ndarray:
        """The weighted mean of the members' predictions (probabilities or values)."""
        w = self.weights
        return sum(wi * np.asarray(p, dtype=np.float64) for wi, p in zip(w, preds) if wi > 0)


def keys(pred: np.ndarray, y: np.ndarray, regression: bool) -> tuple[np.ndarray, np.ndarray]:
    """Validation score and loss of each of M predictions at once (M × N, or M × N × C): the same
    numbers :func:`pipeline.metrics.score` gives as ``score`` and ``loss``."""
    if regression:
        mse = ((pred - y[None, :]) ** 2).mean(axis=1)
        return -np.sqrt(mse), mse
    p = np.clip(pred, EPS, 1.0)
    p = p / p.sum(axis=2, keepdims=True)
    acc = (p.argmax(axis=2) == y[None, :]).mean(axis=1)
    true = np.take_along_axis(p, y[None, :, None].repeat(len(p), axis=0), axis=2)[..., 0]
    return acc, -np.log(true).mean(axis=1)


def caruana(valid: Sequence[np.ndarray], y: np.ndarray, regression: bool, iterations: int = ITERATIONS) -> Ensemble:
    """Greedy forward selection with replacement over the members' validation predictions."""
    if not len(valid):
        raise ValueError("an ensemble needs at least one member")
    stack = np.stack([np.asarray(v, dtype=np.float64) for v in valid])
    y = np.asarray(y)
    total = np.zeros_like(stack[0])
    counts = np.zeros(len(stack), dtype=np.int64)
    best: tuple[tuple[float, float], np.ndarray] | None = None
    first = -1
    for k in range(1, iterations + 1):
        score, loss = keys((total[None] + stack) / k, y, regression)
        # The selection rule: higher score, then lower loss, then the earlier member.
        pick = int(np.lexsort((np.arange(len(stack)), loss, -score))[0])
        total += stack[pick]
        counts[pick] += 1
        first = pick if k == 1 else first
        here = (float(score[pick]), float(loss[pick]))
        if best is None or here[0] > best[0][0] or (here[0] == best[0][0] and here[1] < best[0][1]):
            best = (here, counts.copy())
    assert best is not None
    (val_score, val_loss), kept = best
    return Ensemble(counts=kept, val_score=val_score, val_loss=val_loss, first=first)
