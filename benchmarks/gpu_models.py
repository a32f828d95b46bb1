"""Every torch model of the registry trained on a CUDA GPU through the trial unit (``fit_and_score``, as
a worker runs it), on one fold of a real dataset, with study-every-dataset's recipe (early stopping,
patience 20, up to 300 epochs, batch 512; FT-Transformer at d_token 64, lr 1e-3). Per model and training
size: the precision the loop chose, epochs, seconds, validation and test score, and the peak of torch's
CUDA allocator as a trial records it. At ``--cpu-rows`` each model also trains on one CPU core (processes
of their own, side by side), for the GPU/CPU time ratio and the score difference (the first model's GPU
time there is its first fit in the process, which pays for kernels' first use). At each size the first
model is fitted again after all the others (at the first size its first fit was the process's first
GPU work): a fit's GPU peak must not depend on what ran before it in the process.

    python benchmarks/gpu_models.py --data electricity.parquet --target class --rows 1024 10000
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import multiprocessing as mp
import os
import time
from typing import Any

import pandas as pd

from pipeline.data.preprocess import FoldData, build_fold
from pipeline.data.splits import carve_validation, make_folds, nested_order, strata
from pipeline.learners.trial import Context, fit_and_score
from pipeline.models.registry import REGISTRY, TORCH_LEARNER

STUDY = {"max_epochs": 300, "patience": 20, "batch_size": 512}
PEAK_TOLERANCE_MB = 1.0  # the same trial's GPU peak, first in the process and after the others
OWN = {"ft_transformer": {"d_token": 64, "lr": 1e-3}}


def torch_models() -> list[str]:
    """The registry's models trained by the shared torch loop, and TabM (torch, a Learner of its own)."""
    return [n for n, i in REGISTRY.items() if i.learner == TORCH_LEARNER] + ["tabm"]


def config(name: str) -> dict[str, Any]:
    info = REGISTRY[name]
    keys = info.learner_class().config_defaults(info)
    fixed = {k: v for k, v in {**STUDY, **OWN.get(name, {})}.items() if k in keys}
    return {**keys, **fixed}


def load_fold(path: str, target: str, task: str, rows: int, seed: int = 0) -> FoldData:
    """Fold 0 of 3 (seeded, stratified), a fifth of its training rows for validation, and the first
    ``rows`` of a nested stratified order of the rest: how the study draws a cell's rows."""
    frame = pd.read_parquet(path)
    y = frame[target]
    if task != "regression":
        y = y.astype(str)
    folds = carve_validation(make_folds(y, task, 3, 1, seed), y, task, 0.2, seed)
    part = folds[(folds["repeat"] == 0) & (folds["fold"] == 0)]
    ids = {role: part.loc[part.role == role, "row_id"].to_numpy() for role in ("train", "valid", "test")}
    train = nested_order(ids["train"], strata(y, task), seed)[:rows]
    classes = sorted(y.unique()) if task != "regression" else None
    return build_fold(frame.drop(columns=[target]), y, task, classes, train, ids["valid"], ids["test"])


def fit(name: str, data: FoldData, gpu: bool, limit: float = math.inf) -> dict[str, Any]:
    """One trial; ``limit`` seconds on the wall clock (GPU) or the process's CPU clock (CPU)."""
    ctx = Context(threads=1, use_gpu=gpu, seed=0, clock="wall" if gpu else "cpu", max_seconds=limit)
    t0 = time.perf_counter()
    try:
        out = fit_and_score(REGISTRY[name], config(name), data, ctx, score_test=True)
    except Exception as err:  # one model's failure is a row of the table, not the end of the check
        return {"model": name, "error": f"{type(err).__name__}: {err}"[:300]}
    s = out.scores
    return {"model": name, "device": out.fit.device, "precision": out.fit.precision, "epochs": out.fit.iterations,
            "best_epoch": out.fit.best_iteration, "stop": out.fit.stop_reason, "seconds": time.perf_counter() - t0,
            "val": s.val_score, "test": s.accuracy if s.accuracy is not None else s.r2,
            "peak_gpu_mb": out.usage.peak_gpu_mb, "n_params": out.fit.n_params}


