"""Published figures the accuracy page shows beside ours, marked as other protocols.

``published.csv`` (shipped with the package) is built from ``../shared/data/openml/PUBLISHED-dev.csv``
and ``../shared/data/openml-large/PUBLISHED-large.csv`` by ``python -m pipeline.report.published
../shared/data``: the rows for the same version of the data as ours (the CSVs' ``variant`` column), of
the headline metrics (accuracy, R²), one per dataset × model: a pooled row where there is one, else
the mean over the published splits (std = the spread of the split means), with each figure's protocol
and source. A test rebuilds it from the shared files and compares.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).with_name("published.csv")
SOURCES = ("openml/PUBLISHED-dev.csv", "openml-large/PUBLISHED-large.csv")
METRICS = {"acc": "accuracy", "predictive_accuracy": "accuracy", "r2": "r2"}
COLUMNS = ["openml_id", "dataset", "model", "metric", "value", "std", "n", "aggregate", "protocol", "source"]

# A published model's name → our model that runs the same algorithm (None: no counterpart).
OURS = (("xgboost", "xgboost"), ("catboost", "catboost"), ("lightgbm", "lightgbm"), ("tunedrandomforest", "random_forest"),
        ("randomforest", "random_forest"), ("mlp (", "mlp"), ("tabm (", "tabm"), ("tabm-spade", "tabm"),
        ("ft-transformer", "ft_transformer"))


def ours_for(model: str) -> str | None:
    m = model.lower()
    for prefix, ours in OURS:
        if m.startswith(prefix):
            return ours
    return None


def build(shared: Path) -> pd.DataFrame:
    raw = pd.concat([pd.read_csv(shared / s) for s in SOURCES], ignore_index=True)
    raw = raw[~raw.variant.str.startswith("different") & raw.metric.isin(list(METRICS))
              & ~raw.model.str.contains("loose reference")]
    rows = []
    for (did, dataset, model, metric), g in raw.groupby(["openml_dataset_id", "dataset", "model", "metric"], sort=True):
        pooled = g[g.variant.str.contains("pooled")]
        if len(pooled) or len(g) == 1:
            r = (pooled if len(pooled) else g).iloc[0]
            value, std, n = float(r.value), r["std"], r.n_runs
            how = "pooled" if len(pooled) else "as published"
        else:
            value, std, n = float(g.value.mean()), float(g.value.std(ddof=1)), len(g)
            how = f"mean of {len(g)} splits"
        rows.append({"openml_id": int(did), "dataset": dataset, "model": model, "metric": METRICS[metric],
                     "value": round(value, 6), "std": None if pd.isna(std) else round(float(std), 6),
                     "n": None if pd.isna(n) else int(n), "aggregate": how, "protocol": g.protocol.iloc[0],
                     "source": g.source.iloc[0]})
    return pd.DataFrame(rows, columns=COLUMNS)


def load() -> pd.DataFrame:
    return pd.read_csv(HERE) if HERE.exists() else pd.DataFrame(columns=COLUMNS)


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")).to_csv(HERE, index=False)
    print(f"wrote {HERE}")
