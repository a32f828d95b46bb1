"""A suite's model entry, resolved once per run into what every trial of its cells needs.

The registry (:mod:`pipeline.models.registry`) knows a model's builder arguments and search space;
the torch training recipe (:mod:`pipeline.train.recipe`) knows its own keys; a suite entry
(:class:`pipeline.spec.ModelSpec`) narrows the space and fixes values. :func:`resolve` puts the three
together into a :class:`ResolvedModel` that travels with each cell to the workers, so no layer looks
a model up again. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.models.registry import ModelInfo, get
from pipeline.train.recipe import TRAINING_DEFAULTS, TRAINING_SPACE

if TYPE_CHECKING:
    from pipeline.spec import ModelSpec


def model_defaults(info: ModelInfo) -> dict[str, Any]:
    """Every configurable key of a model with its default: for torch models the recipe's, then the
    model's own training defaults, then its architecture's; for boosting the library parameters."""
    if info.family == "torch":
        return {**TRAINING_DEFAULTS, **info.training, **info.defaults}
    return dict(info.defaults)


def model_space(info: ModelInfo) -> dict[str, Any]:
    """The model's default search space (torch models also search the recipe's learning rate and
    weight decay)."""
    return {**TRAINING_SPACE, **info.space} if info.family == "torch" else dict(info.space)


def check_keys(info: ModelInfo, space: Mapping[str, Any], fixed: Mapping[str, Any]) -> None:
    """A suite entry's space and fixed keys must be the model's; the error lists the allowed ones."""
    known = model_defaults(info)
    for where, keys in (("space", space), ("fixed", fixed)):
        unknown = sorted(set(keys) - set(known))
        if unknown:
            raise ValueError(f"model {info.name!r}: unknown {where} key(s) {unknown}; allowed: {', '.join(sorted(known))}")


@dataclass(frozen=True)
class ResolvedModel:
    """One model entry of a suite, resolved: its entry, its registry info, its keys' defaults and its
    search space (both with the suite's overrides)."""

    key: str  # its name in the results: the suite's label, or the registered name
    spec: ModelSpec
    info: ModelInfo
    defaults: Mapping[str, Any]  # every key → its default, the suite's scalar space entries and fixed values applied
    space: Mapping[str, Any]  # searched keys → domain (data), or a scalar the suite pinned

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def family(self) -> str:
        return self.info.family

    @property
    def attention(self) -> bool:
        return self.info.attention

    def config(self, suggestion: Mapping[str, Any]) -> dict[str, Any]:
        """A trial's whole configuration: the defaults with the searcher's suggestion on top."""
        return {**self.defaults, **suggestion}


def resolve(spec: ModelSpec) -> ResolvedModel:
    info = get(spec.name)
    pinned = {k: v for k, v in spec.space.items() if not isinstance(v, dict)}
    return ResolvedModel(key=spec.key, spec=spec, info=info,
                         defaults={**model_defaults(info), **pinned, **spec.fixed},
                         space={**model_space(info), **spec.space})


def resolve_name(name: str, **overrides: Any) -> ResolvedModel:
    """A registered model with no suite entry (a notebook, the scikit-learn estimators): its
    defaults, ``overrides`` fixed on top."""
    from pipeline.spec import ModelSpec

    return resolve(ModelSpec(name=name, fixed=overrides))
