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

The torch modules' INFO dicts are read with ``ast``, so this file imports no torch; the Learners of
:mod:`pipeline.learners` are imported (by path: they import their libraries, torch and the boosting
ones, only inside ``fit``), so suite validation imports no torch either. A Learner class is asked
every per-model question (:meth:`ModelInfo.learner_class`): its capabilities, its whole default
configuration and search space, the libraries it needs. A duplicate name is an error, never an
overwrite.

``defaults`` are the builder's own arguments (a torch model's architecture, a library's parameters);
``training`` overrides the torch training recipe's defaults for one model. Search spaces are plain
data (``{"lr": {"loguniform": [1e-4, 1e-2]}}``) so that suites can override them in YAML.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.models.import_paths import ImportPathError, checked_class, load_path
from pipeline.models.kinds import KINDS, family_of

TORCH_LEARNER = "pipeline.learners.torch:TorchLearner"
ENTRY_POINTS = "attnbench.models"


def check_declared_kind(builder: str | None, kind: str | None) -> None:
    """A suite entry's ``builder`` must say what kind of model it is (an attention model left to the
    default would be reported as another network): by the entry's ``kind``, or by the ``INFO`` its
    class's module declares for it. A ``learner`` declares its own."""
    if builder is None or kind is not None or _module_info(builder).get("kind"):
        return
    raise ValueError(f"builder {builder!r} needs a 'kind': one of {', '.join(KINDS)} (the report's families: "
                     f"{', '.join(KINDS.values())}), or a word of your own")


def number_text(value: Any) -> bool:
    """Whether ``value`` is text that reads as a number (``'1e-4'``, quoted in YAML)."""
    if not isinstance(value, str) or not any(c.isdigit() for c in value):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def not_a_number(value: Any) -> str:
    """Why ``value`` is not a number, in words; for text that reads as one, how to write it as one.

    >>> not_a_number("1e-4")
    "'1e-4' is text, not a number; write it without quotes (1e-4)"
    """
    if isinstance(value, str):
        hint = f"; write it without quotes ({value.strip()})" if number_text(value) else ""
        return f"{value!r} is text, not a number{hint}"
    what = "true or false" if isinstance(value, bool) else "empty" if value is None else f"a {type(value).__name__}"
    return f"{value!r} is {what}, not a number"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
                if not _is_number(known[key]) or not isinstance(given, list):
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


REGISTRY: dict[str, ModelInfo] = {}
PROBLEMS: list[str] = []  # installed packages' models that could not be registered, and why

_INFO_KEYS = {f for f in ModelInfo.__dataclass_fields__ if f not in ("builder", "source")} | {"class"}


def register(info: ModelInfo) -> ModelInfo:
    """Add a model; a duplicate name is an error (it names where both come from)."""
    if info.name in REGISTRY:
        raise ValueError(f"model {info.name!r} is registered twice ({REGISTRY[info.name].source}; {info.source})")
    REGISTRY[info.name] = info
    return info


def listing_order(info: ModelInfo) -> tuple[int, str, str]:
    """Our kinds first, in their order, then users' own kinds; by name within a kind."""
    order = list(KINDS)
    return (order.index(info.kind) if info.kind in order else len(order), info.kind, info.name)


def kind_of(name: str) -> str:
    """A registered model's kind, 'unknown' for a name the registry does not have (never a guess)."""
    info = REGISTRY.get(name)
    return info.kind if info is not None else "unknown"


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


