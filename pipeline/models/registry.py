"""The model registry: each model's name → its declaration and the Learner class that trains it.

Where models come from (``ModelInfo.source``):

- **attnbench**: a torch model is one module of :mod:`pipeline.models` declaring ``INFO`` beside its
  ``nn.Module`` (trained by :class:`pipeline.learners.torch.TorchLearner`); any other model is a Learner
  of :mod:`pipeline.learners` that gives itself a ``name``: its class attributes are its declaration
  (:func:`from_learner`).
- **an installed package**: an entry point in the ``attnbench.models`` group names a module (or a
  ``module:Class`` in it) that declares ``INFO`` the same way (``pip install`` is enough).
- **a suite file**: a model entry with ``builder: package.module:Class`` (a torch ``nn.Module``) or
  ``learner: package.module:Class`` (a Learner subclass) declares a model of its own
  (:func:`declared`).

Discovery happens on first use, not at import: importing this module imports no learner, no torch
and no pandas; the first question that needs the models (:func:`get`, :data:`REGISTRY`,
:data:`NOT_INSTALLED`, :data:`PROBLEMS`, :func:`kind_of`, :func:`switches`) finds them, once per
process. The torch modules' INFO dicts and constructors are read with ``ast``, so discovery imports no
torch; the Learners of :mod:`pipeline.learners` are imported then (by path: they import their
libraries, torch and the boosting ones, only inside ``fit``), so suite validation imports no torch
either. A Learner class is asked every per-model question (:meth:`ModelInfo.learner_class`): its
capabilities, its whole default configuration and search space, the libraries it needs. A duplicate
name is an error, never an overwrite.

``defaults`` are the builder's own arguments (a torch model's architecture, a library's parameters):
a torch model states them once, as its constructor's keyword defaults, and INFO keeps what the
signature cannot say (its name, kind, class, space, training overrides, paper, notes and ablation
switches). ``training`` overrides the torch training recipe's defaults for one model; ``ablations``
names the switches that turn one of a model's parts off, for the claims (:class:`Switch`). Search
spaces are plain data (``{"lr": {"loguniform": [1e-4, 1e-2]}}``) so that suites can override them in
YAML.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.models.import_paths import ImportPathError, checked_class, load_path
from pipeline.models.kinds import KINDS, family_of
from pipeline.models.model_file import declares_learner, module_info, read_info
from pipeline.models.values import is_number, not_a_number

TORCH_LEARNER = "pipeline.learners.torch:TorchLearner"
ENTRY_POINTS = "attnbench.models"


def check_declared_kind(builder: str | None, kind: str | None) -> None:
    """A suite entry's ``builder`` must say what kind of model it is (an attention model left to the
    default would be reported as another network): by the entry's ``kind``, or by the ``INFO`` its
    class's module declares for it. A ``learner`` declares its own."""
    if builder is None or kind is not None or module_info(builder, _INFO_KEYS).get("kind"):
        return
    raise ValueError(f"builder {builder!r} needs a 'kind': one of {', '.join(KINDS)} (the report's families: "
                     f"{', '.join(KINDS.values())}), or a word of your own")


@dataclass(frozen=True)
class Switch:
    """An ablation switch a model declares (INFO's ``ablations``, by the claim's word for it: ``se``,
    ``cross``, ``warmup``): the configuration key that turns one of its parts off and the value that
    does; any other value leaves the part on, and so does a configuration without the key (it ran the
    model's default, which has the part: tests/models/test_architectures.py checks it). ``needs``: the
    model's other switches that must be on for its cells to test this one (its SE is tested with
    cross-attention only)."""

    key: str
    off: Any
    needs: tuple[str, ...] = ()

    def on(self, config: Mapping[str, Any]) -> bool:
        return self.key not in config or config[self.key] != self.off


