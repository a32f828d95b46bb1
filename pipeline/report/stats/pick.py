"""The best model of a group (the best boosting model, the best attention model, a family's leader) is the
one a user would have picked without seeing the test set: the highest validation score. Its test score is
what the report shows. Choosing the group's best by test score would select on the test set, and hand the
group with more members a head start over the other (the maximum of three noisy test scores is biased
upwards).

Among the models with a test score, the highest validation score wins; a model with a test score but no
validation score comes after every model with one; a tie goes to the first in the group's order. Validation
means are compared to 12 decimals (``DIGITS``), as the ``standings`` view compares them: two means equal on
paper (the same validation accuracy, averaged over folds in another order) tie, whichever last bit the sum
left them.
Validation scores are comparable within a task only (accuracy, or −RMSE on the same validation rows), so
every comparison here is made within one task, or on scores normalised per task.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DIGITS = 12  # validation means are compared rounded to this many decimals (pipeline/data/views.py: standings)
SMALL_VALIDATION = 200  # a pick made on validation parts of fewer rows is said to be, beside it (issue 58 item 5)


def index_by_validation(test: np.ndarray, val: np.ndarray) -> np.ndarray:
    """Along the last axis (the group's models): the position of the model picked, as above. Where no model
    has a test score the position is 0, whose test score is NaN."""
    test, val = np.asarray(test, dtype=float), np.round(np.asarray(val, dtype=float), DIGITS)
    if test.shape[-1] == 0:
        raise ValueError("a group of no models has no best")
    lowest = np.finfo(float).min  # a validation score missing, or -inf: after every finite one, before no test
    key = np.where(np.isnan(test), -np.inf, np.where(np.isfinite(val) | (val == np.inf), val, lowest))
    return np.argmax(key, axis=-1)


def score_by_validation(test: np.ndarray, val: np.ndarray) -> np.ndarray:
    """Along the last axis: the test score of the model picked by validation (NaN where none has one)."""
    test = np.asarray(test, dtype=float)
    i = index_by_validation(test, val)
    return np.take_along_axis(test, i[..., None], axis=-1)[..., 0]


def by_validation(test: pd.DataFrame, val: pd.DataFrame, models: list[str]) -> tuple[pd.Series, pd.Series]:
    """Per row of ``test`` (models as columns; ``val`` aligned with it): the name of the model of ``models``
    picked by validation (None where none has a test score) and its test score."""
    cols = [m for m in models if m in test.columns]
    if not cols:
        empty = pd.Series(np.nan, index=test.index, dtype=float)
        return pd.Series(None, index=test.index, dtype=object), empty
    t = test[cols].to_numpy(dtype=float)
    v = val.reindex(index=test.index, columns=cols).to_numpy(dtype=float)
    i = index_by_validation(t, v)
    score = np.take_along_axis(t, i[:, None], axis=1)[:, 0]
    names = np.where(np.isnan(score), None, np.asarray(cols, dtype=object)[i])
    return pd.Series(names, index=test.index, dtype=object), pd.Series(score, index=test.index)


def small_validation(n_valid: pd.Series | list[float], where: str = "datasets") -> str:
    """Where picks were made on validation parts of fewer than :data:`SMALL_VALIDATION` rows (``n_valid``:
    the validation rows of each task a pick was made on), in words: ``picked on validation parts of fewer
    than 200 rows on 20 of 35 datasets (59–190 rows)``; '' where none was. A best model picked on a few
    dozen validation rows is a best by luck as much as by skill."""
    rows = pd.Series(n_valid, dtype=float).dropna()
    small = rows[rows < SMALL_VALIDATION]
    if small.empty:
        return ""
    span = f"{small.min():,.0f}" if round(small.min()) == round(small.max()) else f"{small.min():,.0f}–{small.max():,.0f}"
    return (f"picked on validation parts of fewer than {SMALL_VALIDATION} rows on {len(small)} of {len(rows)} "
            f"{where} ({span} rows)")
