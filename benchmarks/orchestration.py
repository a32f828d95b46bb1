"""What the suite engine costs beyond the model work itself, as ratios measured in one session.

1. **Overhead against a plain actor pool.** A suite of tiny XGBoost fits (at least 200) runs through
   ``attnbench run``; then the very same fits (the configurations its trials recorded, on the same fold
   arrays, through the same ``run_trial``) run on a plain ``ray.util.ActorPool`` with one actor per CPU.
   Both are timed from ``ray.init`` to the last result, both build their fold arrays, and they alternate
   (pool, engine, pool, engine) so that neither gets all the warm caches. Targets: wall-time ratio
   engine ÷ pool ≤ 1.25, and at most 30 ms of orchestration per trial.
2. **Scheduling efficiency** on a suite of at least 100 cells of real small fits (XGBoost and an MLP on
   five scikit-learn datasets): busy seconds inside the workers ÷ (wall × slots), read from the trials
   table, with the wall from the first trial's start to the last one's end (target ≥ 0.9); the same
   over the run's whole wall (Ray's start and the workers' imports included) is printed beside it.
3. **A local three-node cluster**: a ``ray start`` head with no CPUs and two worker nodes of 2 CPUs
   each (4 logical slots on however many cores the machine has: this measures scheduling, not speed).
   Trials of at least 3 cells must run at the same time on both worker nodes, with efficiency ≥ 0.8.

    python benchmarks/orchestration.py            # about 5 minutes on 2 cores
    python benchmarks/orchestration.py --quick    # smaller suites, a quick look
    python benchmarks/orchestration.py --time-limit 3600   # the engine under a time limit (run --time-limit):
                                                           # what its checks cost per trial
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table

from pipeline import plan, runner
from pipeline.data import ingest, sources
from pipeline.data.store import Store
from pipeline.engine.records import TrialRequest
from pipeline.engine.usage import usage
from pipeline.spec import parse_suite

DATASETS = ["iris", "wine", "breast_cancer", "diabetes", "digits"]


def tiny_suite(folds: int, trials: int) -> dict[str, Any]:
    return {"name": "bench-tiny", "seed": 0, "datasets": [{"sklearn": d} for d in DATASETS[:4]],
            "protocol": {"folds": folds, "sample_sizes": [50, "all"]},
            "models": [{"name": "xgboost", "trials": trials, "fixed": {"n_estimators": 20}}]}


def small_suite(folds: int) -> dict[str, Any]:
    return {"name": "bench-small", "seed": 0, "datasets": [{"sklearn": d} for d in DATASETS],
            "protocol": {"folds": folds, "sample_sizes": [100, "all"]},
            "models": [{"name": "xgboost", "trials": 2, "fixed": {"n_estimators": 200}},
                       {"name": "mlp", "trials": 2, "fixed": {"max_epochs": 20, "patience": 20, "d_block": 64}}]}


def prefetched(suite: dict[str, Any], where: Path) -> Path:
    """A database with the suite's datasets and splits already in it (not timed)."""
    path = where / f"{suite['name']}.yaml"
    path.write_text(yaml.safe_dump(suite))
    db = where / f"{suite['name']}-data.duckdb"
    subprocess.run([sys.executable, "-m", "pipeline.cli", "fetch", str(path), "--db", str(db)], check=True,
                   stdout=subprocess.DEVNULL)
    return path


TIME_LIMIT_S: float | None = None  # --time-limit: the engine runs under it (never reached), as `run --time-limit`


def engine_run(suite_file: Path, data_db: Path, db: Path, num_cpus: int) -> float:
    """``runner.run`` in this process, from ``ray.init`` to the last commit; seconds."""
    import ray

    shutil.copy(data_db, db)
    suite = parse_suite(yaml.safe_load(suite_file.read_text()))
    t0 = time.perf_counter()
    kwargs: dict[str, Any] = {"stop_at": time.monotonic() + TIME_LIMIT_S} if TIME_LIMIT_S else {}
    runner.run(suite, db, num_cpus=num_cpus, progress=lambda _: None, **kwargs)
    wall = time.perf_counter() - t0
    ray.shutdown()
    return wall