@dataclass(frozen=True)
class ModelInfo:
    name: str
    display_name: str
    kind: str  # attention | network | boosting | trees | what a user declares
    description: str
    builder: str  # "module:attribute": the torch nn.Module class, or the Learner itself, imported on use
    learner: str  # "module:attribute": the Learner class that trains it
    defaults: Mapping[str, Any]
    space: Mapping[str, Any]
    training: Mapping[str, Any] = field(default_factory=dict)  # torch: this model's recipe defaults
    quick: Mapping[str, Any] = field(default_factory=dict)  # overrides that make a fit tiny (a worker's warm-up)
    paper: str = ""
    notes: str = ""
    protocol: str = ""  # where the model leaves the shared protocol (the report lists it beside the answer)
    ablations: Mapping[str, Switch] = field(default_factory=dict)  # the claims' switches the model has
    source: str = "attnbench"  # attnbench | package <dist> | suite <file>

    @property
    def attention(self) -> bool:
        return self.kind == "attention"

    @property
    def family(self) -> str:
        """The kind in words: the report's family name."""
        return family_of(self.kind)

    def load(self) -> Any:
        return load_path(self.builder)

    def learner_class(self) -> Any:
        """The Learner class (imported on first use; importing it imports no torch or library)."""
        return load_path(self.learner)

    @property
    def capabilities(self) -> Any:
        """What the model can do (:class:`pipeline.learners.base.Capabilities`), as its Learner declares."""
        return self.learner_class().capabilities

    def config_defaults(self) -> dict[str, Any]:
        """Every configurable key with its default (a torch model's also has the recipe's)."""
        return dict(self.learner_class().config_defaults(self))

    def search_space(self) -> dict[str, Any]:
        return dict(self.learner_class().search_space(self))

    def task_defaults(self, task_type: str) -> dict[str, Any]:
        """Defaults that differ by task (binary, multiclass, regression), on top of ``config_defaults``."""
        return dict(self.learner_class().task_defaults(self, task_type))

    def quick_config(self) -> dict[str, Any]:
        """What makes a fit tiny (a worker's warm-up)."""
        return dict(self.learner_class().quick_config(self))

    def check_keys(self, space: Mapping[str, Any], fixed: Mapping[str, Any]) -> None:
        """A suite entry's space and fixed keys must be the model's; the error lists the allowed ones.
        A key whose default is a number takes numbers only (fixed, pinned in the space, or among its
        choices): text such as a quoted ``'1e-3'`` is refused here rather than by the library mid-trial."""
        known = self.config_defaults()
        for where, keys in (("space", space), ("fixed", fixed)):
            unknown = sorted(set(keys) - set(known))
            if unknown:
                raise ValueError(f"model {self.name!r}: unknown {where} key(s) {unknown}; allowed: "
                                 f"{', '.join(sorted(known))}")
        words = getattr(self.learner_class(), "choices", {})
        for where, values in (("space", space), ("fixed", fixed)):
            for key, value in values.items():
                given = value.get("choice", []) if isinstance(value, dict) else [value]
                if key in words and isinstance(given, list):
                    wrong = [v for v in given if v not in words[key]]
                    if wrong:
                        raise ValueError(f"model {self.name!r}: {where}.{key}: {wrong[0]!r} is not one of "
                                         f"{', '.join(words[key])}")
                if not is_number(known[key]) or not isinstance(given, list):
                    continue  # a domain's bounds are check_domain's
                at = f"{where}.{key}" + (".choice" if isinstance(value, dict) else "")
                bad = [v for v in given if isinstance(v, str | bool)]
                if bad:
                    raise ValueError(f"model {self.name!r}: {at}: {not_a_number(bad[0])} (its default is "
                                     f"{known[key]!r})")
                # 1e3 is a float in YAML: where our default is a count (a registered model's, or the training
                # recipe's), a whole float is that count written so. (A constructor's own `dropout=0` is not.)
                ours = self.source == "attnbench" or key not in self.defaults
                whole = [v for v in given if ours and isinstance(known[key], int) and isinstance(v, float)
                         and v.is_integer()]
                if whole:
                    raise ValueError(f"model {self.name!r}: {at}: {whole[0]!r} is a float and {key} is a whole "
                                     f"number (its default is {known[key]!r}); write {int(whole[0])}")


