"""Our FT-Transformer against ``rtdl_revisiting_models.FTTransformer`` (Gorishniy et al.'s reference).

Both get the same architecture (d_block, n_blocks, heads, dropouts, FFN width; rtdl's defaults for
3 blocks unless told otherwise), the same synthetic data and batch size, and a plain AdamW. Printed:
training rows/s, inference rows/s, peak memory and parameter count, each as ours / reference.

``fit rows/s`` times whole fits (``--fit-epochs`` epochs on ``--fit-rows`` training rows, 16,384 by
default: a study size, with validation on 2,048 rows after every epoch): ours through
``pipeline.train.loop.train``, the recipe as every trial runs it; the reference model through the same
recipe written the plain way (a host sync per step for the loss and its finiteness check, a deep copy of
the weights on each improvement, validation under ``no_grad`` scored with scikit-learn's metrics).

The FFN activation differs by design: ours is GELU; the reference runs with ``ffn_activation="ReLU"``
so that every Linear has the same shape (``--reference-ffn reglu`` gives the paper's ReGLU, whose first
FFN layer is twice as wide).

    python benchmarks/ft_transformer_vs_rtdl.py              # CPU, under 2 minutes
    python benchmarks/ft_transformer_vs_rtdl.py --quick
    python benchmarks/ft_transformer_vs_rtdl.py --device cuda
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_times, memory_process, peak_memory, table

IMPLS = ("ours", "rtdl")
# What each contender runs: our model in fp32 and in bf16 (autocast, as `amp: bf16` trains it), rtdl in fp32.
CONTENDERS = {"ours": ("ours", None), "ours-bf16": ("ours", torch.bfloat16), "rtdl": ("rtdl", None)}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--quick", action="store_true", help="fewer rows and rounds (a smoke run)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--n-num", type=int, default=16)
    p.add_argument("--n-cat", type=int, default=8)
    p.add_argument("--cardinality", type=int, default=10)
    p.add_argument("--n-blocks", type=int, default=3)
    p.add_argument("--d-block", type=int, default=0, help="0: rtdl's default for n_blocks (192 for 3)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--infer-batch-size", type=int, default=1024)
    p.add_argument("--steps", type=int, default=0, help="training steps per round (0: 4, quick 2)")
    p.add_argument("--rounds", type=int, default=0, help="timing rounds, best kept (0: 5, quick 2)")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="cpu: process CPU time, steadier on a shared machine (use with --threads 1)")
    p.add_argument("--reference-ffn", choices=["relu", "reglu"], default="relu")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    p.add_argument("--fit-rows", type=int, default=0, help="training rows of the timed fits (0: 16384, quick 2048)")
    p.add_argument("--fit-epochs", type=int, default=2)
    p.add_argument("--no-profile", action="store_true", help="skip the breakdown of a bf16 step's time")
    p.add_argument("--routes", action="store_true",
                   help="also time two ways past autocast: torch.compile, and the model in bf16 with fp32 masters")
    args = p.parse_args(argv)
    args.steps = args.steps or (2 if args.quick else 4)
    args.rounds = args.rounds or (2 if args.quick else 5)
    args.infer_rows = 2048 if args.quick else 4096
    args.fit_rows = args.fit_rows or (2048 if args.quick else 16384)
    if args.clock == "cpu" and (args.device != "cpu" or args.threads != 1):
        p.error("--clock cpu needs --device cpu and --threads 1")
    return args


def config(args: argparse.Namespace) -> dict[str, Any]:
    """rtdl's defaults for ``n_blocks`` (d_block, heads, dropouts, FFN multiplier), in our names too."""
    import rtdl_revisiting_models as rtdl

    ref = rtdl.FTTransformer.get_default_kwargs(args.n_blocks)
    d = args.d_block or ref["d_block"]
    return {"n_blocks": args.n_blocks, "d_block": d, "n_heads": ref["attention_n_heads"],
            "attention_dropout": ref["attention_dropout"], "ffn_factor": ref["ffn_d_hidden_multiplier"],
            "ffn_dropout": ref["ffn_dropout"], "residual_dropout": ref["residual_dropout"]}


