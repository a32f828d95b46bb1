"""Print the shipped results into the docs again: every ``<!-- answer [summary |tuning |claims ]REF -->`` block of
README.md and docs/*.md (what ``attnbench answer REF`` prints, whole or one part: pipeline.report.answer_text.part),
every ``<!-- price ARGS -->`` block (what ``attnbench price ARGS`` prints) and docs/QUERIES.md's table of its first
standings query on study-every-dataset, each from the shipped references exported to a temporary file.
tests/test_answer.py fails while any of them differs from what this prints.

    .venv/bin/python tools/print_answers.py           # rewrite what differs, naming each file
    .venv/bin/python tools/print_answers.py --check   # change nothing; exit 1 naming what differs
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import tempfile
from pathlib import Path

from pipeline.data import references
from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.report import answer_text

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
QUERIES_TABLE = re.compile(r"On study-every-dataset.*?\n\n((?:\|[^\n]*\n)+)", re.S)


class Exported:
    """Each shipped reference exported once, on first use, into a temporary folder (or a file given for it)."""

    def __init__(self, root: str, files: dict[str, str] | None = None) -> None:
        self.root = root
        self.files: dict[str, str] = dict(files or {})

    def __call__(self, name: str) -> str:
        if name not in self.files:
            self.files[name] = f"{self.root}/{name}.duckdb"
            references.export_file(name, self.files[name])
        return self.files[name]


def answer_blocks(text: str, exported: Exported) -> str:
    return re.sub(answer_text.DOC_BLOCK, lambda m: m.group(1) + answer_text.part(exported(m["ref"]), m["ref"], m["what"])
                  + m.group(5), text, flags=re.S)


PRICE_BLOCK = re.compile(r"(<!-- price (?P<args>[^>]*?) -->\n)(.*?)(<!-- /price -->)", re.S)


def price_blocks(text: str, exported: Exported) -> str:
    """Each ``<!-- price ARGS -->`` block: ``attnbench price ARGS`` on the shipped references it names."""
    from pipeline.cli import build_parser
    from pipeline.report import price_text

    def one(m: re.Match[str]) -> str:
        a = build_parser().parse_args(["price", *shlex.split(m["args"])])
        out = price_text.markdown(exported(a.pilot), exported(a.study), a.pilot, a.study, base=a.base, extend=a.extend,
                                  race=dict(a.race or []), budget=a.budget, cut_sizes=a.cut, entries=a.entries,
                                  so_far=a.so_far, thin=a.thin)
        return m.group(1) + out + m.group(4)

    return PRICE_BLOCK.sub(one, text)


def standings_counts(text: str, exported: Exported) -> str:
    """docs/QUERIES.md: the table after its first standings query, that query's output on study-every-dataset."""
    start = text.index("### `standings`")
    section = text[start:]
    query, table = re.search(r"```sql\n(.*?)```", section, re.S), QUERIES_TABLE.search(section)
    if query is None or table is None:
        raise SystemExit("docs/QUERIES.md: no standings query with its table on study-every-dataset after it")
    sql = query[1]
    got = Store(exported("study-every-dataset"), create=False).query(sql, prepare=temporary_views)
    lines = table[1].splitlines()[:2] + [f"| {r.verdict} | {r.datasets} | {r.mean_diff} |"
                                         for r in got.itertuples(index=False)]
    return text[:start] + section[:table.start(1)] + "\n".join(lines) + "\n" + section[table.end(1):]


# The references whose across-datasets fits ship beside their chunks (references/NAME/across_datasets.parquet).
ACROSS = ["study-every-dataset"]


def across_stale(name: str, db: str, write: bool) -> bool:
    """Whether the shipped across_datasets fits of ``name`` miss any the data calls for (or hold others): then, with
    ``write``, fit what is missing (reusing the current ones), and write the table beside the chunks and into ``db``."""
    from pipeline.report import across_text
    from pipeline.report.stats import across

    store = Store(db, create=False)
    standings = store.query("SELECT * FROM standings ORDER BY ALL", prepare=temporary_views)
    stored = store.read_across()
    current = across.current(standings, stored)
    if not across.missing(standings, stored) and stored is not None and len(current) == len(stored):
        return False
    if write:
        store.write_across(current)
        across_text.refresh(db, say=lambda line: print(f"{name}: {line}", file=sys.stderr, flush=True))
        path = references.shipped_root() / name / references.ACROSS_FILE
        tmp = path.with_suffix(".tmp")
        table = store.read_across()
        assert table is not None
        table.to_parquet(tmp, index=False)
        tmp.replace(path)
    return True


def main(argv: list[str] | None = None, files: dict[str, str] | None = None) -> int:
    """``files``: results files already exported from shipped references (name → path), read instead of
    exporting those again (the tests' session exports each once)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming what differs")
    args = parser.parse_args(argv)
    differ = []
    with tempfile.TemporaryDirectory() as tmp:
        exported = Exported(tmp, files)
        for name in ACROSS:  # first the hierarchical model's fits, which the answer blocks read
            if across_stale(name, exported(name), write=not args.check):
                differ.append(references.shipped_root().relative_to(REPO) / name / references.ACROSS_FILE)
        for doc in DOCS:
            text = doc.read_text(encoding="utf-8")
            new = price_blocks(answer_blocks(text, exported), exported)
            if doc.name == "QUERIES.md":
                new = standings_counts(new, exported)
            if new != text:
                differ.append(doc.relative_to(REPO))
                if not args.check:
                    doc.write_text(new, encoding="utf-8")
    for path in differ:
        print(f"{path}: {'differs from' if args.check else 'printed again from'} the shipped references")
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
