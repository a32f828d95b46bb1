"""A whole ``attnbench run`` against a bare Ray pool doing the same fits, as a new user meets it (issue 83 item 1).

The suite: 15 cells (5 scikit-learn datasets × 3 folds, every training row) × 8 trials of a tiny XGBoost, 120 fits.
Both sides run as whole commands in fresh processes, alternated (command, pool, command, pool, ...):

- ``attnbench run SUITE --db NEW --no-report --num-cpus 2``: everything a user waits for, from the interpreter's
  start to its exit (imports, suite parsing and planning, loading and splitting the datasets, Ray's start, the
  workers' warm-up, the dispatch, the commits, the end);
- the reference: a plain script that imports ray and xgboost, loads the same datasets, makes the same kind of
  splits (3 stratified folds, 20 % of each training part for validation), starts Ray (``ray.init`` included), and
  fits the same 120 configurations (those the command's trials recorded) on a ``ray.util.ActorPool`` of 2 actors.

It prints the ratio command ÷ pool, and the command's phases, read off the times its own progress lines appear:
interpreter, imports and parsing (to its first line); datasets and planning (to "N cells … to run"); Ray's start
(to "run <id>"); plan written and workers warmed (to the first finished cell); dispatch (to the last one); the
end (commits, shutdown, exit). The target (issue 83): ratio ≤ 1.5 on an idle 2-core machine.

    python benchmarks/run_command.py             # 3 pairs, about 2 minutes on 2 idle cores
    python benchmarks/run_command.py --pairs 1   # a quick look
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table

DATASETS = ["iris", "wine", "breast_cancer", "diabetes", "digits"]
SUITE = {"name": "bench-command", "seed": 0, "datasets": [{"sklearn": d} for d in DATASETS],
         "protocol": {"folds": 3, "sample_sizes": ["all"]},
         "models": [{"name": "xgboost", "trials": 8, "fixed": {"n_estimators": 20, "early_stopping_rounds": 5}}]}
PHASES = ["interpreter, imports, parsing", "datasets and planning", "Ray's start", "plan written, workers warmed",
          "dispatch", "the end (commits, exit)"]

POOL = textwrap.dedent('''
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np, ray, xgboost
    from ray.util import ActorPool
    from sklearn import datasets
    from sklearn.model_selection import StratifiedKFold, KFold, train_test_split

    configs = json.load(open(sys.argv[1]))
    loaders = {"iris": datasets.load_iris, "wine": datasets.load_wine, "breast_cancer": datasets.load_breast_cancer,
               "diabetes": datasets.load_diabetes, "digits": datasets.load_digits}
    folds = {}
    for name, load in loaders.items():
        X, y = load(return_X_y=True)
        split = (KFold if name == "diabetes" else StratifiedKFold)(3, shuffle=True, random_state=0)
        for k, (train, test) in enumerate(split.split(X, y)):
            tr, va = train_test_split(train, test_size=0.2, random_state=k)
            folds[(name, k)] = (X[tr], y[tr], X[va], y[va], X[test], y[test])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

    @ray.remote(num_cpus=1)
    class Fit:
        def __init__(self):
            import xgboost  # noqa
        def run(self, name, data, config):
            import xgboost as xgb
            Xtr, ytr, Xva, yva, Xte, yte = data
            model = (xgb.XGBRegressor if name == "diabetes" else xgb.XGBClassifier)(**config, verbosity=0)
            model.fit(Xtr, ytr, eval_set=[(Xva, yva)], verbose=False)
            return float(np.mean(model.predict(Xte) == yte))

    refs = {key: ray.put(v) for key, v in folds.items()}
    pool = ActorPool([Fit.remote() for _ in range(2)])
    jobs = [(name, refs[(name, k)], c) for name, k, c in configs]
    list(pool.map_unordered(lambda a, j: a.run.remote(*j), jobs))
    ray.shutdown()
    print(f"{time.perf_counter() - t0:.3f}")
''')


def command(suite: Path, db: Path) -> tuple[float, list[float]]:
    """The whole command's wall seconds, and its phases' (by the times its progress lines appear)."""
    if db.exists():
        db.unlink()
    argv = [sys.executable, "-m", "pipeline.cli", "run", str(suite), "--db", str(db), "--no-report", "--num-cpus", "2"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    marks: dict[str, float] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.perf_counter() - t0
        text = line.strip()
        marks.setdefault("first", now)
        if text.endswith("to run"):
            marks.setdefault("planned", now)
        elif text.startswith("run ") and "cells done" not in text:
            marks.setdefault("ray", now)
        elif text.startswith("[1/"):
            marks.setdefault("first_cell", now)
        elif text.startswith("["):
            marks["last_cell"] = now
    proc.wait()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"attnbench run failed ({proc.returncode})")
    points = [0.0, marks["first"], marks["planned"], marks["ray"], marks["first_cell"], marks["last_cell"], wall]
    return wall, [b - a for a, b in itertools.pairwise(points)]


def configs_of(db: Path) -> list[tuple[str, int, dict]]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT r.dataset, r.fold, t.config FROM trials t JOIN results r USING (cell_id) "
                           "ORDER BY t.started_at").fetchall()
    out = []
    for dataset, fold, config in rows:
        c = json.loads(config) if isinstance(config, str) else dict(config)
        out.append((dataset, int(fold), {k: v for k, v in c.items() if k not in ("seed",)}))
    return out


def pool(configs: Path, script: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(script), str(configs)], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        suite = where / "suite.yaml"
        suite.write_text(yaml.safe_dump(SUITE))
        script = where / "pool.py"
        script.write_text(POOL)
        db = where / "r.duckdb"
        command(suite, db)  # a first run: the configurations the pool runs, and every file cache warm
        configs = where / "configs.json"
        configs.write_text(json.dumps(configs_of(db)))
        n = len(json.loads(configs.read_text()))
        walls, pools, phases = [], [], []
        for _ in range(args.pairs):
            wall, parts = command(suite, db)
            walls.append(wall)
            phases.append(parts)
            pools.append(pool(configs, script))
    ratio = statistics.median(w / p for w, p in zip(walls, pools))
    print(f"{n} fits: attnbench run {statistics.median(walls):.1f} s, bare Ray pool {statistics.median(pools):.1f} s, "
          f"ratio {ratio:.2f} (median of {args.pairs} pairs; target <= 1.5)")
    mid = [statistics.median(p[i] for p in phases) for i in range(len(PHASES))]
    print(table(["phase of attnbench run", "seconds", "share"],
                [[name, f"{s:.2f}", f"{s / sum(mid):.0%}"] for name, s in zip(PHASES, mid)]))


if __name__ == "__main__":
    main()