# Found on first use (module __getattr__ below), never at import:
REGISTRY: dict[str, ModelInfo]  # every registered model by name
NOT_INSTALLED: dict[str, str]  # this package's models whose optional packages are absent → the packages
PROBLEMS: list[str]  # installed packages' models that could not be registered, and why

_INFO_KEYS = {f for f in ModelInfo.__dataclass_fields__ if f not in ("builder", "source")} | {"class"}


@dataclass
class _Found:
    models: dict[str, ModelInfo] = field(default_factory=dict)
    not_installed: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


_found: _Found | None = None
_finding = threading.RLock()  # one discovery per process, whichever thread asks first
_discovering = False


def _discovered() -> _Found:
    """The models of this package and of installed packages, discovered on the first call."""
    global _found, _discovering
    if _found is None:
        with _finding:
            if _found is None:
                if _discovering:
                    raise RuntimeError("the registry was asked for a model while it discovers them (a learner "
                                       "module that asks it at import)")
                _discovering = True
                try:
                    _found = _discover()
                finally:
                    _discovering = False
    return _found


def __getattr__(name: str) -> Any:
    """:data:`REGISTRY`, :data:`NOT_INSTALLED` and :data:`PROBLEMS`, discovered on first use."""
    if name == "REGISTRY":
        return _discovered().models
    if name == "NOT_INSTALLED":
        return _discovered().not_installed
    if name == "PROBLEMS":
        return _discovered().problems
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _add(models: dict[str, ModelInfo], info: ModelInfo) -> ModelInfo:
    if info.name in models:
        raise ValueError(f"model {info.name!r} is registered twice ({models[info.name].source}; {info.source})")
    models[info.name] = info
    return info


def register(info: ModelInfo) -> ModelInfo:
    """Add a model; a duplicate name is an error (it names where both come from)."""
    return _add(_discovered().models, info)


def listing_order(info: ModelInfo) -> tuple[int, str, str]:
    """Our kinds first, in their order, then users' own kinds; by name within a kind."""
    order = list(KINDS)
    return (order.index(info.kind) if info.kind in order else len(order), info.kind, info.name)


def kind_of(name: str) -> str:
    """A registered model's kind, 'unknown' for a name the registry does not have (never a guess)."""
    info = _discovered().models.get(name)
    return info.kind if info is not None else "unknown"


def switches(name: str) -> Mapping[str, Switch]:
    """A registered model's ablation switches (none for a name the registry does not have)."""
    info = _discovered().models.get(name)
    return info.ablations if info is not None else {}


def with_switch(switch: str) -> list[str]:
    """The registered models that declare the ablation switch ``switch``, by name."""
    return sorted(name for name, info in _discovered().models.items() if switch in info.ablations)


def own_of_kind(kind: str) -> list[str]:
    """attnbench's own registered models of ``kind`` (not an installed package's nor a suite's), by name."""
    return sorted(name for name, info in _discovered().models.items() if info.kind == kind and info.source == "attnbench")


