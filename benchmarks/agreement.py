"""Do our numbers agree with published ones on the same datasets? Every reference model, default and tuned.

Runs the pipeline (``pipeline.runner.run``: real Ray, real DuckDB) on the datasets of ../shared/data that
have published figures (openml/PUBLISHED-dev.csv, openml-large/PUBLISHED-large.csv; rows whose variant
is the same version of the data as ours, and the few metrics of another version that do not depend on
what differs: ``ACROSS_VERSIONS``), then prints, for each dataset × our model × metric,
our mean ± std over folds beside each published figure, the difference, and the difference in σ.

    python benchmarks/agreement.py --quick --db /tmp/agreement.duckdb      # 3 folds, a few trials
    python benchmarks/agreement.py --db agreement.duckdb                   # 10 folds, 8-20 trials
    python benchmarks/agreement.py --quick --groups wine --models tabm     # one group, one model
    python benchmarks/agreement.py --groups magic --models tabm --folds 2 --trials 1   # TabM's defaults

Groups of datasets (each one suite, with the models that have figures there):
  * ``amlb``: blood-transfusion, car, credit-g, diabetes, kr-vs-kp, phoneme (all rows). AMLB 2019 ran
    a random forest (defaults), a tuned random forest and AutoML systems on OpenML's 10 folds; OpenML's
    Weka runs give pooled accuracy. Ours: random forest and extra trees (against the forests; extra
    trees has no published figure of its own, so the random forest's is its nearest reference), XGBoost
    and CatBoost (against the tuned forest and the best AutoML system: levels, not like for like).
  * ``wine``: wine_quality (OpenML 287, all rows). The TabR and TabM repositories' XGBoost, CatBoost,
    LightGBM (default and tuned), tuned MLP and tuned TabM, on three fixed splits of Grinsztajn's copy.
    RealMLP has no published figure on any of these datasets: the tuned MLP is its nearest reference.
  * ``medium``: Bike_Sharing_Demand and house_16H (Grinsztajn's versions = our files) at 10,000
    training rows, the TabR protocol's training size. LightGBM (default and tuned) and RealMLP (against
    the tuned MLP); TabM's only figure there is the README's TabM with shared training batches (arXiv
    v1), a different training rule from the paper's TabM we run.
  * ``large``: diamonds (all rows; log price as stored). LightGBM, default and tuned.
  * ``magic``: MagicTelescope at 10,000 training rows. The TabR and TabM repositories ran Grinsztajn's
    class-balanced subsample of it (13,376 of the 19,020 rows, the same 10 features; 9,363 training
    rows), so only ROC-AUC is compared: it does not depend on the class ratio, accuracy and log-loss
    do. XGBoost, CatBoost, LightGBM (default and tuned), the tuned MLP and TabM; RealMLP beside the MLP.
  * ``bike-tabm``: Bike_Sharing_Demand at 10,000 training rows with TabM whose members share their
    training batches (``share_training_batches: true``), the TabM of the repository's README table, the
    one published same-version TabM figure there.

Yardstick: σ is the larger of the published standard deviation (over folds for AMLB; over the split
means for the TabR/TabM rows with several splits; over 15 seeds of one split otherwise) and our own
fold-to-fold standard deviation: a one-split figure's seed std says nothing about how much a score moves
from split to split. "default" compares our first trial (the model's defaults) with a published
default; "tuned" our validation-selected trial with a published tuned figure. Protocol differences
(seeded folds instead of OpenML's, random search of tens of trials instead of 100-200 TPE trials, no
retraining with 15 seeds) are in docs/PROTOCOL.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline import runner  # noqa: E402
from pipeline.data.store import Store  # noqa: E402
from pipeline.report.published import ours_for as same_algorithm  # noqa: E402
from pipeline.spec import parse_suite  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
PUBLISHED = [SHARED / "openml" / "PUBLISHED-dev.csv", SHARED / "openml-large" / "PUBLISHED-large.csv"]

# group → (sample size, datasets: name, file under ../shared/data, target, task type, OpenML id, task; models)
GROUPS: dict[str, tuple[Any, list[tuple[str, str, str, str, int, int | None]], list[str]]] = {
    "amlb": ("all", [
        ("blood-transfusion-service-center", "openml/1464-blood-transfusion-service-center.parquet", "Class",
         "binary", 1464, 10101),
        ("car", "openml/40975-car.parquet", "class", "multiclass", 40975, 146821),
        ("credit-g", "openml/31-credit-g.parquet", "class", "binary", 31, 31),
        ("diabetes", "openml/37-diabetes.parquet", "class", "binary", 37, 37),
        ("kr-vs-kp", "openml/3-kr-vs-kp.parquet", "class", "binary", 3, 3),
        ("phoneme", "openml/1489-phoneme.parquet", "Class", "binary", 1489, 9952),
    ], ["random_forest", "extra_trees", "xgboost", "catboost"]),
    "wine": ("all", [("wine_quality", "openml/287-wine_quality.parquet", "quality", "regression", 287, None)],
             ["xgboost", "catboost", "lightgbm", "mlp", "tabm", "realmlp"]),
    "medium": (10_000, [
        ("Bike_Sharing_Demand", "openml-large/44063-Bike_Sharing_Demand.parquet", "count", "regression", 44063, None),
        ("house_16H", "openml-large/44139-house_16H.parquet", "price", "regression", 44139, None),
    ], ["lightgbm", "realmlp"]),
    "large": ("all", [("diamonds", "openml-large/44059-diamonds.parquet", "price", "regression", 44059, None)],
              ["lightgbm"]),
    "magic": (10_000, [("MagicTelescope", "openml-large/1120-MagicTelescope.parquet", "class:", "binary", 1120, None)],
              ["xgboost", "catboost", "lightgbm", "mlp", "tabm", "realmlp"]),
    "bike-tabm": (10_000, [("Bike_Sharing_Demand", "openml-large/44063-Bike_Sharing_Demand.parquet", "count",
                            "regression", 44063, None)], ["tabm_spade"]),
}

# Published figures on another version of the data that can still be compared, and why.
# (The TabR/TabM MagicTelescope is a class-balanced subsample of the same rows and features: ROC-AUC
# does not depend on the class ratio; accuracy and log-loss do, and are not compared.)
ACROSS_VERSIONS = {("MagicTelescope", "auc", "different version: grinsztajn-44125-balanced"):
                   "class-balanced version; AUC is ratio-free"}

# model → (trials quick, trials full, fixed values)
MODELS: dict[str, tuple[int, int, dict[str, Any]]] = {
    "xgboost": (4, 20, {"n_estimators": 2000, "early_stopping_rounds": 50}),
    "catboost": (3, 10, {"iterations": 2000, "early_stopping_rounds": 50}),
    "lightgbm": (4, 20, {}),  # the TabR protocol's 4,000 rounds, early stopping after 200
    "random_forest": (4, 20, {}),
    "extra_trees": (4, 20, {}),
    "mlp": (3, 10, {"max_epochs": 200, "patience": 16}),
    "tabm": (2, 8, {"max_epochs": 200}),
    "tabm_spade": (2, 8, {"max_epochs": 200, "share_training_batches": True}),
    "realmlp": (2, 8, {}),
}
REGISTERED = {"tabm_spade": "tabm"}  # an entry's label → the registered model it runs
# One TabM trial with the paper's defaults takes about an hour on one CPU core at 10,000 training rows.
LONG_TRIALS = {"tabm": 4 * 3600, "tabm_spade": 4 * 3600}

# published metric name → our results column, and whether higher is better
METRICS = {"acc": ("accuracy", True), "predictive_accuracy": ("accuracy", True), "auc": ("roc_auc", True),
           "logloss": ("log_loss", False), "rmse": ("rmse", False), "r2": ("r2", True)}


def build_suite(group: str, quick: bool, folds: int | None, models: list[str] | None,
                trials: int | None = None) -> dict[str, Any]:
    size, datasets, default_models = GROUPS[group]
    entries = []
    for name, file, target, task_type, did, tid in datasets:
        entry: dict[str, Any] = {"name": name, "file": str(SHARED / file), "target": target,
                                 "task_type": task_type, "openml_id": did}
        if tid:
            entry["openml_task"] = tid
        entries.append(entry)
    n_folds = folds or (3 if quick else 10)
    chosen = [m for m in default_models if not models or m in models]
    return {
        "name": f"agreement-{group}" + ("-quick" if quick else ""),
        "description": f"Reference models on the datasets with published figures ({group}; benchmarks/agreement.py)",
        "seed": 0,
        "datasets": entries,
        "protocol": {"folds": 10, "max_folds": n_folds if n_folds < 10 else None, "validation_fraction": 0.2,
                     "sample_sizes": [size]},
        "models": [{"name": REGISTERED.get(m, m), **({"label": m} if m in REGISTERED else {}),
                    "trials": trials or (MODELS[m][0] if quick else MODELS[m][1]), "fixed": MODELS[m][2],
                    "trial_timeout_s": LONG_TRIALS.get(m, 3600), "time_budget_s": 36_000} for m in chosen],
    }


# Ours with no published figure of their own, set beside their nearest published relative.
NEAREST = {"mlp": ["realmlp"], "random_forest": ["extra_trees"]}


def ours_for(published: str) -> tuple[list[str], str]:
    """Our models to set beside a published model (the same algorithm, by the report's own mapping,
    and its nearest relatives), and what the published one is to them."""
    p = published.lower()
    tuned = "default" if ("default" in p or p.startswith("randomforest") or "weka" in p) else "tuned"
    if p.startswith("tabm-spade"):  # TabM with shared training batches: only our run of that rule
        return ["tabm_spade"], "tuned"
    same = same_algorithm(published)
    if same not in MODELS or (same == "mlp" and not p.startswith("mlp (tuned")):
        return [], tuned
    return [same, *NEAREST.get(same, [])], "tuned" if same in ("mlp", "tabm") else tuned


def references(pub: pd.DataFrame) -> pd.DataFrame:
    """The published rows to compare with, one per dataset × model × metric."""
    def across_tag(dataset: str, metric: str, variant: str) -> str | None:
        return next((tag for (d, m, prefix), tag in ACROSS_VERSIONS.items()
                     if d == dataset and m == metric and variant.startswith(prefix)), None)

    tags = [across_tag(d, m, v) for d, m, v in zip(pub.dataset, pub.metric, pub.variant)]
    across = pd.Series([t is not None for t in tags], index=pub.index, dtype=bool)
    pub = pub.assign(across=[t or "" for t in tags])
    pub = pub[(~pub.variant.str.startswith("different") | across) & pub.metric.isin(list(METRICS))]
    rows = []
    for (dataset, model, metric), g in pub.groupby(["dataset", "model", "metric"]):
        ours, kind = ours_for(str(model))
        if g.across.iloc[0]:
            model = f"{model} [other version: {g.across.iloc[0]}]"
        amlb = "AMLB2019 1h" in str(model)
        if "repo" in str(model):  # TabR / TabM: per-split rows, else the pooled row
            splits = g[~g.variant.str.contains("pooled")]
            if len(splits) > 1:
                value, std, note = splits.value.mean(), splits.value.std(ddof=1), f"mean of {len(splits)} splits"
            elif len(splits):
                one = splits
                value, std, note = float(one.value.iloc[0]), float(one["std"].iloc[0]), "one split, std over seeds"
            else:  # only a pooled figure (the TabM README's): its std is over its splits and seeds
                one = g.head(1)
                value, std, note = float(one.value.iloc[0]), float(one["std"].iloc[0]), "pooled over splits and seeds"
            rows.append({"dataset": dataset, "metric": metric, "reference": f"{model} ({note})", "ours": ours,
                         "kind": kind, "value": value, "std": std})
        elif amlb or "weka" in str(model):
            if "constantpredictor" in str(model):
                continue
            r = g.iloc[0]
            std = float(r["std"]) if pd.notna(r["std"]) else math.nan
            if not ours:  # an AutoML system, SVM, …: a level for every model we ran there
                rows.append({"dataset": dataset, "metric": metric, "reference": f"{model} [level]", "ours": None,
                             "kind": "tuned", "value": float(r.value), "std": std})
            else:
                rows.append({"dataset": dataset, "metric": metric, "reference": str(model), "ours": ours,
                             "kind": kind, "value": float(r.value), "std": std})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    # Of the levels, keep the best AutoML system per dataset and metric.
    levels = out[out.ours.isna()]
    best = []
    for (_, metric), g in levels.groupby(["dataset", "metric"]):
        best.append(g.sort_values("value", ascending=not METRICS[metric][1]).head(1))
    return pd.concat([out[out.ours.notna()], *best], ignore_index=True)


def ours_table(db: str, suites: list[str], models: list[str] | None) -> pd.DataFrame:
    """Our results per cell: the selected (tuned) trial's test metrics, and the defaults' (the first trial).

    Reads ``results`` (the latest result per cell key), not ``current_results``: a run of some of a
    group's models plans only those, and the others' finished cells stay valid for this comparison."""
    store = Store(db)
    marks = ", ".join("?" for _ in suites)
    latest = (f"SELECT * FROM results WHERE suite IN ({marks}) AND status = 'ok' "
              "QUALIFY row_number() OVER (PARTITION BY suite, dataset, model, repeat, fold, sample_size, seed "
              "ORDER BY finished_at DESC) = 1")
    tuned = store.query(f"SELECT dataset, model, fold, n_trials, accuracy, roc_auc, log_loss, rmse, r2 FROM ({latest})",
                        suites)
    default = store.query(
        f"SELECT r.dataset, r.model, r.fold, 1 AS n_trials, t.accuracy, t.roc_auc, t.log_loss, t.rmse, t.r2 "
        f"FROM ({latest}) r "
        f"JOIN trials t USING (cell_id) WHERE t.suggestion = 0 AND t.status IN ('ok', 'stopped') "
        f"QUALIFY row_number() OVER (PARTITION BY t.cell_id ORDER BY t.trial_index) = 1", suites)
    out = pd.concat([tuned.assign(kind="tuned"), default.assign(kind="default")], ignore_index=True)
    return out[out.model.isin(models)] if models else out


def _span(values: pd.Series) -> str:
    """Trials per cell over the folds compared: "8", or "1-8" where runs of other budgets mix."""
    lo, hi = int(values.min()), int(values.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


def compare(res: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    out = []
    for _, ref in refs.iterrows():
        col = METRICS[ref.metric][0]
        here = res[(res.dataset == ref.dataset) & (res.kind == ref.kind)]
        for model, g in here.groupby("model"):
            if isinstance(ref.ours, list) and model not in ref.ours:
                continue
            vals = g[col].dropna()
            if vals.empty:
                continue
            mean, std = vals.mean(), vals.std(ddof=1) if len(vals) > 1 else math.nan
            sigma = max((s for s in (ref["std"], std) if pd.notna(s) and s > 0), default=math.nan)
            diff = mean - ref.value
            out.append({"dataset": ref.dataset, "ours": model, "kind": ref.kind, "metric": ref.metric,
                        "ours_mean": mean, "ours_std": std, "folds": len(vals),
                        "trials": _span(g.n_trials.dropna()),
                        "reference": ref.reference,
                        "published": ref.value, "pub_std": ref["std"], "diff": diff,
                        "diff_in_sigma": diff / sigma if pd.notna(sigma) else math.nan})
    return pd.DataFrame(out)


def fmt(df: pd.DataFrame) -> str:
    lines = [f"{'dataset':<20} {'ours':<14} {'':<7} {'metric':<7} {'ours mean ± std (folds)':<24} {'trials':>6} "
             f"{'published ± std':<19} {'diff':>8} {'diff/σ':>7}  reference"]
    for _, r in df.sort_values(["ours", "dataset", "kind", "metric"]).iterrows():
        ours = f"{r.ours_mean:.4f} ± {r.ours_std:.4f} ({r.folds})"
        pub = f"{r.published:.4f} ± {r.pub_std:.4f}" if pd.notna(r.pub_std) else f"{r.published:.4f}"
        z = f"{r.diff_in_sigma:+.2f}" if pd.notna(r.diff_in_sigma) else "n/a"
        lines.append(f"{r.dataset[:20]:<20} {r.ours:<14} {r.kind:<7} {r.metric[:7]:<7} {ours:<24} {r.trials:>6} {pub:<19} "
                     f"{r['diff']:+8.4f} {z:>7}  {r.reference}")
    return "\n".join(lines)


def summary(df: pd.DataFrame) -> str:
    """Per registered model of ours: on how many datasets it was compared (a labelled variant such as
    tabm_spade counts for the model it runs, named beside its dataset), and how many comparisons lie
    within 2 σ."""
    lines = ["", "per model: datasets with a published figure, comparisons within 2 σ"]
    df = df.assign(registered=df.ours.map(lambda m: REGISTERED.get(m, m)))
    for model, g in df.groupby("registered"):
        z = g.diff_in_sigma.dropna()
        named = sorted({d if o == model else f"{d} as {o}" for d, o in zip(g.dataset, g.ours)})
        n = g.dataset.nunique()
        lines.append(f"  {model:<14} {n} dataset{'s' * (n != 1)} ({', '.join(named)}); "
                     f"{int((z.abs() <= 2).sum())} of {len(z)} within 2 σ")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default="agreement.duckdb", help="results database (re-runs skip cells already done)")
    ap.add_argument("--quick", action="store_true", help="3 folds and a few trials per model")
    ap.add_argument("--folds", type=int, help="number of the 10 folds to run (default 10, --quick 3)")
    ap.add_argument("--groups", nargs="*", choices=sorted(GROUPS), help="only these groups of datasets")
    ap.add_argument("--models", nargs="*", choices=sorted(MODELS), help="only these models")
    ap.add_argument("--trials", type=int, help="trials per cell for every model (1: the defaults only, which are "
                                               "then also the 'tuned' result)")
    ap.add_argument("--num-cpus", type=int, default=None)
    ap.add_argument("--csv", help="also write the comparison table here")
    ap.add_argument("--no-run", action="store_true", help="only compare what the database already holds")
    args = ap.parse_args(argv)

    suites = []
    for group in args.groups or list(GROUPS):
        spec = build_suite(group, args.quick, args.folds, args.models, args.trials)
        if not spec["models"]:
            continue
        suite = parse_suite(spec, "<agreement>")
        suites.append(suite.name)
        if not args.no_run:
            start = time.monotonic()
            summary_ = runner.run(suite, args.db, num_cpus=args.num_cpus, progress=print)
            print(f"{suite.name}: {summary_.n_done} done, {summary_.n_failed} failed, {summary_.n_skipped} already "
                  f"done, {time.monotonic() - start:.0f} s\n")
    if not Path(args.db).exists():
        print(f"no results file at {args.db}", file=sys.stderr)
        return 1
    res = ours_table(args.db, suites, args.models)
    if res.empty:
        print("no results yet", file=sys.stderr)
        return 1
    refs = references(pd.concat([pd.read_csv(p) for p in PUBLISHED], ignore_index=True))
    table = compare(res, refs[refs.dataset.isin(res.dataset.unique())])
    print(f"protocol: seeded stratified 10-fold CV on local copies (first {res.fold.nunique()} folds run); "
          "σ = the larger of the published std and our fold std")
    print(fmt(table))
    print(summary(table))
    if args.csv:
        table.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
