"""The layers of docs/ARCHITECTURE.md, checked on the source: imports point one way."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

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


# The layers of docs/ARCHITECTURE.md, bottom first: a module may import its own layer and those below.
LAYERS = [
    ["pipeline.errors", "pipeline.metrics", "pipeline.cost", "pipeline.address", "pipeline.interrupts", "pipeline.records",
     "pipeline.predictions", "pipeline.clock", "pipeline.pricing"],
    ["pipeline.models"],
    ["pipeline.spec", "pipeline.suite_datasets", "pipeline.suite_text"],
    ["pipeline.data"],
    ["pipeline.train", "pipeline.evaluation", "pipeline.ensemble"],
    ["pipeline.learners"],
    ["pipeline.engine"],
    ["pipeline.plan", "pipeline.runner", "pipeline.provenance"],
    ["pipeline.report"],
    ["pipeline.defaults", "pipeline.query", "pipeline.pin", "pipeline.catalog", "pipeline.reference_commands", "pipeline.dry_run",
     "pipeline.cli"],
]


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    if module == "pipeline" or module.startswith("pipeline.__"):
        return 0  # the package's own __init__ and what it defines: the version, nothing else
    for i, names in enumerate(LAYERS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and to docs/ARCHITECTURE.md")


def upward(path: Path) -> list[tuple[str, str]]:
    here = layer(module_name(path))
    return [(module_name(path), m) for m in sorted(imports(path)) if layer(m) > here]


def test_every_import_points_down_or_sideways(tmp_path: Path):
    bad = [b for p in sorted(PKG.rglob("*.py")) for b in upward(p)]
    assert bad == [], f"imports against the layering (module → what it imports from above): {bad}"
    # What the check reads: imports inside functions too (the store once imported the engine's records so).
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from pipeline.engine.records import TrialRequest\n")
    assert layer(min(imports(probe))) > layer("pipeline.data.store")


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle a depth-first walk of the import graph meets (module → modules it imports)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def test_no_two_files_import_each_other_in_a_circle():
    names = {module_name(p): p for p in PKG.rglob("*.py")}
    graph = {}
    for name, path in names.items():
        # `from pipeline.x import y` names module pipeline.x.y, or y defined in pipeline.x
        graph[name] = {m if m in names else m.rsplit(".", 1)[0] for m in imports(path)} & set(names) - {name}
    # A package's __init__ that imports its own modules presents the package: not a circle.
    found = [c for c in circles(graph) if not any(c[0].startswith(m + ".") for m in c)]
    assert found == [], f"files that import each other in a circle: {found}"
    # the circle this check was written for: learners/trial.py ↔ learners/compression.py
    assert circles({"trial": {"compression"}, "compression": {"trial", "torch"}, "torch": set()}) == [
        ["compression", "trial", "compression"]]


# The report's two rooms (docs/ARCHITECTURE.md): report/stats/ computes, report/pages/ shows, one module a page.
STATS, PAGES = "pipeline.report.stats", "pipeline.report.pages"
DRAWING = ["pipeline.report.markup", "pipeline.report.figures", "pipeline.report.curve_figures", "pipeline.report.parts", "pipeline.report.site", PAGES]


def within(module: str, names: list[str]) -> bool:
    return any(module == n or module.startswith(n + ".") for n in names)


def room_breaches(module: str, imported: set[str]) -> list[str]:
    """What ``module`` imports against the report's rooms: a page module (of report/pages/, its __init__
    collecting them aside) never imports another page, nor the pages package; a statistics module (of
    report/stats/) never imports a page, the site, or what draws one (markup, figures, the pages' shared parts)."""
    if module.startswith(PAGES + "."):
        return sorted(m for m in imported if within(m, [PAGES]))
    if within(module, [STATS]):
        return sorted(m for m in imported if within(m, DRAWING))
    return []


def test_a_page_imports_statistics_never_another_page(tmp_path: Path):
    rooms = {module_name(p): p for p in (PKG / "report").rglob("*.py")}
    pages = [m for m in rooms if m.startswith(PAGES + ".")]
    assert len(pages) >= 9 and any(m.startswith(STATS + ".") for m in rooms)
    bad = {m: room_breaches(m, imports(p)) for m, p in sorted(rooms.items())}
    assert {m: b for m, b in bad.items() if b} == {}, "imports across the report's rooms"
    # each page declares its own spec (file, label, title) once and builds its page from it; the notes
    # every page shares are the site's, added by no page
    for m in pages:
        text = rooms[m].read_text(encoding="utf-8")
        assert text.count("SPEC = PageSpec(") == 1 and "Page(" not in text.replace("PageSpec(", ""), m
        assert "unshared_note" not in text, m
    # What the check reads: the imports pages made of each other before the rooms (a page's Standing taken
    # from the Accuracy page), and a statistic that drew a table.
    probe = tmp_path / "probe.py"
    probe.write_text("from pipeline.report.pages.accuracy import Standing\nfrom pipeline.report.stats import pick\n")
    assert room_breaches("pipeline.report.pages.compute", imports(probe)) == [
        "pipeline.report.pages.accuracy", "pipeline.report.pages.accuracy.Standing"]
    probe.write_text("def f():\n    from pipeline.report.markup import table\n")
    assert room_breaches("pipeline.report.stats.answer", imports(probe)) == [
        "pipeline.report.markup", "pipeline.report.markup.table"]


# What the report reads (docs/ARCHITECTURE.md), narrower than its layer allows: the results file (data.store,
# data.views and data.standings, its views, and data.characteristics for a dataset's traits), the models' kinds and declarations
# (models.kinds; models.registry: a model's protocol, an old file's kinds, the claims' ablation switches), the
# records and their enums, the scoring (metrics), the stored predictions and the ensembles; nothing of the
# harness (engine, learners, train, plan, runner, spec, the data's loading and splitting).
REPORT_READS = ["pipeline.data.store", "pipeline.data.views", "pipeline.data.standings", "pipeline.data.characteristics",
                "pipeline.models.kinds",
                "pipeline.models.registry", "pipeline.records", "pipeline.errors", "pipeline.metrics",
                "pipeline.predictions", "pipeline.ensemble"]
PACKAGES = {"pipeline", "pipeline.data", "pipeline.models"}  # `from pipeline.data import characteristics`


def report_breaches(imported: set[str]) -> list[str]:
    """What a module of report/ imports beyond what the report reads."""
    return sorted(m for m in imported if not within(m, ["pipeline.report", *REPORT_READS]) and m not in PACKAGES)


def test_the_report_reads_results_kinds_metrics_and_ensembles_never_the_harness(tmp_path: Path):
    bad = {module_name(p): report_breaches(imports(p)) for p in sorted((PKG / "report").rglob("*.py"))}
    assert {m: b for m, b in bad.items() if b} == {}, "the report imports beyond what it reads"
    # What the check reads: the harness, at the top or inside a function, and the data layer's loading.
    probe = tmp_path / "probe.py"
    probe.write_text("from pipeline.learners.torch import TorchLearner\nfrom pipeline.data import characteristics, "
                     "ingest\ndef f():\n    import pipeline.engine.pool\n    from pipeline.train import recipe\n")
    assert report_breaches(imports(probe)) == [
        "pipeline.data.ingest", "pipeline.engine.pool", "pipeline.learners.torch", "pipeline.learners.torch.TorchLearner",
        "pipeline.train", "pipeline.train.recipe"]


def test_importing_the_registry_imports_no_learner_and_no_pandas():
    """The registry discovers the models on first use, never at import (docs/ARCHITECTURE.md: the Learners
    it names are loaded on use): importing it loads no learner module, nor pandas, which the learners load."""
    def loaded(use: str) -> list[str]:
        code = ("import sys; import pipeline.models.registry as registry; " + use + "; print(' '.join(sorted("
                "m for m in sys.modules if m.startswith('pipeline.learners') or m in ('pandas', 'torch'))))")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              cwd=PKG.parent).stdout.split()

    assert loaded("pass") == []
    # What the check sees: the models' first use discovers them, the Learners imported by path (torch not).
    used = loaded("registry.get('mlp')")
    assert {"pandas", "pipeline.learners.torch", "pipeline.learners.xgboost"} <= set(used) and "torch" not in used


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
               if p.relative_to(PKG).parts[0] not in ("learners", "report") and p.name != "registry.py"]
    bad = [b for p in checked for b in kind_branches(p)]
    assert bad == [], f"kind branches outside the learners and the registry: {bad}"
    # The check sees the branches it is for (the code before the Learner answered these questions).
    before = "if info.family == 'torch':\n    pass\nx = 30.0 if family == 'torch' else 1.0\nif req.model.attention:\n    pass\n"
    probe = tmp_path / "before.py"
    probe.write_text(before)
    assert len(kind_branches(probe)) == 3


