"""The model registry: light metadata, defaults and search spaces; heavy code loads lazily.

Each model module registers itself here with a :class:`ModelInfo`. This file imports no torch,
so ``import pipeline`` and suite validation stay fast. A duplicate name is an error, never an
overwrite.

Search spaces are plain data (``{"lr": {"loguniform": [1e-4, 1e-2]}}``) so that suites can override
them in YAML and the harness turns them into Ray Tune domains.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Family = Literal["torch", "gbdt"]

# The training recipe shared by every torch model (pipeline.train.loop); each can be searched.
TORCH_TRAINING_DEFAULTS: dict[str, Any] = {
    "lr": 1e-3,
    "weight_decay": 1e-5,
    "batch_size": 256,
    "max_epochs": 100,
    "patience": 8,
    "warmup_frac": 0.05,
    "clip_norm": 1.0,
    "amp": "auto",  # bf16 on GPUs that support it, fp16 with a scaler on older ones, off on CPU
}
TORCH_TRAINING_SPACE: dict[str, Any] = {
    "lr": {"loguniform": [1e-4, 3e-3]},
    "weight_decay": {"loguniform": [1e-6, 1e-3]},
}


@dataclass(frozen=True)
class ModelInfo:
    name: str
    display_name: str
    family: Family
    description: str
    builder: str  # "module:attribute" — a torch nn.Module class or a gbdt adapter, imported on use
    defaults: Mapping[str, Any]
    space: Mapping[str, Any]
    attention: bool = False
    gpu: bool = True
    paper: str = ""
    notes: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def all_defaults(self) -> dict[str, Any]:
        """Architecture defaults plus, for torch models, the training recipe's."""
        base = dict(TORCH_TRAINING_DEFAULTS) if self.family == "torch" else {}
        base.update(self.defaults)
        return base

    @property
    def full_space(self) -> dict[str, Any]:
        base = dict(TORCH_TRAINING_SPACE) if self.family == "torch" else {}
        base.update(self.space)
        return base

    def check_space_keys(self, space: Mapping[str, Any], fixed: Mapping[str, Any]) -> None:
        known = self.all_defaults
        for where, keys in (("space", space), ("fixed", fixed)):
            unknown = sorted(set(keys) - set(known))
            if unknown:
                raise ValueError(
                    f"model {self.name!r}: unknown {where} key(s) {unknown}; allowed: {', '.join(sorted(known))}"
                )

    def load(self) -> Any:
        module, attr = self.builder.split(":")
        return getattr(importlib.import_module(module), attr)


REGISTRY: dict[str, ModelInfo] = {}

_INFO_KEYS = {f for f in ModelInfo.__dataclass_fields__ if f != "builder"} | {"class"}


def register(info: ModelInfo) -> ModelInfo:
    """Add a model; a duplicate name or a search key without a default is an error."""
    if info.name in REGISTRY:
        raise ValueError(f"model {info.name!r} is registered twice")
    unknown = set(info.space) - set(info.all_defaults)
    if unknown:
        raise ValueError(f"model {info.name!r}: space keys without a default: {sorted(unknown)}")
    REGISTRY[info.name] = info
    return info


def get(name: str) -> ModelInfo:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; registered: {', '.join(sorted(REGISTRY))}") from None


def _read_info(path: Path) -> dict[str, Any] | None:
    """The module's literal ``INFO = {...}``, read with ``ast`` so that torch is not imported."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "INFO" for t in node.targets):
            try:
                info = ast.literal_eval(node.value)
            except ValueError as err:
                raise ValueError(f"{path.name}: INFO must be a literal dict ({err})") from None
            unknown = set(info) - _INFO_KEYS
            if unknown:
                raise ValueError(f"{path.name}: unknown INFO keys {sorted(unknown)}")
            return dict(info)
    return None


def _discover() -> None:
    """Register every module of this package that declares ``INFO``: a new model is one new module."""
    for path in sorted(Path(__file__).parent.glob("*.py")):
        info = _read_info(path)
        if info is None:
            continue
        cls = info.pop("class")
        register(ModelInfo(builder=f"pipeline.models.{path.stem}:{cls}", **info))


_discover()