def _cpu_fit(args: tuple[str, str, str, str, int, float]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    name, path, target, task, rows, limit = args
    return fit(name, load_fold(path, target, task, rows), gpu=False, limit=limit)


def line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"{r['model']:22s} FAILED {r['error']}"
    peak = "" if r.get("peak_gpu_mb") is None else f"{r['peak_gpu_mb']:8.1f} MB"
    return (f"{r['model']:22s} {r['device']:5s} {r['precision']!s:5s} {r['epochs']!s:>4} ep (best {r['best_epoch']!s:>3},"
            f" {r['stop']:14s}) {r['seconds']:8.1f} s  val {r['val']:.4f}  test {r['test']:.4f} {peak}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="a parquet file of the dataset")
    ap.add_argument("--target", required=True)
    ap.add_argument("--task", default="binary", choices=["binary", "multiclass", "regression"])
    ap.add_argument("--rows", type=int, nargs="+", default=[1024, 10000], help="training sizes on the GPU")
    ap.add_argument("--cpu-rows", type=int, default=1024, help="training size of the one-core CPU fits (0: none)")
    ap.add_argument("--gpu-seconds", type=float, default=150.0, help="a GPU fit's limit (wall clock)")
    ap.add_argument("--cpu-seconds", type=float, default=240.0, help="a CPU fit's limit (CPU clock)")
    ap.add_argument("--models", nargs="+", default=None, help="default: every torch model")
    ap.add_argument("--out", default=None, help="write every row as JSON here")
    args = ap.parse_args()

    import torch

    models = args.models or torch_models()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "models", " ".join(models), flush=True)
    pool = None
    if args.cpu_rows:  # the CPU fits run side by side while the GPU trains, one core each
        pool = cf.ProcessPoolExecutor(max_workers=min(len(models), max(1, (os.cpu_count() or 2) - 2)),
                                      mp_context=mp.get_context("spawn"))  # no CUDA state forked
        cpu_jobs = [pool.submit(_cpu_fit, (m, args.data, args.target, args.task, args.cpu_rows, args.cpu_seconds))
                    for m in models]
    rows: dict[str, list[dict[str, Any]]] = {}
    failed = False

    def keep() -> None:  # after every fit, so that a run stopped at its limit leaves what it measured
        if args.out:
            with open(args.out, "w") as fh:
                json.dump(rows, fh, indent=1, default=str)

    for n in args.rows:
        data = load_fold(args.data, args.target, args.task, n)
        print(f"\nGPU, {n} training rows, {len(data.valid.y)} validation, {len(data.test.y)} test", flush=True)
        rows[f"gpu-{n}"] = []
        for m in models:
            rows[f"gpu-{n}"].append(fit(m, data, gpu=True, limit=args.gpu_seconds))
            print(line(rows[f"gpu-{n}"][-1]), flush=True)
            keep()
        again = fit(models[0], data, gpu=True, limit=args.gpu_seconds)
        first = rows[f"gpu-{n}"][0]
        if again.get("peak_gpu_mb") is None or first.get("peak_gpu_mb") is None:  # a failed fit fails the check
            print(f"{models[0]}: no GPU peak to compare ({again.get('error') or first.get('error')})", flush=True)
            failed = True
        else:
            moved = again["peak_gpu_mb"] - first["peak_gpu_mb"]
            print(f"{models[0]} again after the others: peak {again['peak_gpu_mb']:.1f} MB against "
                  f"{first['peak_gpu_mb']:.1f} MB first (difference {moved:+.1f} MB)"
                  f"; val {again['val']:.4f} against {first['val']:.4f}", flush=True)
            failed |= abs(moved) > PEAK_TOLERANCE_MB
        rows[f"gpu-{n}-again"] = [again]
        keep()
    if pool is not None:
        print(f"\nOne CPU core each, {args.cpu_rows} training rows (limit {args.cpu_seconds:.0f} CPU-seconds):", flush=True)
        cpu = [j.result() for j in cpu_jobs]
        pool.shutdown()
        rows[f"cpu-{args.cpu_rows}"] = cpu
        if f"gpu-{args.cpu_rows}" not in rows:
            print(f"(no GPU fits at {args.cpu_rows} rows to compare with: add it to --rows)", flush=True)
        gpu = {r["model"]: r for r in rows.get(f"gpu-{args.cpu_rows}", [])}
        for r in cpu:
            g = gpu.get(r["model"], {})
            ratio = (f"  CPU/GPU time {r['seconds'] / g['seconds']:.1f}x, val {g['val'] - r['val']:+.4f}, "
                     f"test {g['test'] - r['test']:+.4f} (GPU − CPU)") if "error" not in r and "seconds" in g else ""
            print(line(r) + ratio, flush=True)
    keep()
    if failed:
        raise SystemExit(f"FAILED: a fit's GPU peak was missing, or moved by more than {PEAK_TOLERANCE_MB} MB "
                         "with what ran before it")


if __name__ == "__main__":
    main()
