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
from pathlib import Path

from pipeline.report.accuracy import page_accuracy, standing
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


def write_report(db: str | Path, out_dir: str | Path) -> Path:
    """Write every page under ``out_dir`` (each atomically) and return the index's path."""
    data = ReportData.load(db)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    standings = {s: standing(data, s) for s in reversed(data.sizes)}
    builders: list[Callable[[], Page]] = [
        lambda: page_accuracy(data, standings), lambda: page_sample_size(data), lambda: page_tuning(data),
        lambda: page_compute(data, standings), lambda: page_memory(data), lambda: page_attention(data),
        lambda: page_claims(data), lambda: page_runs(data), lambda: page_index(data, standings),
    ]
    _write_plotly_js(out)  # first: a page is never there before the script it loads
    for build in builders:
        page = build()
        path = out / page.file
        tmp = path.with_suffix(".html.tmp")
        tmp.write_text(page.render(), encoding="utf-8")
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
