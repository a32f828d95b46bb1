"""HTML building blocks for the report: the page shell, escaped tables, embedded figures.

Every value that reaches a page goes through :func:`esc` (tables, headings, notes) or, inside a
figure, through :func:`pipeline.report.figures.lab`. Cells built by :func:`cell` are escaped; raw
HTML is only ever assembled here from escaped parts.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#1d2330;color:#fff;padding:12px 28px}header a{color:#9cc3ff;margin-right:16px;text-decoration:none}
header a.here{color:#fff;font-weight:600}header strong{margin-right:22px}
main{padding:18px 28px;max-width:1400px}h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin-top:30px}
h3{font-size:15px;margin-top:22px}
table{border-collapse:collapse;font-size:13px;background:#fff;margin:8px 0}
th,td{padding:4px 10px;border-bottom:1px solid #e3e6ea;text-align:left;vertical-align:top}
th{background:#f0f2f5;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.num:first-child{text-align:left}
td.best{font-weight:700;background:#e6f4ea}td.missing{color:#b3261e}td.partial{color:#8a5a00}td.reference{color:#555;font-style:italic}td.notrun{color:#999}span.sub{color:#555;font-size:.85em;white-space:nowrap}
.note{color:#5f6b7a;font-size:13px}.card{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:12px 16px;margin:12px 0}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:12px}
.cards a{text-decoration:none;color:inherit}.cards .card:hover{border-color:#9cc3ff}
.stat{font-size:22px;font-weight:600}pre{white-space:pre-wrap;font-size:12px;background:#f4f5f7;padding:8px;margin:4px 0}
details summary{cursor:pointer}.toc a{margin-right:14px}
"""

def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def missing(v: Any) -> bool:
    """None, NaN, NaT or pd.NA (a scalar only)."""
    return v is None or (pd.api.types.is_scalar(v) and bool(pd.isna(v)))


def num(v: Any, spec: str = ".3f", none: str = "—") -> str:
    """A number formatted with ``spec``; None/NaN become ``none``. A value that rounds to zero has no
    minus sign (a gain of -0.00001 reads "+0.0000", not "-0.0000")."""
    if missing(v):
        return none
    try:
        text = format(float(v), spec)
    except (TypeError, ValueError):
        return str(v)
    if text.startswith("-") and not any(c in "123456789" for c in text.split("e")[0]):
        text = ("+" if "+" in spec else "") + text[1:]
    return text


@dataclass(frozen=True)
class Cell:
    html: str
    cls: str = ""
    title: str = ""
    data: tuple[tuple[str, str], ...] = ()  # data-* attributes: what a cell shows, for a test to read

    def td(self) -> str:
        attrs = (f' class="{esc(self.cls)}"' if self.cls else "") + (f' title="{esc(self.title)}"' if self.title else "")
        attrs += "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in self.data)
        return f"<td{attrs}>{self.html}</td>"


def verdict_cell(markup: str, verdict: object, pair: str, cls: str = "", title: str = "") -> Cell:
    """A cell (``markup`` built from escaped parts) that shows a pair's verdict, saying which pair and which
    verdict in its ``data-pair`` and ``data-verdict`` attributes (:func:`pipeline.report.stats.verdicts.pair_key`):
    tests/report/test_one_verdict.py reads them on every page."""
    return Cell(markup, cls, title, (("pair", pair), ("verdict", str(verdict))))


def looks_numeric(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float | np.number):
        return True
    return isinstance(value, str) and value[:1] in "0123456789-+—" and value not in ("-", "+")


def coverage_class(n_ok: int, n_cells: int, n_failed: int) -> str:
    """The colour (CSS class) of a count of cells ok: red only where cells failed and none is ok; a size not run yet is grey."""
    if n_ok >= n_cells:
        return ""
    if n_ok == 0:
        return "missing" if n_failed > 0 else "notrun"
    return "partial"


def unscored(n_cells: int, n_failed: int, n_missing: int) -> tuple[str, str]:
    """A model's cells on a task, none ok, in words and their colour (:func:`coverage_class`): failed (red) where
    any failed, else not run yet (grey: a study in chunks)."""
    said = f"failed ({n_failed}/{n_cells})" if n_failed else f"not run yet ({n_missing}/{n_cells})"
    return said, coverage_class(0, n_cells, n_failed)


def cell(value: Any, cls: str = "", title: str = "") -> Cell:
    """A table cell showing ``value`` as text; numbers are right-aligned."""
    if looks_numeric(value):
        cls = f"{cls} num".strip()
    return Cell("" if missing(value) else esc(value), cls, title)


def raw(markup: str, cls: str = "", title: str = "") -> Cell:
    """A cell from markup that the caller built from escaped parts."""
    return Cell(markup, cls, title)


def table(headers: Sequence[str], rows: Sequence[Sequence[Cell | Any]], table_id: str = "", cls: str = "") -> str:
    if not rows:
        return '<p class="note">No rows.</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join((c if isinstance(c, Cell) else cell(c)).td() for c in r) + "</tr>" for r in rows)
    attrs = (f' id="{esc(table_id)}"' if table_id else "") + (f' class="{esc(cls)}"' if cls else "")
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


PLOTLY_JS = "plotly.min.js"  # one copy per report folder, loaded by every page with a figure


@dataclass
class Page:
    """One HTML page being assembled. Pages with figures load plotly.js from the one copy beside them
    (``PLOTLY_JS``, written by ``write_report``)."""

    file: str
    title: str
    parts: list[str] = field(default_factory=list)
    n_figures: int = 0
    notes_at: int = 0  # where the notes every page shares go (the site adds them): the top unless the page marks a place

    def add(self, *markup: str) -> None:
        self.parts.extend(markup)

    def shared_notes_here(self) -> None:
        """Mark this point of the page as where the site puts the notes every page shares (default: the top)."""
        self.notes_at = len(self.parts)

    def add_shared(self, notes: Sequence[str]) -> None:
        """The site's notes every page shares (pipeline.report.site.shared_notes), where the page marked."""
        self.parts[self.notes_at:self.notes_at] = list(notes)

    def h2(self, text: str, anchor: str = "") -> None:
        self.parts.append(f'<h2{f" id={chr(34)}{esc(anchor)}{chr(34)}" if anchor else ""}>{esc(text)}</h2>')

    def h3(self, text: str) -> None:
        self.parts.append(f"<h3>{esc(text)}</h3>")

    def card(self, text: str) -> None:
        self.parts.append(f'<div class="card">{esc(text)}</div>')

    def figure(self, fig: Any, fig_id: str) -> None:
        self.parts.append(fig.to_html(full_html=False, include_plotlyjs=False, div_id=fig_id,
                                      config={"displaylogo": False, "responsive": True}))
        self.n_figures += 1

    def render(self, nav: list[tuple[str, str]]) -> str:
        """The page as HTML, with ``nav``'s (label, file) links in its header (pipeline.report.pages.PAGES)."""
        links = "".join(f'<a href="{esc(href)}"{" class=here" if href == self.file else ""}>{esc(label)}</a>'
                        for label, href in nav)
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                f'<title>{esc(self.title)} · attnbench</title>'
                '<meta name="viewport" content="width=device-width, initial-scale=1">'
                f'<style>{CSS}</style>'
                + (f'<script src="{PLOTLY_JS}" charset="utf-8"></script>' if self.n_figures else "")
                + f'</head><body><header><strong>attnbench</strong>{links}</header>'
                f'<main><h1>{esc(self.title)}</h1>{"".join(self.parts)}'
                f'<p class="note">Generated {stamp}.</p></main></body></html>')