def build(impl: str, args: argparse.Namespace, device: torch.device) -> nn.Module:
    c = config(args)
    cards = [args.cardinality] * args.n_cat
    torch.manual_seed(0)
    if impl == "ours":
        from pipeline.models.ft_transformer import FTTransformer

        model = FTTransformer(n_num=args.n_num, cat_cardinalities=cards, d_out=2, d_token=c["d_block"],
                              n_blocks=c["n_blocks"], n_heads=c["n_heads"],
                              attention_dropout=c["attention_dropout"],
                              ffn_factor=c["ffn_factor"], ffn_dropout=c["ffn_dropout"],
                              residual_dropout=c["residual_dropout"])
    else:
        import rtdl_revisiting_models as rtdl

        model = rtdl.FTTransformer(
            n_cont_features=args.n_num, cat_cardinalities=cards, d_out=2, n_blocks=c["n_blocks"],
            d_block=c["d_block"], attention_n_heads=c["n_heads"], attention_dropout=c["attention_dropout"],
            ffn_d_hidden=None, ffn_d_hidden_multiplier=c["ffn_factor"], ffn_dropout=c["ffn_dropout"],
            residual_dropout=c["residual_dropout"],
            ffn_activation="ReLU" if args.reference_ffn == "relu" else "ReGLU")
    return model.to(device)


def data(args: argparse.Namespace, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    n = max(args.infer_rows, args.batch_size * args.steps)
    x_num = torch.randn(n, args.n_num, generator=g)
    x_cat = torch.randint(0, args.cardinality, (n, args.n_cat), generator=g)
    y = torch.randint(0, 2, (n,), generator=g)
    return x_num.to(device), x_cat.to(device), y.to(device)


class Runner:
    """One implementation's training and inference loops on shared data; ``amp``: the autocast dtype
    (None: fp32), as :func:`pipeline.train.loop.train` uses it (fp32 weights, optimiser and loss)."""

    def __init__(self, impl: str, args: argparse.Namespace, device: torch.device,
                 tensors: tuple[torch.Tensor, torch.Tensor, torch.Tensor], amp: torch.dtype | None = None) -> None:
        self.args, self.model, self.amp, self.device = args, build(impl, args, device), amp, device
        self.x_num, self.x_cat, self.y = tensors
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, weight_decay=1e-5)

    def autocast(self) -> Any:
        return torch.autocast(self.device.type, dtype=self.amp, enabled=self.amp is not None)

    def train(self, steps: int | None = None) -> None:
        self.model.train()
        b = self.args.batch_size
        for s in range(steps or self.args.steps):
            sl = slice(s * b, (s + 1) * b)
            with self.autocast():
                out = self.model(self.x_num[sl], self.x_cat[sl])
            loss = F.cross_entropy(out.float(), self.y[sl])
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()

    @torch.no_grad()
    def infer(self) -> None:
        self.model.eval()
        b = self.args.infer_batch_size
        with self.autocast():
            for i in range(0, self.args.infer_rows, b):
                self.model(self.x_num[i:i + b], self.x_cat[i:i + b])


class CompiledRunner(Runner):
    """Ours in bf16 autocast with its forward compiled (inductor; the backward with it)."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.model.forward = torch.compile(self.model.forward, dynamic=False)


class PureBf16Runner(Runner):
    """Ours with bf16 weights and activations (no autocast casts), fp32 master weights and optimiser state:
    each step copies the gradients up and the updated weights down."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.master = [q.detach().clone() for q in self.model.parameters()]
        self.model.to(torch.bfloat16)
        self.opt = torch.optim.AdamW(self.master, lr=1e-4, weight_decay=1e-5)
        self.x_num = self.x_num.to(torch.bfloat16)

    def train(self, steps: int | None = None) -> None:
        self.model.train()
        b = self.args.batch_size
        for s in range(steps or self.args.steps):
            sl = slice(s * b, (s + 1) * b)
            loss = F.cross_entropy(self.model(self.x_num[sl], self.x_cat[sl]).float(), self.y[sl])
            loss.backward()
            for m, q in zip(self.master, self.model.parameters()):
                assert q.grad is not None  # every parameter takes part in the loss
                m.grad, q.grad = q.grad.float(), None
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
            with torch.no_grad():
                for m, q in zip(self.master, self.model.parameters()):
                    q.copy_(m)