def get(name: str) -> ModelInfo:
    models = _discovered().models
    try:
        return models[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; registered: {', '.join(sorted(models))}") from None


def _switches(declared: Mapping[str, Any], where: str) -> dict[str, Switch]:
    """INFO's ``ablations`` (switch → ``{key, off, needs}``) as :class:`Switch` es."""
    out = {}
    for name, s in declared.items():
        if not isinstance(s, dict) or not {"key", "off"} <= set(s) <= {"key", "off", "needs"}:
            raise ValueError(f"{where}: ablations.{name} must give 'key' and 'off' (and 'needs', a list of the "
                             f"model's other switches), not {s!r}")
        out[name] = Switch(key=s["key"], off=s["off"], needs=tuple(s.get("needs", ())))
    unknown = sorted({n for s in out.values() for n in s.needs} - set(out))
    if unknown:
        raise ValueError(f"{where}: ablations need switches the model does not declare: {unknown}")
    return out


def from_info(info: dict[str, Any], module: str, *, learner: str | None, source: str) -> ModelInfo:
    """A model declared by a module's INFO dict (``class`` names its class in ``module``); ``learner``:
    the Learner that trains it when INFO does not say (None: the class is the Learner)."""
    info = dict(info)
    builder = f"{module}:{info.pop('class')}"
    learner = info.pop("learner", None) or learner or builder
    info.setdefault("display_name", info["name"])
    info.setdefault("description", "")
    info.setdefault("kind", "network" if learner == TORCH_LEARNER else "other")
    info.setdefault("defaults", {})
    info.setdefault("space", {})
    info["ablations"] = _switches(info.get("ablations", {}), builder)
    return ModelInfo(builder=builder, learner=learner, source=source, **info)


def from_learner(cls: Any, path: str, *, source: str, name: str | None = None, kind: str | None = None,
                 defaults: Mapping[str, Any] | None = None, space: Mapping[str, Any] | None = None,
                 display_name: str | None = None, description: str | None = None) -> ModelInfo:
    """The model a Learner class declares in its class attributes (``path``: its import path); the
    keyword arguments are a suite entry's, on top of the class's."""
    return ModelInfo(name=name or cls.name, display_name=display_name or cls.display_name or name or cls.name,
                     kind=kind or cls.kind, description=description or cls.description or _own_doc(cls),
                     builder=cls.builder or path, learner=path,
                     defaults={**cls.defaults, **(defaults or {})}, space={**cls.space, **(space or {})},
                     training=dict(cls.training), quick=dict(cls.quick), paper=cls.paper, protocol=cls.protocol,
                     source=source)


def _discover() -> _Found:
    """The models of this package (the torch modules' INFO and constructors, the Learners' class
    attributes), then those of installed packages' entry points. A model of this package whose optional
    packages are not installed is not registered: `attnbench models` says how to add it."""
    found = _Found()
    root = Path(__file__).parent.parent
    for path in sorted((root / "models").glob("*.py")):
        info = read_info(path, _INFO_KEYS)
        if info is not None:
            _add(found.models, from_info(info, f"pipeline.models.{path.stem}", learner=TORCH_LEARNER,
                                         source="attnbench"))
    for path in sorted((root / "learners").glob("*.py")):
        for cls_name in declares_learner(path):
            learner = f"pipeline.learners.{path.stem}:{cls_name}"
            cls = load_path(learner)
            requires = getattr(cls, "requires", ())
            if requires and not all(importlib.util.find_spec(m) is not None for m in requires):
                found.not_installed[cls.name] = ", ".join(requires)  # an optional extra's model, its package absent
                continue
            _add(found.models, from_learner(cls, learner, source="attnbench"))
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINTS):
        try:  # a broken package leaves the others usable; `attnbench models` says what went wrong
            _add(found.models, _from_entry_point(ep))
        except (ValueError, SyntaxError, OSError) as err:
            found.problems.append(f"entry point {ep.name!r} ({ep.value}): {err}")
    return found


def _from_entry_point(ep: Any) -> ModelInfo:
    """An entry point names a module that declares ``INFO`` (``module`` or ``module:Class``)."""
    dist = ep.dist.name if getattr(ep, "dist", None) is not None else "?"
    module = ep.value.partition(":")[0]
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ValueError(f"entry point {ep.name!r} of {dist}: module {module!r} not found")
    info = read_info(Path(spec.origin), _INFO_KEYS)
    if info is None:
        raise ValueError(f"entry point {ep.name!r} of {dist}: module {module!r} declares no INFO")
    return from_info(info, module, learner=TORCH_LEARNER if "learner" not in info else None,
                     source=f"package {dist}")


def _own_doc(cls: Any) -> str:
    """The first line of the class's own docstring (not one it inherits)."""
    return str(cls.__dict__.get("__doc__") or "").strip().split("\n")[0]


