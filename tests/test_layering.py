"""The layers of docs/ARCHITECTURE.md, checked on the source: imports point one way."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "pipeline"


def imports(path: Path) -> set[str]:
    """Every pipeline module a file imports, at the top or inside a function (TYPE_CHECKING included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pipeline"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("pipeline"))
    return out


def files(sub: str) -> list[Path]:
    return sorted((PKG / sub).glob("*.py")) if (PKG / sub).is_dir() else [PKG / sub]


# stage → the pipeline packages it must not import
FORBIDDEN = {
    "models": ("pipeline.data", "pipeline.train", "pipeline.learners", "pipeline.engine", "pipeline.runner",
               "pipeline.report", "pipeline.spec", "pipeline.cost", "pipeline.metrics"),
    "data": ("pipeline.learners", "pipeline.runner", "pipeline.report", "pipeline.train"),
    "train": ("pipeline.learners", "pipeline.engine", "pipeline.runner", "pipeline.report"),
    "learners": ("pipeline.engine", "pipeline.runner", "pipeline.report"),
    "engine": ("pipeline.runner", "pipeline.report"),
    "report": ("pipeline.runner", "pipeline.engine.scheduler", "pipeline.learners", "pipeline.train"),
}


@pytest.mark.parametrize("stage", list(FORBIDDEN))
def test_imports_point_one_way(stage):
    bad = [(p.relative_to(PKG.parent), m) for p in files(stage) for m in sorted(imports(p))
           if any(m == f or m.startswith(f + ".") for f in FORBIDDEN[stage])]
    assert bad == [], f"{stage}/ imports against the layering: {bad}"


def test_the_runner_writes_no_sql_and_the_store_knows_no_report():
    runner = (PKG / "runner.py").read_text(encoding="utf-8")
    assert not re.search(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE)\b", runner)
    assert not any(m.startswith("pipeline.report") for m in imports(PKG / "data" / "store.py"))


def test_validating_a_suite_imports_no_torch_ray_or_boosting():
    code = ("import sys, pipeline, pipeline.spec, pipeline.cli, pipeline.models.registry, pipeline.learners, "
            "pipeline.learners.resolve; from pipeline.spec import load_suite; load_suite('suites/smoke.yaml'); "
            "from pipeline.learners.resolve import resolve; [resolve(m) for m in load_suite('suites/smoke.yaml').models]; "
            "print(','.join(m for m in ('torch', 'ray', 'plotly', 'xgboost', 'catboost') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PKG.parent).stdout.strip()
    assert out == "", f"validating a suite loaded {out}"