def routes(args: argparse.Namespace, device: torch.device, tensors: Any, sync: Callable[[], None]) -> dict[str, float]:
    """Training rows/s of ours in bf16 autocast and of the two routes past it, timed together; and the
    seconds torch.compile took (its first steps)."""
    base = Runner("ours", args, device, tensors, torch.bfloat16)
    compiled = CompiledRunner("ours", args, device, tensors, torch.bfloat16)
    pure = PureBf16Runner("ours", args, device, tensors, None)
    started = time.perf_counter()
    compiled.train(2)
    compile_s = time.perf_counter() - started
    for r in (base, pure):
        r.train(1)
    t = best_times({"autocast": base.train, "compiled": compiled.train, "pure": pure.train}, args.rounds, sync,
                   args.clock)
    return {**{k: args.batch_size * args.steps / v for k, v in t.items()}, "compile_s": compile_s}


def fold(args: argparse.Namespace) -> Any:
    """A synthetic binary task for the timed fits: ``--fit-rows`` training and 2,048 validation rows."""
    import numpy as np

    from pipeline.data.preprocess import FoldData, Part

    rng = np.random.default_rng(0)

    def part(n: int) -> Part:
        x_num = rng.standard_normal((n, args.n_num)).astype(np.float32)
        x_cat = rng.integers(1, args.cardinality, (n, args.n_cat))
        return Part(x_num, x_cat, (x_num[:, 0] + (x_cat[:, 0] % 2) > 0.5).astype(np.int64))

    return FoldData("binary", 2, [f"n{i}" for i in range(args.n_num)], [f"c{i}" for i in range(args.n_cat)],
                    [args.cardinality] * args.n_cat, part(args.fit_rows), part(2048), part(8))


def fit_ours(args: argparse.Namespace, device: torch.device, data: Any, amp: str = "off") -> None:
    from pipeline.train.loop import Recipe, train

    train(build("ours", args, device), data, Recipe(lr=1e-4, max_epochs=args.fit_epochs, patience=args.fit_epochs,
                                                    amp=amp, seed=0), device=device)


def fit_reference(args: argparse.Namespace, device: torch.device, data: Any) -> None:
    """The same recipe as :func:`pipeline.train.loop.train`, written the plain way (see the module doc)."""
    import copy
    import math

    import numpy as np

    from pipeline.metrics import score
    from pipeline.train.loop import _param_groups, effective_batch_size, to_tensors, warmup_cosine

    model = build("rtdl", args, device)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    (x_num, x_cat), y = to_tensors(data.train, device), torch.as_tensor(data.train.y, device=device)
    n = len(y)
    batch = effective_batch_size(256, n)
    steps = math.ceil(n / batch)
    opt = torch.optim.AdamW(_param_groups(model, 1e-5), lr=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(steps * args.fit_epochs, 0.05))
    best_loss, best_state = math.inf, copy.deepcopy(model.state_dict())
    for _epoch in range(args.fit_epochs):
        model.train()
        order = torch.as_tensor(rng.permutation(n), device=device)
        total = 0.0
        for step in range(steps):
            idx = order[step * batch:(step + 1) * batch]
            loss = F.cross_entropy(model(x_num[idx], x_cat[idx]), y[idx])
            if not torch.isfinite(loss):
                raise RuntimeError("diverged")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        model.eval()
        with torch.no_grad():
            vn, vc = to_tensors(data.valid, device)
            proba = torch.softmax(model(vn, vc).float(), dim=-1).cpu().numpy()
        val = score("binary", data.valid.y, proba, 2)
        if val["loss"] < best_loss:
            best_loss, best_state = val["loss"], copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)