@functools.lru_cache(maxsize=256)
def _declared(key: str) -> ModelInfo:
    d = json.loads(key)
    name, builder, learner, source = d["name"], d["builder"], d["learner"], d["source"]
    if builder:
        cls = checked_class("builder", builder)
        params = inspect.signature(cls).parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
        missing = [a for a in ("n_num", "cat_cardinalities", "d_out") if a not in params and not takes_all]
        if missing:
            raise ImportPathError(f"{builder!r} does not take {', '.join(missing)}: a model's constructor takes "
                                  "n_num, cat_cardinalities, d_out and its own hyperparameters")
        unknown = [k for k in d["defaults"] if k not in params and not takes_all]
        if unknown:
            raise ImportPathError(f"defaults {unknown}: {builder!r} takes no such argument")
        own = {k: p.default for k, p in params.items() if k not in ("n_num", "cat_cardinalities", "d_out")
               and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty}
        required = [k for k, p in params.items() if k not in ("n_num", "cat_cardinalities", "d_out")
                    and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
                    and k not in d["defaults"]]
        if required:
            raise ImportPathError(f"{builder!r} needs {', '.join(required)}: give them under 'defaults'")
        info = module_info(builder, _INFO_KEYS)  # the module's INFO for this class, where it declares one
        return ModelInfo(name=name, display_name=d["display_name"] or info.get("display_name") or name,
                         kind=d["kind"] or info.get("kind") or "network",
                         description=d["description"] or info.get("description") or _own_doc(cls),
                         builder=builder, learner=TORCH_LEARNER,
                         defaults={**own, **info.get("defaults", {}), **d["defaults"]},
                         space={**info.get("space", {}), **d["space"]}, training=info.get("training", {}),
                         quick=info.get("quick", {}), paper=info.get("paper", ""),
                         ablations=_switches(info.get("ablations", {}), builder), source=source)
    cls = checked_class("learner", learner)
    return from_learner(cls, learner, source=source, name=name, kind=d["kind"], defaults=d["defaults"],
                        space=d["space"], display_name=d["display_name"], description=d["description"])


def by_path(path: str) -> ModelInfo:
    """The model an import path names, as a suite entry's ``builder:`` or ``learner:`` declares it:
    a Learner subclass is its own model's Learner, a torch ``nn.Module`` class is trained with our
    recipe (the scikit-learn estimators take a model so: ``TabularClassifier("pkg.mod:Class")``)."""
    cls = load_path(path)
    learner = inspect.isclass(cls) and hasattr(cls, "capabilities") and callable(getattr(cls, "fit", None))
    if learner:
        return declared(path, learner=path, source=f"import path {path}")
    return declared(path, builder=path, source=f"import path {path}")


def declared(name: str, *, builder: str | None = None, learner: str | None = None, kind: str | None = None,
             defaults: Mapping[str, Any] | None = None, space: Mapping[str, Any] | None = None,
             display_name: str | None = None, description: str | None = None, source: str = "suite") -> ModelInfo:
    """A model a suite entry declares by import path: ``builder`` (a torch ``nn.Module`` whose
    constructor takes ``n_num, cat_cardinalities, d_out`` and its hyperparameters, trained with our
    recipe) or ``learner`` (a Learner subclass, for anything else). Its defaults: the constructor's
    (or the Learner's ``defaults``), then the entry's. Raises :class:`ImportPathError` with what is
    wrong. Not added to :data:`REGISTRY`: it belongs to its suite."""
    if (builder is None) == (learner is None):
        raise ImportPathError("give one of 'builder' (a torch nn.Module) and 'learner' (a Learner subclass)")
    key = json.dumps({"name": name, "builder": builder, "learner": learner, "kind": kind, "defaults": dict(defaults or {}),
                      "space": dict(space or {}), "display_name": display_name, "description": description,
                      "source": source}, sort_keys=True, default=str)
    return _declared(key)
