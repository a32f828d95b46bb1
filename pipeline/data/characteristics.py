"""What a dataset's rows are like, beyond what its tables say: the target's imbalance or skew, the share of
features a random forest does without (Grinsztajn et al. 2022's measure of what trees tolerate) and how
irregular the target is over the numeric features. Each needs the rows, which a shipped reference does not
carry, so a reference's chunk carries these numbers instead (``dataset_traits``), computed here where the
rows are.

The numbers are a handful of DuckDB lines and two seeded forests on at most ``FOREST_ROWS`` rows; a
meta-feature library (pymfe) would add statsmodels and igraph to the install for the same few numbers, and
its larger groups are slow at 50,000 rows.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.ingest import TARGET

log = logging.getLogger(__name__)

FROM_ROWS = ("target_imbalance", "uninformative_share", "irregularity")
FOREST_ROWS = 2000
FOREST_TREES = 50
KEPT_IMPORTANCE = 0.9
SMOOTHING = 2.0  # the Gaussian kernel's variance, in units of the median squared nearest-neighbour distance
SUBSPACE = 3  # the smoothing runs over this many numeric features, the forest's most important


def from_rows(con: Any, datasets: list[str], seed: int = 0, catalog: str | None = None) -> pd.DataFrame:
    """A row per dataset of ``datasets`` whose rows the file holds (``catalog``: the name it is attached
    under, else the connection's own), with its ``FROM_ROWS`` numbers; NaN where one cannot be computed
    (logged: one dataset's odd data does not stop the others)."""
    at = f'"{catalog}".' if catalog else ""
    meta = con.execute(f"SELECT dataset, task_type, data_table FROM {at}datasets").df().set_index("dataset")
    feats = con.execute(f"SELECT dataset, name, kind FROM {at}features").df()
    tables = set(con.execute("SELECT table_name FROM information_schema.tables WHERE table_catalog = "
                             "coalesce(?, current_database())", [catalog]).df().table_name)
    rows = []
    for name in datasets:
        if name not in meta.index or meta.loc[name, "data_table"] not in tables:
            continue
        m = meta.loc[name]
        row: dict[str, Any] = {"dataset": name, **dict.fromkeys(FROM_ROWS, np.nan)}
        try:
            row.update(_from_data(con, f'{at}"{m.data_table}"', str(m.task_type), feats[feats.dataset == name], seed))
        except Exception as err:
            log.warning("dataset %s: its characteristics from the data could not be computed: %s: %s",
                        name, type(err).__name__, err)
        rows.append(row)
    return pd.DataFrame(rows, columns=["dataset", *FROM_ROWS])


def _from_data(con: Any, table: str, task_type: str, feats: pd.DataFrame, seed: int) -> dict[str, float]:
    target = f'"{TARGET}"'
    if task_type == "regression":
        imbalance = con.execute(f"SELECT abs(skewness({target})) FROM {table}").fetchone()[0]
    else:
        imbalance = con.execute(f"SELECT max(n) / sum(n) FROM (SELECT count(*) AS n FROM {table} GROUP BY {target})"
                                ).fetchone()[0]
    sample = con.execute(f"SELECT * FROM {table} USING SAMPLE reservoir({FOREST_ROWS} ROWS) REPEATABLE ({seed})").df()
    kinds = dict(zip(feats.name, feats.kind, strict=True))
    return {"target_imbalance": float(imbalance) if imbalance is not None else np.nan,
            "uninformative_share": uninformative_share(sample, TARGET, kinds, task_type, seed),
            "irregularity": irregularity(sample, TARGET, kinds, task_type, seed)}


def uninformative_share(frame: pd.DataFrame, target: str, features: dict[str, str], task_type: str,
                        seed: int = 0) -> float:
    """The share of features outside the fewest that carry ``KEPT_IMPORTANCE`` of a seeded random forest's
    impurity importance. ``features``: name → kind (categorical: their codes; missing values a code of
    their own)."""
    cols = [c for c in features if c in frame]
    if not cols or len(frame) < 10:
        return float("nan")
    x = np.column_stack([_codes(frame[c], features[c] == "categorical") for c in cols])
    y = frame[target]
    forest = _forest(task_type, seed)
    forest.fit(x, y.to_numpy(dtype=float) if task_type == "regression" else y.astype(str))
    imp = np.sort(forest.feature_importances_)[::-1]
    if imp.sum() <= 0:
        return float("nan")
    needed = int(np.searchsorted(np.cumsum(imp) / imp.sum(), KEPT_IMPORTANCE) + 1)
    return 1.0 - min(needed, len(cols)) / len(cols)


def _forest(task_type: str, seed: int) -> Any:
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    return (RandomForestRegressor if task_type == "regression" else RandomForestClassifier)(
        n_estimators=FOREST_TREES, max_features="sqrt", min_samples_leaf=2, random_state=seed, n_jobs=1)


def irregularity(frame: pd.DataFrame, target: str, features: dict[str, str], task_type: str, seed: int = 0) -> float:
    """Grinsztajn et al. (2022)'s test of an irregular target, cheaply: the held-out score (accuracy or R²)
    of a seeded random forest trained on the target, minus that of one trained on the target smoothed by
    a Gaussian kernel over the numeric features (rank-normalised) that the first forest found most
    important (``SUBSPACE`` of them: in all of them, uninformative ones would make every neighbour
    distant), each row's own value left out of its average, the kernel's variance ``SMOOTHING`` times the
    median squared distance of a row to its nearest neighbour (the same few neighbours at any number of
    features); a class
    target is smoothed as its one-hot indicators, then the most likely class. Large: the target changes
    between neighbouring rows and smoothing destroys what the forest uses (irregular, where trees are
    said to gain); near 0: a smooth target. NaN without numeric features or with fewer than 50 rows."""
    from scipy.special import ndtri
    from sklearn.model_selection import train_test_split

    cols = [c for c in features if c in frame and features[c] != "categorical"]
    if not cols or len(frame) < 50:
        return float("nan")
    x = np.column_stack([_codes(frame[c], False) for c in cols])
    ranks = (pd.DataFrame(x).rank(method="average").to_numpy() - 0.5) / len(x)
    z = ndtri(ranks)  # each feature rank-normal
    regression = task_type == "regression"
    y = frame[target].to_numpy(dtype=float) if regression else pd.Categorical(frame[target].astype(str)).codes
    train, test = train_test_split(np.arange(len(x)), test_size=0.3, random_state=seed,
                                   stratify=None if regression or np.bincount(y).min() < 2 else y)
    raw = _forest(task_type, seed).fit(x[train], y[train])
    top = np.argsort(raw.feature_importances_)[::-1][:SUBSPACE]  # where the target varies, by the forest
    zt = z[train][:, top]
    sq = (zt ** 2).sum(axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * zt @ zt.T, 0.0)  # rows × rows, not rows² × features
    np.fill_diagonal(d2, np.inf)  # a row's own target is not part of its smoothed value
    scale = SMOOTHING * max(float(np.median(d2.min(axis=1))), 1e-12)
    w = np.exp(-(d2 - d2.min(axis=1, keepdims=True)) / (2 * scale))  # shifted: the nearest weighs 1, no underflow
    w /= w.sum(axis=1, keepdims=True)
    smooth = w @ y[train] if regression else (w @ np.eye(int(y.max()) + 1)[y[train]]).argmax(axis=1)

    smoothed = _forest(task_type, seed).fit(x[train], smooth)
    return float(raw.score(x[test], y[test]) - smoothed.score(x[test], y[test]))  # accuracy, or R²


def _codes(s: pd.Series, categorical: bool) -> np.ndarray:
    if categorical:
        return pd.Series(pd.Categorical(s.astype(str).where(s.notna(), "<missing>"))).cat.codes.to_numpy(dtype=float)
    v = np.array(pd.to_numeric(s, errors="coerce"), dtype=float)  # a copy of its own
    v[~np.isfinite(v)] = np.nan  # ±inf: as missing
    return np.where(np.isnan(v), np.nanmin(v) - 1 if np.isfinite(v).any() else 0.0, v)
