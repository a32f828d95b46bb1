"""Which data favours attention: each dataset's characteristics, and how the gap between the best attention
model and the best boosting model at the largest size run goes with each (rank correlations over datasets,
Benjamini–Hochberg across the characteristics).

The characteristics are a handful of pandas and DuckDB lines over what a run stores (the datasets and
features tables, the data itself); a meta-feature library (pymfe) would add statsmodels and igraph to the
install for the same few numbers, and its larger groups are slow at 50,000 rows. The one that fits a model
(the share of uninformative features, Grinsztajn et al. 2022's measure of what trees tolerate) fits a
seeded random forest on at most ``FOREST_ROWS`` rows.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.ingest import TARGET

log = logging.getLogger(__name__)

# trait → what it is, as the report says it
TRAITS: dict[str, str] = {
    "log10_rows": "rows (log10)",
    "features": "features",
    "categorical_share": "share of features that are categorical",
    "categorical_levels": "mean levels of a categorical feature (0: none)",
    "missing_share": "share of cells missing",
    "target_imbalance": "classification: majority class share; regression: |skewness| of the target",
    "uninformative_share": "share of features outside those a random forest needs for 90% of its importance",
    "irregularity": "what a random forest loses when the target is smoothed over the numeric features "
                    "(Grinsztajn et al. 2022's irregularity: accuracy or R², held out)",
}
# the same, short enough for a panel's title
SHORT: dict[str, str] = {"log10_rows": "rows (log10)", "features": "features", "categorical_share": "categorical share",
                         "categorical_levels": "levels per categorical", "missing_share": "missing share",
                         "target_imbalance": "class imbalance or |target skew|",
                         "uninformative_share": "uninformative share", "irregularity": "target irregularity"}
FOREST_ROWS = 2000
FOREST_TREES = 50
KEPT_IMPORTANCE = 0.9
SMOOTHING = 2.0  # the Gaussian kernel's variance, in units of the median squared nearest-neighbour distance
SUBSPACE = 3  # the smoothing runs over this many numeric features, the forest's most important


def dataset_traits(con: Any, datasets: list[str], seed: int = 0) -> pd.DataFrame:
    """One row per dataset of ``datasets`` found in the file, a column per trait (NaN where the file
    does not hold what it needs, e.g. a reference without its data)."""
    rows = []
    meta = con.execute("SELECT dataset, task_type, target, n_rows, n_features, n_categorical, data_table "
                       "FROM datasets").df().set_index("dataset")
    feats = con.execute("SELECT dataset, name, kind, n_missing, n_levels FROM features").df()
    tables = set(con.execute("SELECT table_name FROM information_schema.tables").df().table_name)
    for name in datasets:
        if name not in meta.index:
            continue
        m = meta.loc[name]
        f = feats[feats.dataset == name]
        cat = f[f.kind == "categorical"]
        n_rows, n_feat = int(m.n_rows), max(int(m.n_features), 1)
        row: dict[str, Any] = {"dataset": name, "log10_rows": float(np.log10(max(n_rows, 1))), "features": n_feat,
                               "categorical_share": len(cat) / n_feat,
                               "categorical_levels": float(cat.n_levels.mean()) if len(cat) else 0.0,
                               "missing_share": float(f.n_missing.sum()) / max(n_rows * n_feat, 1),
                               "target_imbalance": np.nan, "uninformative_share": np.nan, "irregularity": np.nan}
        if m.data_table in tables:
            try:
                row.update(_from_data(con, m, f, seed))
            except Exception as err:  # one dataset's odd data leaves its traits unknown, not the report unwritten
                log.warning("dataset %s: its characteristics from the data could not be computed: %s: %s",
                            name, type(err).__name__, err)
        rows.append(row)
    return pd.DataFrame(rows, columns=["dataset", *TRAITS])


def _from_data(con: Any, m: pd.Series, feats: pd.DataFrame, seed: int) -> dict[str, float]:
    target = f'"{TARGET}"'
    table = f'"{m.data_table}"'
    if m.task_type == "regression":
        imbalance = con.execute(f"SELECT abs(skewness({target})) FROM {table}").fetchone()[0]
    else:
        imbalance = con.execute(f"SELECT max(n) / sum(n) FROM (SELECT count(*) AS n FROM {table} GROUP BY {target})"
                                ).fetchone()[0]
    sample = con.execute(f"SELECT * FROM {table} USING SAMPLE reservoir({FOREST_ROWS} ROWS) REPEATABLE ({seed})").df()
    kinds = dict(zip(feats.name, feats.kind))
    return {"target_imbalance": float(imbalance) if imbalance is not None else np.nan,
            "uninformative_share": uninformative_share(sample, TARGET, kinds, str(m.task_type), seed),
            "irregularity": irregularity(sample, TARGET, kinds, str(m.task_type), seed)}


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


def favours(traits: pd.DataFrame, gap: pd.DataFrame) -> pd.DataFrame:
    """Spearman's ρ between each trait and the gap over datasets, its two-sided permutation p-value and the
    Benjamini–Hochberg q-value across the traits; ``n`` datasets. A dataset run under several split
    keys counts once (its gaps averaged)."""
    from scipy import stats

    per = gap.groupby("dataset").gap.mean()
    joined = traits.set_index("dataset").join(per, how="inner")
    rows = []
    for trait in TRAITS:
        pair = joined[[trait, "gap"]].dropna()
        if len(pair) >= 3 and pair[trait].nunique() > 1 and pair.gap.nunique() > 1:
            rho, p = spearman(pair[trait].to_numpy(dtype=float), pair.gap.to_numpy(dtype=float))
            rows.append({"trait": trait, "rho": rho, "p": p, "n": len(pair)})
        else:
            rows.append({"trait": trait, "rho": np.nan, "p": np.nan, "n": len(pair)})
    out = pd.DataFrame(rows, columns=["trait", "rho", "p", "n"])
    tested = out.p.notna()
    out["q"] = np.nan
    if tested.any():
        out.loc[tested, "q"] = stats.false_discovery_control(out.p[tested].to_numpy(), method="bh")
    return out


def spearman(x: np.ndarray, y: np.ndarray, n_resamples: int = 9999, seed: int = 0) -> tuple[float, float]:
    """Spearman's ρ and its two-sided p-value by permutation: exact where the orderings are few (3 datasets
    have 6; a t-approximation would give ρ = 1 on 3 points p = 0), seeded resamples otherwise."""
    from scipy import stats

    rx, ry = stats.rankdata(x), stats.rankdata(y)

    def rho(a: np.ndarray, axis: int = -1) -> np.ndarray:
        a = a - a.mean(axis=axis, keepdims=True)
        b = ry - ry.mean()
        return (a * b).sum(axis=axis) / np.sqrt((a * a).sum(axis=axis) * (b * b).sum())

    res = stats.permutation_test((rx,), rho, permutation_type="pairings", vectorized=True,
                                 n_resamples=n_resamples, alternative="two-sided", rng=np.random.default_rng(seed))
    return float(res.statistic), float(res.pvalue)