def measure_memory(args: argparse.Namespace) -> dict[tuple[str, str], float]:
    """Peak memory of two training steps (after one warm-up step, so that the optimizer state,
    allocated once, is left out) and of one inference pass, for each contender."""
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tensors = data(args, device)
    out: dict[tuple[str, str], float] = {}
    for name, (impl, amp) in CONTENDERS.items():
        runner = Runner(impl, args, device, tensors, amp)
        runner.train(1)
        out[name, "train"] = peak_memory(functools.partial(runner.train, 2), args.device)
        out[name, "infer"] = peak_memory(runner.infer, args.device)
        del runner
    return out


def matmul_peak(args: argparse.Namespace, device: torch.device, dtype: torch.dtype, sync: Callable[[], None]) -> float:
    """GFLOP/s of one matrix product of this model's FFN shape (batch × tokens rows, d × FFN width), the
    best of several: what the machine's matrix units give in ``dtype``."""
    import time

    c = config(args)
    d, hidden = c["d_block"], int(c["d_block"] * c["ffn_factor"])
    rows = args.batch_size * (args.n_num + args.n_cat + 1)
    a = torch.randn(rows, d, device=device, dtype=dtype)
    w = torch.randn(d, hidden, device=device, dtype=dtype)
    a @ w
    best = math.inf
    for _ in range(max(5, args.rounds)):
        sync()
        t = time.perf_counter()
        for _ in range(5):
            a @ w
        sync()
        best = min(best, (time.perf_counter() - t) / 5)
    return 2 * rows * d * hidden / best / 1e9


CATEGORIES = (  # where a step's time goes: an op's name (aten::, leading "_" and "native_" dropped) → the
    # first category one of whose words it contains
    ("matrix products", ("mm", "linear", "matmul")),
    ("softmax", ("softmax",)),
    ("layer norm", ("layer_norm",)),
    ("dropout masks", ("random_", "uniform_", "bernoulli", "bitwise_and", "ge_")),
    ("casts and copies", ("copy", "clone", "contiguous", "cat")),
    ("optimiser", ("adam", "foreach", "addcdiv", "lerp", "sqrt")),
    ("activations", ("gelu", "relu")),
    ("embeddings", ("embedding", "index")),
    ("other element-wise", ("mul", "add", "sum", "fill", "div", "sub", "where", "neg")),
)


