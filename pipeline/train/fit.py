"""Fit one model with one configuration on one fold, and score it: the unit every trial runs.

Every trial of the engine scores validation and test (selection reads validation only). Knows
nothing of Ray: it runs the same in a test, a notebook or a worker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.cost import Measure, flops_per_row, n_params
from pipeline.data.preprocess import FoldData
from pipeline.metrics import score
from pipeline.models.registry import get


@dataclass
class Context:
    threads: int = 1
    use_gpu: bool = False
    seed: int = 0
    max_seconds: float = float("inf")
    on_epoch: Callable[[dict[str, float]], bool | None] | None = None
    shard: tuple[int, int] = (0, 1)
    wrap: Callable[[Any], Any] | None = None


def build_torch(name: str, config: dict[str, Any], data: FoldData) -> Any:
    info = get(name)
    cls = info.load()
    arch = {k: v for k, v in config.items() if k in info.defaults and k not in _RECIPE_KEYS}
    return cls(n_num=len(data.num_names), cat_cardinalities=data.cat_cardinalities, d_out=data.d_out, **arch)


def _recipe_keys() -> set[str]:
    from pipeline.models.registry import TORCH_TRAINING_DEFAULTS

    return set(TORCH_TRAINING_DEFAULTS)


_RECIPE_KEYS = _recipe_keys()


def fit_and_score(name: str, config: dict[str, Any], data: FoldData, ctx: Context, *,
                  score_test: bool = False, attention: bool = False) -> dict[str, Any]:
    """Train, then score on validation (and test when asked). Returns metrics, cost and the curve."""
    info = get(name)
    full = {**info.all_defaults, **config}
    out: dict[str, Any] = {}
    if info.family == "torch":
        import torch

        from pipeline.train.loop import Recipe, pick_device, predict, train

        torch.set_num_threads(max(1, ctx.threads))
        device = pick_device(ctx.use_gpu)
        torch.manual_seed(ctx.seed)
        model = build_torch(name, full, data)
        recipe = Recipe.from_config(full, seed=ctx.seed, max_seconds=ctx.max_seconds)
        with Measure(gpu=device.type == "cuda") as m:
            res = train(model, data, recipe, device=device, on_epoch=ctx.on_epoch, shard=ctx.shard, wrap=ctx.wrap)
        model = res.model

        def predict_fn(part: Any) -> np.ndarray:
            return predict(model, data, part, device)

        out.update(epochs=res.epochs, best_epoch=res.best_epoch, curve=res.curve, stop_reason=res.stop_reason,
                   device=res.device, n_params=n_params(model))
        if score_test:
            from pipeline.train.loop import to_tensors

            xn, xc = to_tensors(data.test, device)
            out["flops_per_row"] = flops_per_row(model, xn, xc)
            net: Any = model  # feature_attention exists on attention models only
            if attention and hasattr(net, "feature_attention"):
                fa = net.feature_attention(xn[:512], xc[:512]).float().cpu().numpy()
                out["attention"] = {"features": data.feature_names, "map": fa.tolist()}
    else:
        cls = info.load()
        on_round = None
        if ctx.on_epoch is not None:
            on_epoch = ctx.on_epoch

            def on_round(rnd: int, val_loss: float) -> bool:  # ASHA's rungs, on minus the eval metric
                return on_epoch({"epoch": rnd, "val_score": -val_loss}) is not False
        with Measure(gpu=ctx.use_gpu) as m:
            model = cls(data=data, config=full, threads=ctx.threads, use_gpu=ctx.use_gpu, seed=ctx.seed,
                        on_round=on_round).fit()
        predict_fn = model.predict
        # epochs: the rounds run; best_epoch: the round kept (early stopping keeps the best round).
        rounds = len(model.curve) or model.n_iterations
        out["stop_reason"] = ("pruned" if model.pruned else
                              "early_stopping" if rounds < model.max_rounds else "max_epochs")
        out.update(epochs=rounds, best_epoch=model.n_iterations, device=model.device,
                   n_params=model.n_params, curve=[{"iteration": i + 1, "val_loss": float(v)}
                                                   for i, v in enumerate(model.curve)])
    out.update(fit_seconds=m.usage.seconds, peak_cpu_mb=m.usage.peak_cpu_mb, peak_gpu_mb=m.usage.peak_gpu_mb)
    val = score(data.task_type, data.valid.y, predict_fn(data.valid), data.n_classes)
    out["val_score"], out["val_loss"] = val["score"], val["loss"]
    if score_test:
        t0 = time.perf_counter()
        pred = predict_fn(data.test)
        seconds = time.perf_counter() - t0
        test = score(data.task_type, data.test.y, pred, data.n_classes)
        test.pop("score"), test.pop("loss")
        out.update(test, predict_seconds=seconds, predict_rows_per_s=len(data.test) / max(seconds, 1e-9))
    return out
