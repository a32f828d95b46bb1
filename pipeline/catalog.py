"""What a suite can name, listed and checked: ``attnbench models`` (every model, its kind, origin and
capabilities, an in-context model's weights) and ``attnbench suites check`` (a suite file's problems
before any data is read), and the problems ``run`` refuses a suite for before it writes anything."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import AttnbenchError

if TYPE_CHECKING:
    from pipeline.spec import SuiteSpec


def cmd_models(args: argparse.Namespace) -> int:
    """Every model a run can name: the registered ones (this package's and installed packages'), and
    with a suite file, the models it declares by import path; each with its kind, where it comes from
    and what its Learner says it can do."""
    from pipeline.models.registry import NOT_INSTALLED, PROBLEMS, REGISTRY, ModelInfo, listing_order
    from pipeline.spec import load_suite

    infos: list[tuple[ModelInfo, str, dict[str, Any]]] = [(i, i.source, i.config_defaults()) for i in REGISTRY.values()]
    if args.suite:  # the suite's own models; weights are looked for where its entries say (their fixed keys)
        suite = load_suite(args.suite)
        fixed = {m.name: dict(m.fixed) for m in suite.models if not (m.builder or m.learner)}
        infos = [(i, src, {**config, **fixed.get(i.name, {})}) for i, src, config in infos]
        infos += [(m.model_info(), f"{args.suite} ({m.builder or m.learner})",
                   {**m.model_info().config_defaults(), **m.fixed}) for m in suite.models if m.builder or m.learner]
    infos.sort(key=lambda t: listing_order(t[0]))
    rows = [("model", "kind", "from", "can", "description")]
    for info, source, config in infos:
        caps = info.capabilities
        methods: tuple[str, ...] = ()
        if caps.compress:  # the methods that change the model at its defaults (built on a tiny input; torch)
            from pipeline.learners.compression import applicable

            methods = applicable(info)
        learner = info.learner_class()
        weights = (f"in-context; weights: {learner.weights_status(config)}"
                   if caps.in_context and hasattr(learner, "weights_status") else "in-context" if caps.in_context else "")
        can = ", ".join(filter(None, ["GPU" if caps.gpu else "CPU only",
                                      f"ASHA on {caps.rungs}" if caps.rungs else "no rungs",
                                      "DDP" if caps.distributed else "",
                                      f"compress ({', '.join(methods)})" if methods else "", weights]))
        rows.append((info.name, info.family, source, can, info.description))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(f"{v:{w}s}" for v, w in zip(r, widths)) + "  " + r[4])
    for name, packages in sorted(NOT_INSTALLED.items()):
        print(f"not installed: {name} (needs {packages}: pip install -e '.[fm]')")
    for problem in PROBLEMS:
        print(f"not registered: {problem}", file=sys.stderr)
    return 0


def compress_problems(suite: SuiteSpec) -> list[str]:
    """The model entries whose ``compress`` asks for a method that would change none of their
    architectures (known before any data is read; imports torch only for an entry with ``compress``)."""
    from pipeline.learners.resolve import compress_problem, resolve

    return [f"model {m.key!r}: {problem}" for m in suite.models if m.compress and (problem := compress_problem(resolve(m)))]


def weights_problems(suite: SuiteSpec) -> list[str]:
    """The in-context model entries with no weights to load (or without their package): a run refuses
    them before it writes anything, rather than record a failed download in every cell."""
    from pipeline.learners.resolve import build_problem, resolve

    return [p for m in suite.models if m.model_info().capabilities.in_context and (p := build_problem(resolve(m)))]


def suite_problems(suite: SuiteSpec) -> list[str]:
    """What a valid suite file would still fail on at run time: a dataset file that is not there, a
    model whose fixed architecture cannot be built."""
    from pipeline.learners.resolve import build_problem, resolve
    from pipeline.suite_datasets import LocalFile

    out = [f"dataset file {d.file} does not exist" for d in suite.datasets
           if isinstance(d, LocalFile) and not Path(d.file).is_file() and d.openml_id is None]
    out += [problem for m in suite.models if (problem := build_problem(resolve(m)))]
    return out


def cmd_suites(args: argparse.Namespace) -> int:
    from pipeline.errors import SpecError
    from pipeline.spec import default_suite_path, load_suite
    from pipeline.suite_datasets import LocalFile

    if args.files:
        paths = list(args.files)
    else:
        folder = default_suite_path().parent
        paths = sorted(str(p) for p in folder.glob("*.yaml"))
        if not paths:
            raise AttnbenchError(f"suites check: no suite files in {folder}; name the files to check")
    bad = 0
    for p in paths:  # every file, reporting each problem, before the exit code says how it went
        try:
            s = load_suite(p)
        except SpecError as err:
            bad += 1
            print(f"attnbench: error: {err}", file=sys.stderr)
            continue
        found = suite_problems(s)
        if found:
            bad += 1
            for problem in found:
                print(f"attnbench: error: {p}: {problem}", file=sys.stderr)
            continue
        print(f"{p}: ok — {s.name}: {len(s.datasets)} dataset entries, {len(s.models)} models")
        for d in s.datasets:
            if isinstance(d, LocalFile) and not Path(d.file).is_file():
                print(f"  note: {d.file} is not there; a run takes its rows from OpenML dataset {d.openml_id}"
                      + (f" and refuses any but checksum {d.checksum}" if d.checksum else ""))
    if bad:
        print(f"attnbench: {bad} of {len(paths)} suite files have problems", file=sys.stderr)
    return 2 if bad else 0