def requests(suite_file: Path, db: Path) -> list[TrialRequest]:
    """The trials the engine ran, as requests again."""
    suite = parse_suite(yaml.safe_load(suite_file.read_text()))
    store = Store(db)
    loader = runner.FoldLoader(store, suite)
    plans = {p.base.cell_id: p for p in runner.plan_cells(suite, store, loader, cells(suite, store), {}, "bench")}
    trials = store.query("SELECT cell_id, trial_id, trial_index, suggestion, config FROM trials ORDER BY started_at")
    out = []
    for t in trials.itertuples(index=False):
        p = plans[t.cell_id]
        r = p.spec.resources
        out.append(TrialRequest(
            cell_id=t.cell_id, trial_id=t.trial_id, trial_index=int(t.trial_index), suggestion=int(t.suggestion),
            attempt=1, model=p.model, config=json.loads(t.config) if isinstance(t.config, str) else t.config,
            seed=p.seed, data_key=p.data_key, cpus=r.cpus, gpus=r.gpus, workers=r.workers, backend=r.backend,
            trial_timeout_s=p.spec.trial_timeout_s, attention=True))
    return out


def cells(suite: Any, store: Store) -> list[tuple[Any, Any, str]]:
    """Every cell of the suite with its stored dataset and split key, as the runner plans them."""
    prepared = [ingest.prepare(store, spec, suite.protocol, suite.seed) for spec in sources.expand(suite.datasets)]
    stored = {p.name: ingest.commit(store, p) for p in prepared}
    return [(cell, stored[p.name], p.split_key) for cell, p in plan.expand(suite, prepared)]


def data_loader(suite_file: Path, db: Path) -> runner.FoldLoader:
    """What the pool needs to build the same fold arrays: the datasets read from the database again."""
    suite = parse_suite(yaml.safe_load(suite_file.read_text()))
    store = Store(db)
    loader = runner.FoldLoader(store, suite)
    for cell, ds, key in cells(suite, store):
        loader.key(cell, ds, key)
    return loader


class PlainWorker:
    """The reference: an actor that imports once and runs the same ``run_trial`` on fold arrays it caches."""

    def __init__(self) -> None:
        import xgboost  # noqa: F401

        import pipeline.learners.trial  # noqa: F401

        self.folds: dict[str, Any] = {}

    def run(self, req: TrialRequest, ref: list[Any]) -> str:
        import ray

        from pipeline.engine.worker import run_trial

        if req.data_key not in self.folds:
            self.folds[req.data_key] = ray.get(ref[0])
        return run_trial(req, self.folds[req.data_key]).status


def pool_run(reqs: list[TrialRequest], suite_file: Path, db: Path, num_cpus: int) -> float:
    """The same fits on ``ray.util.ActorPool``, reading the same data from the database: from reading
    the datasets to the last result; seconds."""
    import ray
    from ray.util import ActorPool

    t0 = time.perf_counter()
    loader = data_loader(suite_file, db)
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    cls: Any = ray.remote(num_cpus=1)(PlainWorker)
    pool = ActorPool([cls.remote() for _ in range(num_cpus)])
    refs = {k: ray.put(loader(k)) for k in dict.fromkeys(r.data_key for r in reqs)}
    statuses = list(pool.map_unordered(lambda a, r: a.run.remote(r, [refs[r.data_key]]), reqs))
    wall = time.perf_counter() - t0
    ray.shutdown()
    assert statuses.count("ok") == len(reqs), statuses
    return wall


def part_overhead(tmp: Path, quick: bool) -> list[list[str]]:
    suite = prefetched(tiny_suite(folds=3 if quick else 5, trials=3 if quick else 6), tmp)
    data = tmp / "bench-tiny-data.duckdb"
    walls: dict[str, list[float]] = {"pool": [], "engine": []}
    reqs: list[TrialRequest] = []
    for round_ in range(2):
        db = tmp / f"tiny-{round_}.duckdb"
        if round_ == 0:  # the pool needs the engine's trials; it goes first from the second round on
            walls["engine"].append(engine_run(suite, data, db, 2))
            reqs = requests(suite, db)
            walls["pool"].append(pool_run(reqs, suite, data, 2))
        else:
            walls["pool"].append(pool_run(reqs, suite, data, 2))
            walls["engine"].append(engine_run(suite, data, db, 2))
    engine, pool = (sum(v) / len(v) for v in (walls["engine"], walls["pool"]))
    per_trial_ms = (engine - pool) / len(reqs) * 1000
    ratio = engine / pool
    return [["trials (tiny XGBoost fits)", f"{len(reqs)}", ""],
            ["plain ActorPool wall, s", " / ".join(f"{w:.1f}" for w in walls["pool"]), "reference"],
            ["attnbench engine wall, s", " / ".join(f"{w:.1f}" for w in walls["engine"]), ""],
            ["engine ÷ pool", f"{ratio:.2f}", "PASS" if ratio <= 1.25 else "FAIL (target ≤ 1.25)"],
            ["orchestration per trial, ms", f"{per_trial_ms:.1f}",
             "PASS" if per_trial_ms <= 30 else "FAIL (target ≤ 30)"]]


