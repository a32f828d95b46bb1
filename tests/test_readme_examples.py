"""The README's suite examples validate as written: every ```yaml block of README.md and docs/*.md,
read by the suite loader itself. A whole suite is loaded as it stands; a fragment (a models: entry, a
datasets: list, a space) is loaded inside the smallest suite around it."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml

from pipeline.spec import load_suite
from pipeline.suite_text import SuiteLoader

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "gated_attention"  # the README's own model of one's own, by import path
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```yaml[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
AROUND = {"name": "name: readme\n", "datasets": "datasets: [{sklearn: wine}]\n", "models": "models: [{name: xgboost}]\n"}


def blocks() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text[: m.start()].count("\n") + 1
            out.append((f"{doc.name}:{line}", textwrap.dedent(m.group("body"))))
    return out


BLOCKS = blocks()


def test_the_docs_hold_suite_examples():
    assert len(BLOCKS) >= 2, BLOCKS  # the Suites reference and the model of one's own
    whole = [b for _, b in BLOCKS if {"name", "datasets", "models"} <= set(yaml.load(b, Loader=SuiteLoader))]
    assert whole, "no whole suite among the examples"


@pytest.mark.parametrize("where,text", BLOCKS, ids=[w for w, _ in BLOCKS])
def test_every_yaml_example_validates_as_written(where: str, text: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    data = yaml.load(text, Loader=SuiteLoader)
    if not isinstance(data, dict):
        pytest.fail(f"{where}: a suite example is a mapping")
    if not set(data) & {"name", "datasets", "models", "protocol", "space"}:
        pytest.fail(f"{where}: not a suite or a part of one (keys: {sorted(data)})")
    if "space" in data and not set(data) & set(AROUND):  # a model's space alone
        text = "models:\n  - name: mlp\n" + textwrap.indent(text, "    ")
        data = yaml.load(text, Loader=SuiteLoader)
    missing = "".join(v for k, v in AROUND.items() if k not in data)
    path = tmp_path / "example.yaml"
    path.write_text(missing + text)  # the example's own text: YAML reads it exactly as a user's file
    suite = load_suite(path)  # raises SpecError with the file, key and reason
    assert suite.models and suite.datasets
