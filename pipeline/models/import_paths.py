"""Import paths (``package.module:Class``): the object one names, whether a class fits its role (a torch
``nn.Module`` builder or a Learner), and a digest of the code behind it, so that an edit to a model from
outside attnbench makes its cells new ones. Imports neither torch nor the learners."""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class ImportPathError(ValueError):
    """An import path that does not name a class that fits the contract it must."""


def load_path(path: str) -> Any:
    """The object ``module:attribute`` names. The working directory counts as a place to import from,
    as it does for ``python -m`` and for the workers of a local Ray instance."""
    module, _, attr = path.partition(":")
    if not module or not attr:
        raise ImportPathError(f"{path!r} is not an import path; write package.module:Class")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        mod = importlib.import_module(module)
    except Exception as err:
        raise ImportPathError(f"cannot import {module!r} ({type(err).__name__}: {err})") from None
    try:
        return functools.reduce(getattr, attr.split("."), mod)
    except AttributeError:
        raise ImportPathError(f"module {module!r} has no {attr!r}") from None


def distributions_of(top: str) -> list[str]:
    """The installed distributions that provide the top-level module ``top`` (importlib.metadata's map of
    them, built once per ``sys.path``: it reads every installed package's file list, about a second each
    time, and a run asks once per model of its own and once for its provenance)."""
    return list(_distribution_map(tuple(sys.path)).get(top, []))


@functools.lru_cache(maxsize=4)
def _distribution_map(search_path: tuple[str, ...]) -> Mapping[str, list[str]]:
    from importlib.metadata import packages_distributions

    return packages_distributions()


def checked_class(role: str, path: str) -> Any:
    """The class ``path`` names, if it fits its role: a ``builder`` is a torch ``nn.Module`` class, a
    ``learner`` a Learner subclass (duck-typed: this module imports neither torch nor the learners)."""
    cls = load_path(path)
    if role == "builder":
        if not inspect.isclass(cls) or not callable(getattr(cls, "forward", None)):
            raise ImportPathError(f"{path!r} is not a torch nn.Module class (it has no forward)")
    elif not inspect.isclass(cls) or not hasattr(cls, "capabilities") or not all(
            callable(getattr(cls, m, None)) for m in ("fit", "predict", "config_defaults")):
        raise ImportPathError(f"{path!r} is not a Learner subclass (pipeline.learners.base.Learner)")
    return cls


CODE_FILES_MAX = 2000  # a module importing more files of its own code than this is hashed by these only


def _libraries() -> list[Path]:
    """Where installed libraries and the standard library live: code there is not a user's own."""
    import site
    import sysconfig

    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= set(site.getsitepackages()) | {site.getusersitepackages()}
    return [Path(r).resolve() for r in roots if r]


def _own_file(module: str, top: str, libraries: list[Path]) -> Path | None:
    """The source file of ``module`` where it is code of the same top-level package as the model's, or a
    user's own code elsewhere (neither attnbench's, nor an installed library's, nor the standard
    library's); None otherwise."""
    import importlib.util

    head = module.split(".")[0]
    if head == "pipeline":
        return None
    try:
        spec = importlib.util.find_spec(head)  # a top-level name: found without importing it
        if spec is None:
            return None
        where = spec.origin if spec.origin not in (None, "built-in", "frozen") else next(
            iter(spec.submodule_search_locations or []), None)
        if where is None or (head != top and any(Path(where).resolve().is_relative_to(lib) for lib in libraries)):
            return None  # a library's (its submodules are not looked up: that would import it)
        if module != head:
            spec = importlib.util.find_spec(module)  # imports the user's own package above it
    except (ImportError, ValueError, AttributeError):
        return None
    origin = getattr(spec, "origin", None) if spec is not None else None
    return Path(origin).resolve() if origin and origin.endswith(".py") else None


def _imports(f: Path, package: str | None) -> tuple[set[str], set[str]]:
    """The modules a file imports anywhere in it (relative imports resolved against ``package``), and
    the names of attnbench's own modules among them."""
    import ast

    tree = ast.parse(f.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = (package or "").split(".")
                parts = parts[: len(parts) - node.level + 1] if node.level > 1 else parts
                base = ".".join(p for p in [*parts, base] if p)
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # a submodule by name
    from pipeline.models.versions import module_file

    ours = {m for m in found if m == "pipeline" or m.startswith("pipeline.")}
    return found - ours, {m for m in ours if module_file(m)}


def code_digest(path: str) -> dict[str, Any]:
    """What identifies the code behind ``module:Class`` when it comes from outside attnbench: the sha256 of
    its module's file and of every module of a user's own code that it imports, transitively (imports
    inside functions too; not installed libraries, unless of the model's own package, nor the standard
    library, nor attnbench), with the installed distribution's version where there is one. Two models in
    one package each depend on what they import only: an edit to one leaves the other's cells. The
    modules of attnbench it imports are returned too (``attnbench``): their versions are the model's.
    Read from disk, so that an edit counts even in a process that imported the old code."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version

    module = path.partition(":")[0]
    load_path(path)  # imports it (and puts the working directory on the path, as a run does)
    top = module.split(".")[0]
    libraries = _libraries()
    first = getattr(sys.modules[module], "__file__", None)
    files: dict[Path, str] = {}  # file → its module
    ours: set[str] = set()
    todo = [(Path(first).resolve(), module)] if first else []
    while todo and len(files) < CODE_FILES_MAX:
        f, name = todo.pop()
        if f in files:
            continue
        files[f] = name
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        found, pipeline_modules = _imports(f, package)
        ours |= pipeline_modules
        for m in sorted(found):
            if m and (g := _own_file(m, top, libraries)) is not None and g not in files:
                todo.append((g, m))
    dists = distributions_of(top)
    versions = {}
    for d in dists:
        with contextlib.suppress(PackageNotFoundError):
            versions[d] = version(d)
    h = hashlib.sha256()
    for f, name in sorted(files.items(), key=lambda kv: kv[1]):
        h.update(name.encode())
        h.update(f.read_bytes())
    h.update(json.dumps(versions, sort_keys=True).encode())
    return {"path": path, "package": top, "versions": versions, "files": len(files),
            "modules": sorted(files.values()), "attnbench": sorted(ours), "digest": h.hexdigest()[:16]}