def breakdown(runner: Runner) -> list[tuple[str, float]]:
    """Milliseconds per training step by kind of op (self time under torch's profiler, 4 steps)."""
    from torch.profiler import ProfilerActivity, profile

    runner.train(1)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        runner.train(4)
    totals: dict[str, float] = {}
    for ev in prof.key_averages():
        if not ev.key.startswith("aten::"):
            continue
        name = ev.key.removeprefix("aten::").lstrip("_").removeprefix("native_").lower()
        cat = next((c for c, words in CATEGORIES if any(w in name for w in words)), "rest")
        totals[cat] = totals.get(cat, 0.0) + ev.self_cpu_time_total / 1000 / 4
    return sorted(totals.items(), key=lambda kv: -kv[1])


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    try:
        import rtdl_revisiting_models  # noqa: F401
    except ModuleNotFoundError:
        sys.exit("ft_transformer_vs_rtdl: the reference implementation is an extra: pip install -e '.[bench]'")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tensors = data(args, device)
    runners = {name: Runner(impl, args, device, tensors, amp) for name, (impl, amp) in CONTENDERS.items()}
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for r in runners.values():  # warm-up: kernels, thread pools, optimizer state
        r.train(1)
        r.infer()
    train_t = best_times({k: r.train for k, r in runners.items()}, args.rounds, sync, args.clock)
    infer_t = best_times({k: r.infer for k, r in runners.items()}, args.rounds, sync, args.clock)
    train_rps = {k: args.batch_size * args.steps / t for k, t in train_t.items()}
    fold_data = fold(args)
    fits: dict[str, Callable[[], object]] = {
        "ours": functools.partial(fit_ours, args, device, fold_data, "off"),
        "ours-bf16": functools.partial(fit_ours, args, device, fold_data, "bf16"),
        "rtdl": functools.partial(fit_reference, args, device, fold_data)}
    fit_t = best_times(fits, max(1, args.rounds // 2), sync, args.clock)
    fit_rps = {k: args.fit_rows * args.fit_epochs / t for k, t in fit_t.items()}
    infer_rps = {k: args.infer_rows / t for k, t in infer_t.items()}
    params = {k: sum(p.numel() for p in r.model.parameters()) for k, r in runners.items()}
    from pipeline.cost import flops_per_row

    flops = flops_per_row(runners["ours"].model, tensors[0], tensors[1]) or float("nan")
    peak = {name: matmul_peak(args, device, dt, sync) for name, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32))}
    parts = [] if args.no_profile or device.type != "cpu" else breakdown(runners["ours-bf16"])
    ways = routes(args, device, tensors, sync) if args.routes else {}
    del runners
    if args.no_memory:
        mem = {}
    else:
        mem = measure_memory(args) if device.type == "cuda" else memory_process(measure_memory, args)

    c = config(args)
    print(f"FT-Transformer, ours (fp32 and bf16 autocast) vs rtdl_revisiting_models ({args.reference_ffn} FFN, "
          f"fp32) on {args.device}, {torch.get_num_threads()} threads, {args.clock} clock: "
          f"{args.n_num} numeric + {args.n_cat} categorical features, "
          f"d_block={c['d_block']}, n_blocks={c['n_blocks']}, heads={c['n_heads']}, "
          f"ffn_factor={c['ffn_factor']:.3g}, batch {args.batch_size} (inference {args.infer_batch_size})")

    def row(label: str, v: dict[str, float]) -> list[object]:
        return [label, v["ours"], v["ours-bf16"], v["rtdl"], v["ours"] / v["rtdl"], v["ours-bf16"] / v["rtdl"],
                v["ours-bf16"] / v["ours"]]

    rows: list[list[object]] = [
        row("train rows/s", train_rps), row(f"fit rows/s ({args.fit_rows:,} rows)", fit_rps),
        row("inference rows/s", infer_rps), row("parameters", {k: float(v) for k, v in params.items()})]
    for phase in ("train", "infer"):
        if mem:
            rows.append(row(f"peak MiB ({phase})", {k: mem[k, phase] for k in CONTENDERS}))
    print(table(["", "ours fp32", "ours bf16", "rtdl fp32", "ours fp32/rtdl", "ours bf16/rtdl", "bf16/fp32"], rows))
    print("rows/s: higher is better; memory: the peak above the start of the measured block "
          f"({'CUDA allocator' if device.type == 'cuda' else 'resident set'}), "
          "training after the warm-up step.")
    step_flops = 3 * flops * args.batch_size  # a training step: forward and a backward of twice its work
    bf16_gflops = step_flops * train_rps["ours-bf16"] / args.batch_size / 1e9
    fp32_gflops = step_flops * train_rps["ours"] / args.batch_size / 1e9
    print(f"matrix units, measured now on the FFN's product: bf16 {peak['bf16']:,.0f} GFLOP/s, fp32 "
          f"{peak['fp32']:,.0f} GFLOP/s ({peak['bf16'] / peak['fp32']:.1f}×). A training step does "
          f"{step_flops / 1e9:.2f} GFLOP (3 × forward): ours bf16 reaches {bf16_gflops:,.0f} GFLOP/s "
          f"({bf16_gflops / peak['bf16']:.0%} of the bf16 peak), ours fp32 {fp32_gflops:,.0f} "
          f"({fp32_gflops / peak['fp32']:.0%} of the fp32 peak).")
    if ways:
        print(f"ways past autocast, training rows/s ÷ ours bf16 autocast's, timed together: torch.compile "
              f"{ways['compiled'] / ways['autocast']:.2f}× (after {ways['compile_s']:.0f} s compiling); bf16 weights "
              f"with fp32 masters {ways['pure'] / ways['autocast']:.2f}×")
    if parts:
        total = sum(ms for _, ms in parts)
        print("where a bf16 training step's time goes (torch profiler, self time, ms per step): "
              + "; ".join(f"{cat} {ms:.1f} ({ms / total:.0%})" for cat, ms in parts))


if __name__ == "__main__":
    main()
