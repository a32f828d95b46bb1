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


KIND_WORDS = {"gbdt", "torch", "attention", "boosting", "network", "trees"}


def kind_branches(path: Path) -> list[str]:
    """Where a file decides something by a model's kind: a comparison or a condition on an attribute
    called kind, family or attention, or a comparison with a kind's name."""

    def about_kind(node: ast.AST) -> bool:
        return ((isinstance(node, ast.Attribute) and node.attr in ("kind", "family", "attention"))
                or (isinstance(node, ast.Constant) and node.value in KIND_WORDS))

    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Compare) and any(about_kind(n) for n in [node.left, *node.comparators])) or (isinstance(node, ast.If | ast.IfExp | ast.While) and about_kind(node.test)):
            out.append(f"{path.name}:{node.lineno}")
    return out


def test_only_the_learners_and_the_registry_branch_on_a_models_kind(tmp_path: Path):
    """Every per-model question outside pipeline/learners and the registry is asked of the model's
    Learner (its capabilities, defaults, space, libraries). The report groups models by the kind stored
    with each result: naming families is what it is for, so it is left out of this check."""
    checked = [p for p in PKG.rglob("*.py")
               if p.parent.name not in ("learners", "report") and p.name != "registry.py"]
    bad = [b for p in checked for b in kind_branches(p)]
    assert bad == [], f"kind branches outside the learners and the registry: {bad}"
    # The check sees the branches it is for (the code before the Learner answered these questions).
    before = "if info.family == 'torch':\n    pass\nx = 30.0 if family == 'torch' else 1.0\nif req.model.attention:\n    pass\n"
    probe = tmp_path / "before.py"
    probe.write_text(before)
    assert len(kind_branches(probe)) == 3
