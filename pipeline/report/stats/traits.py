"""Which data favours attention: each dataset's characteristics, and how the gap between the best attention
model and the best boosting model at the largest size run goes with each (rank correlations over datasets,
Benjamini–Hochberg across the characteristics).

The characteristics the datasets and features tables give are read here; those that need the rows (target
imbalance, uninformative features, irregularity) are :mod:`pipeline.data.characteristics`', from the rows
where the file holds them, else as a reference shipped them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pipeline.data import characteristics

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


def dataset_traits(con: Any, datasets: list[str], seed: int = 0) -> pd.DataFrame:
    """One row per dataset of ``datasets`` found in the file, a column per trait. Those that need the rows
    come from the rows where the file holds them, else from the ``dataset_traits`` a reference shipped;
    NaN where neither is there."""
    meta = con.execute("SELECT dataset, n_rows, n_features FROM datasets").df().set_index("dataset")
    feats = con.execute("SELECT dataset, kind, n_missing, n_levels FROM features").df()
    rows = []
    for name in datasets:
        if name not in meta.index:
            continue
        m, f = meta.loc[name], feats[feats.dataset == name]
        cat = f[f.kind == "categorical"]
        n_rows, n_feat = int(m.n_rows), max(int(m.n_features), 1)
        rows.append({"dataset": name, "log10_rows": float(np.log10(max(n_rows, 1))), "features": n_feat,
                     "categorical_share": len(cat) / n_feat,
                     "categorical_levels": float(cat.n_levels.mean()) if len(cat) else 0.0,
                     "missing_share": float(f.n_missing.sum()) / max(n_rows * n_feat, 1)})
    out = pd.DataFrame(rows, columns=["dataset", "log10_rows", "features", "categorical_share", "categorical_levels",
                                      "missing_share"])
    computed = characteristics.from_rows(con, list(out.dataset), seed)
    has_shipped = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'dataset_traits' "
                              "AND table_catalog = current_database()").fetchall()[0][0]
    shipped = (con.execute("SELECT * FROM dataset_traits WHERE NOT list_contains(?, dataset)",
                           [list(computed.dataset)]).df() if has_shipped  # a file from before: none
               else pd.DataFrame(columns=computed.columns))
    both = pd.concat([d for d in (computed, shipped[computed.columns]) if len(d)]) if len(computed) or len(shipped) \
        else computed
    return out.merge(both, on="dataset", how="left")[["dataset", *TRAITS]]


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

