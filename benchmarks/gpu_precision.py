"""FT-Transformer through our training loop on a CUDA GPU at amp off / bf16 / fp16 / auto: seconds per
epoch (after a warm-up epoch) and the validation score, on seeded made-up data. Issue 37's GPU check:
`python benchmarks/gpu_precision.py` (prints one line per precision, ratios against fp32 in the same run)."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import time

import numpy as np
import torch

from pipeline.data.preprocess import FoldData, Part
from pipeline.models.ft_transformer import FTTransformer
from pipeline.train.loop import train
from pipeline.train.recipe import Recipe


def fold(n: int = 60_000, n_num: int = 24, n_cat: int = 8) -> FoldData:
    rng = np.random.default_rng(0)
    x_num = rng.normal(size=(n, n_num)).astype(np.float32)
    x_cat = rng.integers(1, 11, size=(n, n_cat)).astype(np.int64)
    z = x_num[:, 0] * x_num[:, 1] + np.sin(x_num[:, 2]) + (x_cat[:, 0] % 3)
    y = (z > np.median(z)).astype(np.int64)
    cut = [0, n * 3 // 5, n * 4 // 5, n]
    parts = [Part(x_num[a:b], x_cat[a:b], y[a:b]) for a, b in itertools.pairwise(cut)]
    return FoldData(task_type="binary", n_classes=2, num_names=[f"n{i}" for i in range(n_num)],
                    cat_names=[f"c{j}" for j in range(n_cat)], cat_cardinalities=[11] * n_cat,
                    train=parts[0], valid=parts[1], test=parts[2], y_std=1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--rows", type=int, default=60_000, help="all rows (3/5 train, 1/5 valid, 1/5 test)")
    args = ap.parse_args()
    data, device = fold(args.rows), torch.device("cuda")
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "batch", args.batch_size, "rows", args.rows)
    base = None
    for amp in ("off", "bf16", "fp16", "auto"):
        torch.manual_seed(0)
        model = FTTransformer(n_num=24, cat_cardinalities=[11] * 8, d_out=2, d_token=192, n_blocks=3)
        recipe = dataclasses.replace(Recipe(), amp=amp, max_epochs=4, patience=100,
                                     batch_size=args.batch_size, lr=1e-4)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        res = train(model, data, recipe, device=device)
        torch.cuda.synchronize()
        total = time.perf_counter() - t0
        per_epoch = np.diff([0.0] + [p["seconds"] for p in res.curve])[1:].mean()  # the first epoch warms up
        base = base or per_epoch
        print(f"amp={amp:5s} precision={res.precision}  s/epoch {per_epoch:.3f}  (fp32/this {base / per_epoch:.2f}x)  "
              f"val score {res.curve[-1]['val_score']:.4f}  total {total:.1f} s  peak GPU "
              f"{torch.cuda.max_memory_allocated() / 2**20:.0f} MB")
        torch.cuda.reset_peak_memory_stats()


if __name__ == "__main__":
    main()
