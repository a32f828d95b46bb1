"""The torch training recipe's settings and their defaults: the one place they are kept.

Torch-free, so that suite validation and the registry's users can read the recipe's keys without
importing torch. :mod:`pipeline.train.loop` runs the recipe.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Recipe:
    lr: float = 1e-3
    weight_decay: float = 1e-5
    batch_size: int = 256
    max_epochs: int = 100
    patience: int = 8
    warmup_frac: float = 0.05
    clip_norm: float = 1.0
    amp: str = "auto"  # auto | off | bf16 | fp16: bf16 on GPUs that support it, fp16 with a scaler on older ones
    max_seconds: float = math.inf  # set by the harness (the trial's time limit), not by a suite
    clock: str = "wall"  # what max_seconds is read on (pipeline.clock); set by the harness
    seed: int = 0  # set by the harness

    @classmethod
    def from_config(cls, config: dict[str, Any], **extra: Any) -> Recipe:
        keys = cls.__dataclass_fields__
        return cls(**{k: v for k, v in {**config, **extra}.items() if k in keys})


HARNESS_KEYS = ("max_seconds", "clock", "seed")

# The recipe's searchable defaults: every torch model's configuration includes them.
TRAINING_DEFAULTS: dict[str, Any] = {k: v for k, v in asdict(Recipe()).items() if k not in HARNESS_KEYS}

# What every torch model's search varies unless its suite entry says otherwise.
TRAINING_SPACE: dict[str, Any] = {
    "lr": {"loguniform": [1e-4, 3e-3]},
    "weight_decay": {"loguniform": [1e-6, 1e-3]},
}
