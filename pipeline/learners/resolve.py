"""A suite's model entry, resolved once per run into what every trial of its cells needs.

The registry (:mod:`pipeline.models.registry`) knows a model's declaration; its Learner knows the
whole default configuration and search space (a torch model's include the training recipe's keys);
a suite entry (:class:`pipeline.spec.ModelSpec`) narrows the space and fixes values, or declares a
model of its own by import path. :func:`resolve` puts them together into a :class:`ResolvedModel`
that travels with each cell to the workers, so no layer looks a model up again. Torch-free.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.models.registry import ModelInfo

if TYPE_CHECKING:
    from pipeline.learners.base import Capabilities
    from pipeline.spec import ModelSpec


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
    def kind(self) -> str:
        return self.info.kind

    @property
    def capabilities(self) -> Capabilities:
        caps: Capabilities = self.info.capabilities
        return caps

    @property
    def attention(self) -> bool:
        return self.info.attention

    def for_task(self, task_type: str) -> ResolvedModel:
        """The entry on a dataset of this task: the model's task defaults applied where the suite
        set no value of its own."""
        own = {k for k, v in self.spec.space.items() if not isinstance(v, dict)} | set(self.spec.fixed)
        extra = {k: v for k, v in self.info.task_defaults(task_type).items() if k not in own}
        return dataclasses.replace(self, defaults={**self.defaults, **extra}) if extra else self

    def config(self, suggestion: Mapping[str, Any]) -> dict[str, Any]:
        """A trial's whole configuration: the defaults with the searcher's suggestion on top."""
        return {**self.defaults, **suggestion}


def resolve(spec: ModelSpec) -> ResolvedModel:
    info = spec.model_info()
    pinned = {k: v for k, v in spec.space.items() if not isinstance(v, dict)}
    return ResolvedModel(key=spec.key, spec=spec, info=info,
                         defaults={**info.config_defaults(), **pinned, **spec.fixed},
                         space={**info.search_space(), **spec.space})


def build_problem(model: ResolvedModel) -> str | None:
    """Why a model cannot be built with any configuration of its search, asked of its Learner (a torch
    model's architecture, tried on a tiny input; imports torch: for ``suites check``), or why a
    compression method it asks for would change none of them (:func:`compress_problem`). None when one
    configuration builds (a trial whose own configuration cannot be built records its error)."""
    problem = (model.info.learner_class().build_problem(model.info, model.defaults, model.space, model.spec.fixed)
               or compress_problem(model))
    return None if problem is None else f"model {model.key!r}: {problem}"


def compress_problem(model: ResolvedModel) -> str | None:
    """Why the entry's ``compress`` asks for a method that changes no architecture of its search
    (``compress: [prune]`` on a model with no prunable layer); None when each applies to some, or it
    asks for none. Imports torch only when it asks for one."""
    if not model.spec.compress:
        return None
    from pipeline.learners.compression import compress_problem as problem

    return problem(model.info, model.defaults, model.space, model.spec.fixed, model.spec.compress)


def resolve_name(name: str, **overrides: Any) -> ResolvedModel:
    """A registered model with no suite entry (a notebook, the scikit-learn estimators): its
    defaults, ``overrides`` fixed on top."""
    from pipeline.spec import ModelSpec

    return resolve(ModelSpec(name=name, fixed=overrides))
