"""The report's pages, one module each, each declaring its own :class:`pipeline.report.site.PageSpec`
(``SPEC``) once; a page imports the statistics (:mod:`pipeline.report.stats`), the parts pages share
(:mod:`pipeline.report.parts`) and the building blocks, never another page. A new page is its module and
its ``SPEC`` in :data:`PAGES`."""

from __future__ import annotations

from pathlib import Path

from pipeline.report import site
from pipeline.report.data import ReportData
from pipeline.report.pages import (
    accuracy,
    attention,
    claims,
    compute,
    memory,
    overview,
    runs,
    sample_size,
    tuning,
)

# The report's pages, in the header's order.
PAGES: list[site.PageSpec] = [overview.SPEC, accuracy.SPEC, sample_size.SPEC, tuning.SPEC, compute.SPEC, memory.SPEC,
                              attention.SPEC, claims.SPEC, runs.SPEC]


def write_report(db: str | Path, out_dir: str | Path, pages: list[site.PageSpec] | None = None) -> Path:
    """Write every page of ``pages`` (default: :data:`PAGES`) under ``out_dir`` (:func:`pipeline.report.site.write`)
    and return the index's path."""
    return site.write(ReportData.load(db), out_dir, PAGES if pages is None else pages)
