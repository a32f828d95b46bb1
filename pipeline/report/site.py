"""The report: self-contained HTML pages under ``reports/``, one index linking them all. This module
writes them all (:func:`write_report`); each page has a module of its own (overview.py: the index;
accuracy, sample_size, tuning, compute, memory, attention, claims_page, runs), and every page reads
:class:`pipeline.report.data.ReportData`: the views, read once.

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

from pipeline.report.accuracy import Standing, page_accuracy, standing
from pipeline.report.attention import page_attention
from pipeline.report.claims_page import page_claims
from pipeline.report.compute import page_compute
from pipeline.report.data import ReportData
from pipeline.report.markup import PLOTLY_JS, Page
from pipeline.report.memory import page_memory
from pipeline.report.overview import page_index
from pipeline.report.runs import page_runs
from pipeline.report.sample_size import page_sample_size
from pipeline.report.tuning import page_tuning


@dataclass(frozen=True)
class Site:
    """What every page is built from: the views read once, the standings per training size, the pages."""

    data: ReportData
    standings: dict[str, Standing]
    pages: list[PageSpec]


@dataclass(frozen=True)
class PageSpec:
    """One page of the report: its file, its link's label, what the overview says of it, its builder."""

    file: str
    label: str
    description: str
    build: Callable[[Site], Page]


# The report's pages, in the header's order; a new page is its module and one row here.
PAGES: list[PageSpec] = [
    PageSpec("index.html", "Overview", "The answer by training size, the headline leaderboard.",
             lambda s: page_index(s.data, s.standings, [(p.label, p.file, p.description) for p in s.pages])),
    PageSpec("accuracy.html", "Accuracy",
             "Per-dataset scores, average rank, normalised score, win rates, Elo, critical difference.",
             lambda s: page_accuracy(s.data, s.standings)),
    PageSpec("sample_size.html", "Sample size", "Test score against training size; where attention overtakes boosting.",
             lambda s: page_sample_size(s.data)),
    PageSpec("tuning.html", "Tuning budget",
             "Best validation score, and the selected configuration's test score, against trials and seconds.",
             lambda s: page_tuning(s.data)),
    PageSpec("compute.html", "Compute", "Train time, inference speed, FLOPs, parameters, GPU-hours; score/time Pareto front.",
             lambda s: page_compute(s.data, s.standings)),
    PageSpec("memory.html", "Memory", "Peak CPU and GPU memory, and its growth with the number of features.",
             lambda s: page_memory(s.data)),
    PageSpec("attention.html", "Attention maps", "Mean feature-to-feature attention maps per dataset and model.",
             lambda s: page_attention(s.data)),
    PageSpec("claims.html", "Claims", "The design notes' five claims, each with a verdict, its effect, interval and cells.",
             lambda s: page_claims(s.data)),
    PageSpec("runs.html", "Run details", "Suites, versions, hardware, trial counts and every failure with its error.",
             lambda s: page_runs(s.data)),
]


def write_report(db: str | Path, out_dir: str | Path, pages: list[PageSpec] | None = None) -> Path:
    """Write every page of ``pages`` (default: :data:`PAGES`) under ``out_dir``, each atomically, and
    return the index's path."""
    data = ReportData.load(db)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    site = Site(data, {s: standing(data, s) for s in reversed(data.sizes)}, list(PAGES if pages is None else pages))
    nav = [(p.label, p.file) for p in site.pages]
    _write_plotly_js(out)  # first: a page is never there before the script it loads
    for spec in [*(p for p in site.pages if p.file != "index.html"), *(p for p in site.pages if p.file == "index.html")]:
        page = spec.build(site)
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
