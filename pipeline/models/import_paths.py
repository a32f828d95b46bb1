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


CODE_FILES_MAX = 2000  # a package with more Python files than this is hashed by its version and module only


def code_digest(path: str) -> dict[str, Any]:
    """What identifies the code behind ``module:Class`` when it comes from outside attnbench: the
    sha256 of the Python files of its top-level package (or of its module, when that is a single file
    or the package is huge), with the installed distribution's version where there is one. Read from
    disk, so that an edit counts even in a process that imported the old code."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    module = path.partition(":")[0]
    load_path(path)  # imports it (and puts the working directory on the path, as a run does)
    top = module.split(".")[0]
    mod_file = getattr(sys.modules[module], "__file__", None)
    pkg_paths = list(getattr(sys.modules[top], "__path__", []) or [])
    files: list[Path] = []
    root: Path | None = None
    if pkg_paths:
        root = Path(pkg_paths[0])
        files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    if not files or len(files) > CODE_FILES_MAX:
        files = [Path(mod_file)] if mod_file else []
        root = files[0].parent if files else None
    dists = packages_distributions().get(top, [])
    versions = {}
    for d in dists:
        with contextlib.suppress(PackageNotFoundError):
            versions[d] = version(d)
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(root) if root else f.name).encode())
        h.update(f.read_bytes())
    h.update(json.dumps(versions, sort_keys=True).encode())
    return {"path": path, "package": top, "versions": versions, "files": len(files), "digest": h.hexdigest()[:16]}
