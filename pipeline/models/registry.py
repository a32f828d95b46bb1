"""The model registry: light metadata, defaults and search spaces; heavy code loads lazily.

A torch model is one module of this package declaring ``INFO`` beside its ``nn.Module``; a boosting
baseline is one module of :mod:`pipeline.learners` declaring ``INFO`` beside its learner. The INFO
dicts are read with ``ast``, so this file imports no torch, no boosting library and nothing of the
harness: ``import pipeline`` and suite validation stay fast. A duplicate name is an error, never an
overwrite.

``defaults`` are the builder's own arguments (a torch model's architecture, a boosting library's
parameters); ``training`` overrides the torch training recipe's defaults for one model (the recipe
itself lives with the training loop, in train/recipe.py). Search spaces are plain data
(``{"lr": {"loguniform": [1e-4, 1e-2]}}``) so that suites can override them in YAML.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Family = Literal["torch", "gbdt"]


@dataclass(frozen=True)
class ModelInfo:
    name: str
    display_name: str
    family: Family
    description: str
    builder: str  # "module:attribute" — a torch nn.Module class or a boosting learner, imported on use
    defaults: Mapping[str, Any]
    space: Mapping[str, Any]
    training: Mapping[str, Any] = field(default_factory=dict)  # torch: this model's recipe defaults
    quick: Mapping[str, Any] = field(default_factory=dict)  # overrides that make a fit tiny (a worker's warm-up)
    attention: bool = False
    gpu: bool = True
    paper: str = ""
    notes: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def load(self) -> Any:
        module, attr = self.builder.split(":")
        return getattr(importlib.import_module(module), attr)


REGISTRY: dict[str, ModelInfo] = {}

_INFO_KEYS = {f for f in ModelInfo.__dataclass_fields__ if f != "builder"} | {"class"}


def register(info: ModelInfo) -> ModelInfo:
    """Add a model; a duplicate name is an error, and so is a boosting model's search key without a
    default (a torch model's space may name the recipe's keys, which this file does not know: the
    tests check those against the recipe, tests/models/test_architectures.py)."""
    if info.name in REGISTRY:
        raise ValueError(f"model {info.name!r} is registered twice")
    if info.family == "gbdt" and info.training:
        raise ValueError(f"model {info.name!r}: 'training' defaults are for torch models")
    unknown = set(info.space) - set(info.defaults) - set(info.training)
    if info.family == "gbdt" and unknown:
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
    """Register every module that declares ``INFO``: the torch models of this package and the
    boosting learners of :mod:`pipeline.learners`. A new model is one new module."""
    root = Path(__file__).parent.parent
    for package in ("models", "learners"):
        for path in sorted((root / package).glob("*.py")):
            info = _read_info(path)
            if info is None:
                continue
            cls = info.pop("class")
            register(ModelInfo(builder=f"pipeline.{package}.{path.stem}:{cls}", **info))


_discover()
