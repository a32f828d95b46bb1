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


def quick_config(info: ModelInfo) -> dict[str, Any]:
    """What makes a fit of the model tiny: one epoch for torch models, the registry's ``quick`` for the
    others (a few boosting rounds). A worker's warm-up fits each model of its run so."""
    return {"max_epochs": 1, **info.quick} if info.family == "torch" else dict(info.quick)


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


def build_problem(model: ResolvedModel) -> str | None:
    """Why a torch model's architecture cannot be built with any configuration of its search
    (``fixed: {d_token: 30, n_heads: 4}``, say), tried on a tiny input: the defaults, and each searched
    architecture key at its bounds or choices. None when one of them builds (a trial whose own
    configuration cannot be built records its error). Imports torch: for ``suites check``."""
    import itertools

    if model.family != "torch":
        return None
    arch = {k: v for k, v in model.defaults.items() if k in model.info.defaults}
    options: list[list[tuple[str, Any]]] = []
    for k, dom in model.space.items():
        if k in arch and isinstance(dom, dict) and k not in model.spec.fixed:
            (kind, values), = dom.items()
            options.append([(k, v) for v in (values if kind == "choice" else values[:2])])
    first = None
    for combo in itertools.islice(itertools.chain([()], itertools.product(*options)), 64):
        try:
            model.info.load()(n_num=3, cat_cardinalities=[3], d_out=2, **{**arch, **dict(combo)})
            return None
        except Exception as err:  # the builder's own message says what is wrong
            first = first or err
    return f"model {model.key!r}: its architecture cannot be built ({type(first).__name__}: {first})"


def resolve_name(name: str, **overrides: Any) -> ResolvedModel:
    """A registered model with no suite entry (a notebook, the scikit-learn estimators): its
    defaults, ``overrides`` fixed on top."""
    from pipeline.spec import ModelSpec

    return resolve(ModelSpec(name=name, fixed=overrides))