def status_literals(path: Path) -> list[str]:
    """Python comparisons of a status with a written-out status word (SQL text is a string, not a comparison)."""
    from pipeline.records import Status

    words = {s.value for s in Status}
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            consts = [c for s in sides for c in ([s] if isinstance(s, ast.Constant) else getattr(s, "elts", []))
                      if isinstance(c, ast.Constant) and c.value in words]
            if consts and "status" in ast.unparse(node).lower():
                out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_statuses_are_compared_as_the_enum_never_as_written_out_words(tmp_path: Path):
    """One Status enum (pipeline/records.py) declares how a trial or cell ends; code compares with its
    members, so a renamed or added status cannot be missed in one place."""
    bad = [b for p in PKG.rglob("*.py") if p.name != "records.py" for b in status_literals(p)]
    assert bad == [], f"status words compared outside pipeline/records.py: {bad}"
    probe = tmp_path / "before.py"
    probe.write_text("ok = cells[cells.status == 'ok']\nif res.status != \"ok\": pass\nx = r.status in ('infra', 'oom')\n")
    assert len(status_literals(probe)) == 3


def test_the_test_metrics_are_declared_once_and_every_record_carries_them():
    """pipeline.records.TEST_METRICS is the one list of test metrics: the scores a fit returns, a trial's
    record, a compressed variant's record and a cell's result each have a field of every name in it, and a
    cell carries each from its selected trial (a variant's row, from its variant's record)."""
    import dataclasses

    from pipeline.engine.cells import VARIANT_CARRIED
    from pipeline.evaluation import Scores
    from pipeline.metrics import score
    from pipeline.records import CARRIED, TEST_METRICS, CellResult, TrialRecord, VariantRecord

    for record in (Scores, TrialRecord, VariantRecord, CellResult):
        names = {f.name for f in dataclasses.fields(record)}
        assert set(TEST_METRICS) <= names, (record.__name__, set(TEST_METRICS) - names)
    assert set(TEST_METRICS) <= set(CARRIED) and set(TEST_METRICS) <= set(VARIANT_CARRIED)
    # A variant's score and cost reach its row under the cell's own names (and only precision and the
    # trained model's epochs are not its own).
    assert set(CARRIED) - set(VARIANT_CARRIED) == {"precision", "epochs", "best_epoch", "stop_reason"}
    # What metrics.score computes is exactly these (plus the selection's score and loss).
    import numpy as np

    got = set(score("binary", np.array([0, 1, 1, 0]), np.array([[0.8, 0.2], [0.3, 0.7], [0.4, 0.6], [0.6, 0.4]]), 2))
    assert {m for m in TEST_METRICS if m not in ("rmse", "r2")} <= got
    got = set(score("regression", np.array([0.0, 1.0, 2.0]), np.array([0.1, 0.9, 2.2]), 0))
    assert {"rmse", "r2"} <= got


def test_the_architecture_doc_numbers_each_file_by_its_layer():
    """docs/ARCHITECTURE.md's table gives each file or folder the layer LAYERS gives it (the doc stays true)."""
    doc = (PKG.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ((?:`[^`]+`(?:, )?)+) \|", doc, re.M)
    assert len(rows) >= 15, rows
    named = set()
    for number, files in rows:
        for f in re.findall(r"`([^`]+)`", files):
            module = "pipeline." + f.removesuffix(".py").removesuffix("/").replace("/", ".")
            named.add(module)
            assert layer(module) == int(number), (f, number, layer(module))
    assert {n for names in LAYERS for n in names} <= named | {"pipeline.report"}, sorted(
        {n for names in LAYERS for n in names} - named)
