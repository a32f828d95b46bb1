"""Where a fit runs: in the calling process (a warm trial worker), or on Ray Train workers.

Which path runs when (``resources.backend`` in the suite):

- ``auto`` (default): torch models with ``workers: 1`` and every boosting model train inside the warm
  trial worker itself (a method call). Torch models with ``workers > 1`` launch a Ray Train
  ``TorchTrainer`` with DDP across that many workers (GPU workers when ``gpus > 0``).
- ``train``: always launch a ``TorchTrainer``, even with one worker (seconds of start-up per trial:
  worth it only for long trials).
- ``tune``: never launch one (the name is kept for suites written before the engine).
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from pipeline.data.preprocess import FoldData
from pipeline.learners.base import OnStep
from pipeline.learners.trial import Context, TrialOutcome, fit_and_score
from pipeline.models.registry import ModelInfo
from pipeline.spec import Resources

OUTCOME = "outcome.json"


def uses_ray_train(info: ModelInfo, resources: Resources) -> bool:
    if not info.capabilities.distributed:
        return False
    if resources.backend == "train":
        return True
    return resources.backend == "auto" and resources.workers > 1


def run_fit(info: ModelInfo, config: dict[str, Any], data: FoldData, resources: Resources, *, seed: int,
            max_seconds: float = math.inf, clock: str = "wall", score_test: bool = False, attention: bool = False,
            on_step: OnStep | None = None, data_ref: Any = None, compress: tuple[str, ...] = (),
            keep_predictions: bool = False) -> TrialOutcome:
    """Fit and score one whole configuration on the path ``resources`` asks for. On Ray Train the
    workers run every epoch they are given (early stopping only): ASHA's rungs apply to in-worker trials."""
    if uses_ray_train(info, resources):
        return _fit_on_ray_train(info, config, data, resources, seed=seed, max_seconds=max_seconds, clock=clock,
                                 score_test=score_test, attention=attention, data_ref=data_ref, compress=compress,
                                 keep_predictions=keep_predictions)
    ctx = Context(threads=max(1, int(resources.cpus)), use_gpu=resources.gpus > 0, seed=seed,
                  max_seconds=max_seconds, clock=clock, on_step=on_step)
    return fit_and_score(info, config, data, ctx, score_test=score_test, attention=attention, compress=compress,
                         keep_predictions=keep_predictions)


def _worker_loop(cfg: dict[str, Any]) -> None:
    import ray
    import ray.train
    import ray.train.torch

    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    data = ray.get(cfg["data_ref"])

    ctx = Context(threads=cfg["threads"], use_gpu=cfg["use_gpu"], seed=cfg["seed"], max_seconds=cfg["max_seconds"],
                  clock=cfg["clock"], shard=(rank, world), wrap=ray.train.torch.prepare_model if world > 1 else None)
    out = fit_and_score(cfg["info"], cfg["config"], data, ctx, score_test=cfg["score_test"],
                        attention=cfg["attention"], compress=cfg["compress"] if rank == 0 else (),
                        keep_predictions=cfg["keep_predictions"] and rank == 0)
    # Ray Train keeps only metrics that come with a checkpoint: rank 0 writes the outcome as JSON.
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = None
        if rank == 0:
            (Path(tmp) / OUTCOME).write_text(json.dumps(out.to_json(), default=float))
            checkpoint = ray.train.Checkpoint.from_directory(tmp)
        ray.train.report({"status": "final", "val_score": out.scores.val_score}, checkpoint=checkpoint)


def _fit_on_ray_train(info: ModelInfo, config: dict[str, Any], data: FoldData, resources: Resources, *, seed: int,
                      max_seconds: float, clock: str, score_test: bool, attention: bool, data_ref: Any = None,
                      compress: tuple[str, ...] = (), keep_predictions: bool = False) -> TrialOutcome:
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    per_worker_gpu = resources.gpus / resources.workers if resources.gpus else 0
    trainer = TorchTrainer(
        _worker_loop,
        train_loop_config={
            "data_ref": data_ref if data_ref is not None else ray.put(data), "info": info, "config": config, "seed": seed,
            "threads": max(1, int(resources.cpus)), "use_gpu": resources.gpus > 0, "max_seconds": max_seconds,
            "clock": clock, "score_test": score_test, "attention": attention, "compress": compress,
            "keep_predictions": keep_predictions,
        },
        scaling_config=ScalingConfig(
            num_workers=resources.workers, use_gpu=resources.gpus > 0,
            resources_per_worker={"CPU": resources.cpus, **({"GPU": per_worker_gpu} if per_worker_gpu else {})},
        ),
        run_config=RunConfig(storage_path=tempfile.mkdtemp(prefix="attnbench-train-")),
    )
    result = trainer.fit()
    if result.error:
        raise result.error
    if result.checkpoint is None:
        raise RuntimeError(f"Ray Train run ended without a final report (last metrics: {result.metrics})")
    with result.checkpoint.as_directory() as path:
        return TrialOutcome.from_json(json.loads((Path(path) / OUTCOME).read_text()))
