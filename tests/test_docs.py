"""The guides stay whole: every link between README.md and docs/*.md reaches a file and a heading that
exist, and docs/SUITES.md's "Every key" tables name every key a suite file may hold."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from pipeline import spec, suite_datasets

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(text: str) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6}[ \t]+(.+)$", FENCED.sub("", text), re.M)}


def test_anchors_are_made_as_github_makes_them():
    assert anchors("# A\n## `run`: options and exit codes\n### The design notes' claims, tested\n```\n# no\n```") == {
        "a", "run-options-and-exit-codes", "the-design-notes-claims-tested"}


def test_every_link_between_the_docs_reaches_a_file_and_a_heading():
    problems, checked = [], 0
    for doc in DOCS:
        for target in LINK.findall(FENCED.sub("", doc.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            checked += 1
            if not file.exists():
                problems.append(f"{doc.name}: ({target}): no such file")
            elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text(encoding="utf-8")):
                problems.append(f"{doc.name}: ({target}): no heading makes #{fragment} in {file.name}")
    assert checked >= 20, checked  # the README's links to the guides, and theirs to each other
    assert not problems, "\n".join(problems)


def keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    out = set()
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        inner = field.annotation
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            out |= keys(inner, f"{prefix}{name}.")
        else:
            out.add(prefix + name)
    return out


def test_every_suite_key_is_in_the_suites_guide():
    text = (REPO / "docs" / "SUITES.md").read_text(encoding="utf-8")
    section = text.split("## Every key", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^\| `([^`]+)`(?:, `([^`]+)`)?", section, re.M))
    named_keys = {k for pair in named for k in pair if k}
    datasets = (suite_datasets.OpenMLTask, suite_datasets.OpenMLSuite, suite_datasets.LocalFile,
                suite_datasets.SklearnDataset, suite_datasets.SyntheticDataset)
    top = {k for k, f in spec.SuiteSpec.model_fields.items() if not f.exclude}  # name, datasets, protocol, …
    every = top | keys(spec.Protocol) | keys(spec.ModelSpec) | set().union(*(keys(d) for d in datasets))
    synthetic = {"n_rows", "n_noise", "n_cat_noise"}  # in the `synthetic` row, with their defaults
    assert "source_path" not in every and {"folds", "preprocessing.numeric", "resources.gpus", "checksum"} <= every
    missing = sorted(every - named_keys - synthetic)
    assert not missing, f"docs/SUITES.md, Every key: no row for {missing}"
    assert all(f"`{k}`" in section.split("| `synthetic` |")[1].split("\n")[0] for k in synthetic)


def shipped_suites_table() -> str:
    """docs/SUITES.md's "Shipped suites" section, up to the next heading."""
    text = (REPO / "docs" / "SUITES.md").read_text(encoding="utf-8")
    return text.split("## Shipped suites", 1)[1].split("\n## ", 1)[0]


def test_the_suites_guide_counts_each_shipped_references_planned_cells():
    """docs/SUITES.md's "Shipped suites" table gives each suite's cells; for a suite a shipped reference holds,
    the figure is the reference's own plan (its ``suite_cells``), so a suite that grows (repeats, new entries)
    fails here until its row is printed again."""
    from pipeline.data import references

    figures: dict[str, int] = {}
    for row in re.findall(r"^\| (`.+)$", shipped_suites_table(), re.M):
        cols = [c.strip() for c in row.split(" | ")]
        names = re.findall(r"`([^`]+)`", cols[0])
        numbers = [int(x.replace(",", "")) for x in re.findall(r"\d[\d,]*", cols[-1].split("(")[0])]
        figures |= dict(zip(names, numbers, strict=False))
    checked = 0
    for name in references.shipped():
        ref = references.load(name)
        planned = int(ref.df("SELECT count(*) AS n FROM ref_suite_cells").n[0])
        assert figures.get(ref.suite) == planned, (ref.suite, figures.get(ref.suite), planned)
        checked += 1
    assert checked >= 3


def test_every_shipped_suite_has_a_row_in_the_suites_guide():
    table = shipped_suites_table()
    named = set(re.findall(r"`([\w-]+)`", "\n".join(r.split(" | ")[0] for r in table.splitlines())))
    ranges = [(int(a), int(b)) for a, b in re.findall(r"`grinsztajn-(\d+)` … `-(\d+)`", table)]
    missing = []
    for path in sorted((REPO / "suites").glob("*.yaml")):
        base = path.stem.removesuffix("-lite")
        lite_row = path.stem.endswith("-lite") and re.search(rf"`{re.escape(base)}` \(\+`-lite`\)", table)
        number = re.fullmatch(r"grinsztajn-(\d+)", base)
        in_range = bool(number) and any(a <= int(number[1]) <= b for a, b in ranges)
        lite_of_row = path.stem.endswith("-lite") and any(
            f"`{base}`" in row.split(" | ")[0] and "-lite" in row for row in table.splitlines())
        if path.stem not in named and not lite_row and not in_range and not lite_of_row:
            missing.append(path.stem)
    assert not missing, f"docs/SUITES.md, Shipped suites: no row for {missing}"


def test_the_queries_guide_names_every_table_and_view(tmp_path: Path):
    """README.md says docs/QUERIES.md documents every table and view of a results file."""
    from pipeline.data.store import Store
    from pipeline.data.views import VIEWS, install

    store = Store(tmp_path / "r.duckdb")
    install(store)
    names = store.query("SELECT table_name FROM information_schema.tables").table_name.tolist()
    assert {"results", "trials", "runs", "predictions", "standings"} <= set(names) and set(VIEWS) <= set(names)
    text = (REPO / "docs" / "QUERIES.md").read_text(encoding="utf-8")
    missing = sorted(name for name in names if f"`{name}`" not in text)
    assert not missing, f"docs/QUERIES.md names no {missing}"
    # and the one table per dataset's rows, which an empty file has none of (schema.table_name)
    assert "`data_<name>_<checksum>`" in text and "`datasets.data_table`" in text


def test_the_extending_guide_names_every_shipped_reference():
    from pipeline.data import references

    text = " ".join((REPO / "docs" / "EXTENDING.md").read_text(encoding="utf-8").split())
    listed = re.split(r"[(.]", text.split("The references that ship (`attnbench reference list`): ", 1)[1], maxsplit=1)[0]
    assert sorted(re.findall(r"[\w-]+", listed.replace(" and ", " "))) == sorted(references.shipped())
