"""Splits: test folds, a validation part carved from each training fold, nested training subsets.

- Test folds are the OpenML task's own where it has them, else seeded stratified k-fold (regression
  stratifies on quantile bins of the target).
- The validation part is a seeded stratified share of the training fold, the same for every sample
  size (as in Grinsztajn et al., where the training set alone is capped).
- Training subsets are nested: each (fold, seed) gets one stratified ordering of its training rows,
  and the subset of size n is the first n rows of it. Any prefix keeps the class proportions and
  holds every class at least once, so learning curves compare like with like.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.errors import DataError

# The version of the code in this file: it goes into every split key (``ingest.split_key``), so that a
# change to how rows are split makes new splits, and new cells, instead of leaving a results file's old
# splits and done cells standing. Raise it with any change that can move a row; tests/test_split_version.py
# holds a digest of this file's code for the version and fails until both are updated. Version 1 leaves
# the key as it was before there was a version (no results file re-runs for it).
SPLIT_VERSION = 1


def strata(y: pd.Series, task_type: str, n_bins: int = 10) -> np.ndarray:
    """Labels to stratify on: the class, or the quantile bin of a regression target."""
    if task_type == "regression":
        return pd.qcut(y.rank(method="first"), q=min(n_bins, len(y)), labels=False).to_numpy()
    return pd.factorize(y.astype(str), sort=True)[0]


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence(list(parts)).generate_state(1)[0])


def make_folds(y: pd.Series, task_type: str, n_folds: int, n_repeats: int, seed: int) -> pd.DataFrame:
    """Seeded stratified k-fold × repeats as rows (repeat, fold, row_id, role)."""
    s = strata(y, task_type)
    counts = np.bincount(s)
    smallest = counts.min()
    if smallest < n_folds:
        if task_type == "regression":
            raise DataError(f"{len(y)} rows are too few for {n_folds} folds")
        labels = pd.factorize(y.astype(str), sort=True)[1]
        rare = [str(labels[i]) for i in np.flatnonzero(counts < n_folds)][:5]
        raise DataError(f"class{'es' if len(rare) > 1 else ''} {', '.join(map(repr, rare))} of the target "
                        f"{'have' if len(rare) > 1 else 'has'} fewer rows than the {n_folds} folds asked for (the "
                        f"smallest has {smallest}); drop or merge rare classes, or lower protocol.folds")
    # Imported on use: scikit-learn costs 0.7 s at start-up, which a refused command need not pay.
    from sklearn.model_selection import RepeatedStratifiedKFold

    rskf = RepeatedStratifiedKFold(n_splits=n_folds, n_repeats=n_repeats, random_state=seed)
    rows = []
    for i, (train, test) in enumerate(rskf.split(np.zeros(len(s)), s)):
        r, f = divmod(i, n_folds)
        rows.append(pd.DataFrame({"repeat": r, "fold": f, "row_id": train, "role": "train"}))
        rows.append(pd.DataFrame({"repeat": r, "fold": f, "row_id": test, "role": "test"}))
    return pd.concat(rows, ignore_index=True)


def carve_validation(folds: pd.DataFrame, y: pd.Series, task_type: str, fraction: float, seed: int) -> pd.DataFrame:
    """Turn a stratified ``fraction`` of each training fold into role 'valid'."""
    from sklearn.model_selection import train_test_split

    s = strata(y, task_type)
    out = []
    for (r, f), part in folds.groupby(["repeat", "fold"], sort=True):
        part = part.copy()
        train_ids = part.loc[part.role == "train", "row_id"].to_numpy()
        st = s[train_ids]
        stratify = st if np.bincount(st).min() >= 2 else None
        _, valid_ids = train_test_split(train_ids, test_size=fraction, stratify=stratify,
                                        random_state=_seed(seed, int(r), int(f)) % 2**31)
        part.loc[part.row_id.isin(valid_ids), "role"] = "valid"
        out.append(part)
    return pd.concat(out, ignore_index=True)


def nested_order(train_ids: np.ndarray, s: np.ndarray, seed: int) -> np.ndarray:
    """A stratified ordering of ``train_ids``: every prefix keeps the strata proportions.

    Each stratum's rows are shuffled and spread evenly over [0, 1); one row of every stratum comes
    first so that even the smallest subsets see every class.
    """
    rng = np.random.default_rng(seed)
    st = s[train_ids]
    key = np.empty(len(train_ids))
    for c in np.unique(st):
        idx = np.flatnonzero(st == c)
        idx = idx[rng.permutation(len(idx))]
        key[idx] = (np.arange(len(idx)) + rng.uniform(0.25, 0.75, len(idx))) / len(idx)
        key[idx[0]] = -1.0 + rng.uniform(0, 0.5)
    return train_ids[np.argsort(key, kind="stable")]


def train_orders(splits: pd.DataFrame, y: pd.Series, task_type: str, n_seeds: int, seed: int) -> pd.DataFrame:
    """Rows (repeat, fold, seed, row_id, rank): the nested subset of size n is rank < n."""
    s = strata(y, task_type)
    out = []
    for (r, f), part in splits[splits.role == "train"].groupby(["repeat", "fold"], sort=True):
        ids = np.sort(part.row_id.to_numpy())
        for k in range(n_seeds):
            order = nested_order(ids, s, _seed(seed, int(r), int(f), k))
            out.append(pd.DataFrame({"repeat": r, "fold": f, "seed": k, "row_id": order, "rank": np.arange(len(order))}))
    return pd.concat(out, ignore_index=True)