def _declares_learner(path: Path) -> list[str]:
    """The classes of a module of ``pipeline/learners`` that give themselves a ``name`` (read with ``ast``,
    so that the modules that declare no model, torch's compression among them, are not imported)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef) and any(
        isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "name" for t in s.targets)
        for s in node.body)]


# Models of this package whose optional packages are not installed (name → the packages): not
# registered; `attnbench models` says how to add them.
NOT_INSTALLED: dict[str, str] = {}


def _discover() -> None:
    """Register the models of this package (the torch modules' INFO, the Learners' class attributes),
    then those of installed packages' entry points."""
    root = Path(__file__).parent.parent
    for path in sorted((root / "models").glob("*.py")):
        info = _read_info(path)
        if info is not None:
            register(from_info(info, f"pipeline.models.{path.stem}", learner=TORCH_LEARNER, source="attnbench"))
    for path in sorted((root / "learners").glob("*.py")):
        for cls_name in _declares_learner(path):
            learner = f"pipeline.learners.{path.stem}:{cls_name}"
            cls = load_path(learner)
            requires = getattr(cls, "requires", ())
            if requires and not all(importlib.util.find_spec(m) is not None for m in requires):
                NOT_INSTALLED[cls.name] = ", ".join(requires)  # an optional extra's model, its package absent
                continue
            register(from_learner(cls, learner, source="attnbench"))
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINTS):
        try:  # a broken package leaves the others usable; `attnbench models` says what went wrong
            register(_from_entry_point(ep))
        except (ValueError, SyntaxError, OSError) as err:
            PROBLEMS.append(f"entry point {ep.name!r} ({ep.value}): {err}")


def _from_entry_point(ep: Any) -> ModelInfo:
    """An entry point names a module that declares ``INFO`` (``module`` or ``module:Class``)."""
    dist = ep.dist.name if getattr(ep, "dist", None) is not None else "?"
    module = ep.value.partition(":")[0]
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ValueError(f"entry point {ep.name!r} of {dist}: module {module!r} not found")
    info = _read_info(Path(spec.origin))
    if info is None:
        raise ValueError(f"entry point {ep.name!r} of {dist}: module {module!r} declares no INFO")
    return from_info(info, module, learner=TORCH_LEARNER if "learner" not in info else None,
                     source=f"package {dist}")


def _own_doc(cls: Any) -> str:
    """The first line of the class's own docstring (not one it inherits)."""
    return str(cls.__dict__.get("__doc__") or "").strip().split("\n")[0]


def _module_info(path: str) -> dict[str, Any]:
    """The INFO dict of the module ``path`` names, when it declares the class ``path`` names; else {}."""
    module, _, attr = path.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return {}
    info = _read_info(Path(spec.origin))
    return info if info is not None and info.get("class") == attr else {}


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
        info = _module_info(builder)  # the module's INFO for this class, where it declares one
        return ModelInfo(name=name, display_name=d["display_name"] or info.get("display_name") or name,
                         kind=d["kind"] or info.get("kind") or "network",
                         description=d["description"] or info.get("description") or _own_doc(cls),
                         builder=builder, learner=TORCH_LEARNER,
                         defaults={**own, **info.get("defaults", {}), **d["defaults"]},
                         space={**info.get("space", {}), **d["space"]}, training=info.get("training", {}),
                         quick=info.get("quick", {}), paper=info.get("paper", ""), source=source)
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


_discover()


def check_domain(key: str, dom: dict[str, Any]) -> None:
    """Validate one search-space domain written as data, e.g. ``{loguniform: [1e-4, 1e-2]}``."""
    if len(dom) != 1:
        raise ValueError(f"space.{key}: give exactly one of uniform, loguniform, int, logint, choice")
    (kind, arg), = dom.items()
    if kind == "choice":
        if not isinstance(arg, list) or not arg:
            raise ValueError(f"space.{key}.choice must be a non-empty list")
        return
    if kind not in ("uniform", "loguniform", "int", "logint"):
        raise ValueError(f"space.{key}: unknown domain {kind!r}; allowed: uniform, loguniform, int, logint, choice")
    if not (isinstance(arg, list) and len(arg) == 2):
        given = f"a list of {len(arg)}" if isinstance(arg, list) else repr(arg)
        raise ValueError(f"space.{key}.{kind} must be [low, high], two numbers, not {given}")
    for a in arg:
        if isinstance(a, bool) or not isinstance(a, int | float):
            raise ValueError(f"space.{key}.{kind} must be [low, high], two numbers: {not_a_number(a)}")
    lo, hi = arg
    if not lo < hi:
        raise ValueError(f"space.{key}.{kind}: low {lo} must be below high {hi}")
    if kind.startswith("log") and lo <= 0:
        raise ValueError(f"space.{key}.{kind}: low must be positive on a log scale")
