"""The report's site: self-contained HTML pages under ``reports/``, one index linking them all. Each page
is a module of :mod:`pipeline.report.pages` that declares its :class:`PageSpec` once (file, link label,
title, what the overview says of it, its builder); :func:`write` builds every page from the one
:class:`Site` (the views read once, the ranking at each training size), adds the notes every page that
compares models shares, and writes them all.

Pages with figures load the one copy of plotly.js written beside them (no CDN: the folder works
offline over ``file://``, and a report of many pages carries plotly.js once). Every page
is built from the SQL views of :mod:`pipeline.data.views`, created as temporary views on a
read-only connection, so the numbers match ``attnbench query`` and ``duckdb results.duckdb``.
Every name that comes from a dataset, a feature or a model is escaped before it reaches a page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.report.data import ReportData
from pipeline.report.figures import templated
from pipeline.report.markup import PLOTLY_JS, Page, note
from pipeline.report.stats.ranking import Ranking, ranking


@dataclass(frozen=True)
class Site:
    """What every page is built from: the views read once, the ranking at each training size, the pages."""

    data: ReportData
    rankings: dict[str, Ranking]
    pages: list[PageSpec]


@dataclass(frozen=True)
class PageSpec:
    """One page of the report, declared once in its module: its file, its link's label, what the
    overview says of it, its builder, its title (the label unless given), and whether it compares models
    on the compared cells (then the site adds the notes every such page shares, :func:`shared_notes`;
    the attention maps and the run details read every current result)."""

    file: str
    label: str
    description: str
    build: Callable[[Site], Page]
    title: str = ""
    compares: bool = True

    def page(self) -> Page:
        """The page to fill, under this spec's file and title."""
        return Page(self.file, self.title or self.label)


def shared_notes(data: ReportData) -> list[str]:
    """The notes every page that compares models shows: the splits left out of every mean (a merged
    file whose models ran different folds of a task)."""
    return [t for t in (data.unshared_note(),) if t]


def write(data: ReportData, out_dir: str | Path, pages: list[PageSpec]) -> Path:
    """Write every page of ``pages`` under ``out_dir``, each atomically, and return the index's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    site = Site(data, {s: ranking(data, s) for s in reversed(data.sizes)}, list(pages))
    nav = [(p.label, p.file) for p in site.pages]
    notes = [note(t) for t in shared_notes(data)]
    _write_plotly_js(out)  # first: a page is never there before the script it loads
    for spec in [*(p for p in site.pages if p.file != "index.html"), *(p for p in site.pages if p.file == "index.html")]:
        with templated():
            page = spec.build(site)
        if spec.compares:
            page.add_shared(notes)
        path = out / page.file
        tmp = path.with_suffix(".html.tmp")
        tmp.write_text(page.render(nav), encoding="utf-8")
        tmp.replace(path)
    return out / "index.html"


def _write_plotly_js(out: Path) -> None:
    """The one copy of plotly.js the pages load (offline, over ``file://``); rewritten only when the
    installed plotly's differs."""
    from plotly.offline import get_plotlyjs

    text = get_plotlyjs()
    path = out / PLOTLY_JS
    if path.is_file() and path.stat().st_size == len(text.encode("utf-8")) and path.read_text("utf-8") == text:
        return
    tmp = path.with_suffix(".js.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