def part_efficiency(tmp: Path, quick: bool) -> list[list[str]]:
    suite = prefetched(small_suite(folds=2 if quick else 10), tmp)
    db = tmp / "small.duckdb"
    wall = engine_run(suite, tmp / "bench-small-data.duckdb", db, 2)
    store = Store(db)
    u = usage(store.query("SELECT * FROM trials"))
    n_cells = len(store.query("SELECT cell_id FROM results WHERE status = 'ok'"))
    eff = u.efficiency(2)
    return [["cells / trials", f"{n_cells} / {u.trials}", ""],
            ["busy seconds in workers", f"{u.busy_s:.1f}", ""],
            ["trial span / whole run, s", f"{u.span_s:.1f} / {wall:.1f}", ""],
            ["efficiency over the trials' span", f"{eff:.3f}", "PASS" if eff >= 0.9 else "FAIL (target ≥ 0.9)"],
            ["efficiency over the whole run", f"{u.efficiency(2, wall):.3f}", "Ray start and imports included"]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def part_cluster(tmp: Path, quick: bool) -> list[list[str]]:
    ray = str(Path(sys.executable).with_name("ray"))
    suite = prefetched({**small_suite(folds=2 if quick else 4), "name": "bench-cluster"}, tmp)
    db = tmp / "cluster.duckdb"
    shutil.copy(tmp / "bench-cluster-data.duckdb", db)
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    procs = []

    def node(name: str, *args: str) -> None:
        procs.append(subprocess.Popen([ray, "start", "--block", "--node-ip-address=127.0.0.1",
                                       f"--temp-dir={tmp}/ray-{name}", *args], env=env, start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    try:
        node("head", "--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false")
        time.sleep(5)
        node("a", f"--address=127.0.0.1:{port}", "--num-cpus=2")
        node("b", f"--address=127.0.0.1:{port}", "--num-cpus=2")
        time.sleep(5)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(suite), "--db", str(db), "--no-report",
                        "--address", f"127.0.0.1:{port}"], env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
    u = usage(Store(db).query("SELECT * FROM trials"))
    eff = u.efficiency(4)
    return [["trials on nodes", f"{u.trials} on {u.nodes}", "PASS" if u.nodes == 2 else "FAIL (target: both)"],
            ["most cells at once, every node busy", f"{u.cells_at_once_on_every_node}",
             "PASS" if u.cells_at_once_on_every_node >= 3 else "FAIL (target ≥ 3)"],
            ["efficiency over the trials' span (4 slots)", f"{eff:.3f}",
             "PASS" if eff >= 0.8 else "FAIL (target ≥ 0.8)"],
            ["whole run (driver start included), s", f"{wall:.1f}", ""]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller suites")
    p.add_argument("--part", choices=["overhead", "efficiency", "cluster"], action="append",
                   help="run only these parts (default: all)")
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="run the engine under this time limit (long enough never to be reached)")
    args = p.parse_args(argv)
    global TIME_LIMIT_S
    TIME_LIMIT_S = args.time_limit
    parts = {"overhead": part_overhead, "efficiency": part_efficiency, "cluster": part_cluster}
    failed = False
    with tempfile.TemporaryDirectory(prefix="abn-bench-") as tmp:
        for name in args.part or parts:
            rows = parts[name](Path(tmp), args.quick)
            print(f"\n## {name}")
            print(table(["figure", "value", "verdict"], rows))
            failed |= any(r[2].startswith("FAIL") for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
