"""What a model's file declares, read with ``ast`` so that nothing is imported (no torch): its literal ``INFO``,
the keyword defaults of the constructor of the class INFO names, and the Learner classes a module of
``pipeline/learners`` names."""

from __future__ import annotations

import ast
import importlib.util
import operator
from pathlib import Path
from typing import Any

INPUTS = ("n_num", "cat_cardinalities", "d_out")  # what every torch model's constructor takes from the data


def read_info(path: Path, keys: set[str]) -> dict[str, Any] | None:
    """The module's literal ``INFO = {...}``, read with ``ast`` so that torch is not imported, its
    ``defaults`` those of the constructor of the class it names (:func:`_constructor_defaults`) with
    INFO's own ``defaults``, what the signature cannot say, on top. ``keys``: the INFO keys a model may declare."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "INFO" for t in node.targets):
            try:
                info = ast.literal_eval(node.value)
            except ValueError as err:
                raise ValueError(f"{path.name}: INFO must be a literal dict ({err})") from None
            unknown = set(info) - keys
            if unknown:
                raise ValueError(f"{path.name}: unknown INFO keys {sorted(unknown)}")
            own = _constructor_defaults(tree, info.get("class"))
            return {**info, "defaults": {**own, **info.get("defaults", {})}}
    return None


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _as_data(node: ast.expr) -> Any:
    """A default written as data: a literal, or arithmetic on numbers (``4 / 3``). ValueError otherwise."""
    op = _ARITHMETIC.get(type(node.op)) if isinstance(node, ast.BinOp) else None
    if isinstance(node, ast.BinOp) and op is not None:
        left, right = _as_data(node.left), _as_data(node.right)
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right)):
            raise ValueError(f"not arithmetic on numbers: {ast.unparse(node)}")
        try:
            return op(left, right)
        except ArithmeticError as err:
            raise ValueError(f"{ast.unparse(node)}: {err}") from None
    return ast.literal_eval(node)


def _constructor_defaults(tree: ast.Module, cls_name: Any) -> dict[str, Any]:
    """The keyword defaults of the ``__init__`` of class ``cls_name`` in the module ``tree``, in the
    signature's order, the data inputs (``n_num``, ``cat_cardinalities``, ``d_out``) aside: a torch
    model's architecture defaults, stated once. A default not written as data (:func:`_as_data`) is no
    configuration value: the constructor keeps it. {} where the module defines no such class with an
    ``__init__`` of its own."""
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if cls else None
    if init is None:
        return {}
    args = init.args
    positional = [*args.posonlyargs, *args.args]
    named = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
             *zip(args.kwonlyargs, args.kw_defaults)]
    out = {}
    for arg, default in named:
        if default is None or arg.arg in INPUTS or arg in args.posonlyargs:
            continue
        try:
            out[arg.arg] = _as_data(default)
        except ValueError:
            continue
    return out


def declares_learner(path: Path) -> list[str]:
    """The classes of a module of ``pipeline/learners`` that give themselves a ``name`` (read with ``ast``,
    so that the modules that declare no model, torch's compression among them, are not imported)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef) and any(
        isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "name" for t in s.targets)
        for s in node.body)]


def module_info(path: str, keys: set[str]) -> dict[str, Any]:
    """The INFO dict of the module ``path`` names, when it declares the class ``path`` names; else {}."""
    module, _, attr = path.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return {}
    info = read_info(Path(spec.origin), keys)
    return info if info is not None and info.get("class") == attr else {}
