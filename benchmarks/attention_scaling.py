"""Time and memory of one attention forward pass as the number of features grows (8 → 512).

Compared at each size F, with ratios against full self-attention (the fused kernel):
- ``full``: self-attention over all F tokens, ``layers.attention`` (fused ``scaled_dot_product_attention``);
- ``full_weights``: the same through the plain path that materialises the F × F weights (what any
  model returning attention maps, or an unfused implementation, pays);
- ``cross``: categorical tokens query numeric tokens (``layers.attention`` with k queries and n keys,
  k + n = F, k = ``--cat-fraction`` · F): cost O(k·n), expected ratio k·n / F²;
- ``block``: ``layers.blockwise_attention`` with blocks of ``--block-size`` B: cost O(F·B), expected
  ratio B / F.

``--level layer`` times whole ``layers.MultiheadAttention`` modules instead (Q/K/V and output
projections included, which cost O(F·d²) whatever the attention).

    python benchmarks/attention_scaling.py           # CPU, under 2 minutes
    python benchmarks/attention_scaling.py --quick
    python benchmarks/attention_scaling.py --device cuda
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import memory_process, peak_memory, table

from pipeline.models.layers import MultiheadAttention, attention, blockwise_attention

VARIANTS = ("full", "full_weights", "cross", "block")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--quick", action="store_true", help="sizes 8 → 128 and fewer rounds")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--sizes", type=int, nargs="+", default=None, help="feature counts (default 8 16 … 512)")
    p.add_argument("--batch", type=int, default=64, help="rows per forward pass")
    p.add_argument("--d", type=int, default=64, help="token width")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--cat-fraction", type=float, default=0.5,
                   help="share of the F tokens that query in cross")
    p.add_argument("--level", choices=["primitive", "layer"], default="primitive")
    p.add_argument("--rounds", type=int, default=0, help="timing rounds, best kept (0: 5, quick 2)")
    p.add_argument("--no-memory", action="store_true")
    args = p.parse_args(argv)
    args.sizes = args.sizes or [2**i for i in range(3, 8 if args.quick else 10)]
    args.rounds = args.rounds or (2 if args.quick else 5)
    if not 0 < args.cat_fraction < 1 or args.d % args.heads:
        p.error("--cat-fraction must be in (0, 1) and --d divisible by --heads")
    return args


def split(f: int, fraction: float) -> tuple[int, int]:
    """(k queries, n keys) for cross-attention over F = k + n tokens, both at least 1."""
    k = min(max(1, round(f * fraction)), f - 1)
    return k, f - k


def passes(args: argparse.Namespace, f: int, device: torch.device) -> dict[str, Callable[[], object]]:
    """One forward pass of each variant at F features, on fixed random inputs, without autograd."""
    g = torch.Generator().manual_seed(f)
    b, h, d = args.batch, args.heads, args.d
    n = split(f, args.cat_fraction)[1]  # keys; the last F − n tokens are the queries
    if args.level == "primitive":
        q, key, v = (torch.randn(b, h, f, d // h, generator=g).to(device) for _ in range(3))  # B × h × F × dh
        return {
            "full": lambda: attention(q, key, v),
            "full_weights": lambda: attention(q, key, v, need_weights=True),
            "cross": lambda: attention(q[:, :, n:], key[:, :, :n], v[:, :, :n]),  # B × h × k queries, n keys
            "block": lambda: blockwise_attention(q, key, v, args.block_size),
        }
    x = torch.randn(b, f, d, generator=g).to(device)  # B × F × d, numeric tokens first
    torch.manual_seed(0)
    full = MultiheadAttention(d, h).to(device).eval()
    block = MultiheadAttention(d, h, block_size=args.block_size).to(device).eval()
    return {
        "full": lambda: full(x),
        "full_weights": lambda: full(x, need_weights=True),
        "cross": lambda: full(x[:, n:], x[:, :n]),
        "block": lambda: block(x),
    }


def expected(variant: str, f: int, args: argparse.Namespace) -> float:
    """The attention cost relative to full self-attention that the O(·) claims predict."""
    if variant == "cross":
        k, n = split(f, args.cat_fraction)
        return k * n / f**2
    if variant == "block":
        return min(args.block_size, f) / f
    return 1.0


def best_seconds(fn: Callable[[], object], rounds: int, sync: Callable[[], None]) -> float:
    """Seconds per call: calls are batched to at least ~5 ms per round, the best round kept."""
    fn()
    sync()
    reps, t = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        t = time.perf_counter() - t0
        if t >= 0.005 or reps >= 2**16:
            break
        reps *= 4
    best = t / reps
    for _ in range(rounds - 1):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


@torch.no_grad()
def measure_times(args: argparse.Namespace) -> dict[tuple[int, str], float]:
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    out: dict[tuple[int, str], float] = {}
    for f in args.sizes:
        fns = passes(args, f, device)
        for _ in range(args.rounds):  # variants alternate, so outside load does not land on one only
            for name, fn in fns.items():
                t = best_seconds(fn, 1, sync)
                out[f, name] = min(out.get((f, name), math.inf), t)
    return out


@torch.no_grad()
def measure_memory(args: argparse.Namespace) -> dict[tuple[int, str], float]:
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    out = {}
    for f in args.sizes:
        for name, fn in passes(args, f, device).items():
            fn()  # lazy allocations (kernels, thread pools) first
            out[f, name] = peak_memory(fn, args.device)
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    times = measure_times(args)
    if args.no_memory:
        mem: dict[tuple[int, str], float] = {}
    else:
        mem = measure_memory(args) if args.device.startswith("cuda") else memory_process(measure_memory, args)
    print(f"Attention forward pass ({args.level}) on {args.device}, {torch.get_num_threads()} threads: "
          f"batch {args.batch}, d={args.d}, {args.heads} heads, cross k = {args.cat_fraction:g}·F queries, "
          f"blocks of {args.block_size}. Ratios are against 'full' at the same F; 'claim' is the cost ratio "
          "the O(·) argument predicts.")
    rows = []
    for f in args.sizes:
        base_t = times[f, "full"]
        base_m = mem.get((f, "full"), math.nan)
        row: list[object] = [f, base_t * 1e3, base_m]
        for name in VARIANTS[1:]:
            m = mem.get((f, name), math.nan)
            row += [times[f, name] / base_t, m / base_m if base_m > 0.05 else math.nan, m]
            if name != "full_weights":
                row.append(expected(name, f, args))
        rows.append(row)
    header = ["F", "full ms", "full MiB",
              "weights t×", "weights m×", "weights MiB",
              "cross t×", "cross m×", "cross MiB", "cross claim",
              "block t×", "block m×", "block MiB", "block claim"]
    print(table(header, rows))
    print("t×, m×: time and peak memory / full's at the same F (m× left out where full needs < 0.05 MiB). "
          "MiB: peak above the start of the pass" + ("" if mem else " (not measured)") + ".")


if __name__ == "__main__":
    main()
