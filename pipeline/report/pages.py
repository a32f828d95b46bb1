"""Self-contained HTML pages under ``reports/``: plotly.js is inlined once per page, no network needed.

Every name that comes from a dataset or a model is HTML-escaped before it reaches a page.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from pipeline.data.store import Store

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#1d2330;color:#fff;padding:14px 28px}header a{color:#9cc3ff;margin-right:16px;text-decoration:none}
main{padding:18px 28px;max-width:1400px}h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin-top:28px}
table{border-collapse:collapse;font-size:13px;background:#fff}th,td{padding:4px 10px;border-bottom:1px solid #e3e6ea;text-align:right}
th{background:#f0f2f5;position:sticky;top:0}td:first-child,th:first-child{text-align:left}
td.best{font-weight:700;background:#e6f4ea}td.missing{color:#b3261e}.note{color:#5f6b7a;font-size:13px}
.card{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:12px 16px;margin:12px 0}
"""


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def page(title: str, body: str, nav: list[tuple[str, str]]) -> str:
    links = "".join(f'<a href="{esc(href)}">{esc(label)}</a>' for label, href in nav)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · attnbench</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>'
            f'<body><header><strong>attnbench</strong> &nbsp; {links}</header><main><h1>{esc(title)}</h1>'
            f'{body}<p class="note">Generated {stamp}.</p></main></body></html>')


def figure_html(fig: object, first: bool) -> str:
    """A Plotly figure as a div; the first one on a page carries plotly.js itself (no CDN)."""
    return fig.to_html(full_html=False, include_plotlyjs=True if first else False,  # type: ignore[attr-defined]
                       config={"displaylogo": False, "responsive": True})


def leaderboard_table(lb: pd.DataFrame) -> str:
    """Per-dataset mean ± std (over folds/seeds) for each model; the best in each row highlighted."""
    if lb.empty:
        return '<p class="note">No results yet.</p>'
    models = sorted(lb.model.unique())
    rows = []
    for (dataset, size, metric), g in lb.groupby(["dataset", "sample_size", "metric"], sort=True):
        by_model = g.set_index("model")
        best = by_model.score_mean.max()
        cells = []
        for m in models:
            if m not in by_model.index or pd.isna(by_model.loc[m, "score_mean"]):
                n_failed = int(by_model.loc[m, "n_failed"]) if m in by_model.index else 0
                cells.append(f'<td class="missing">{"failed" if n_failed else "—"}</td>')
                continue
            r = by_model.loc[m]
            std = f" ± {r.score_std:.3f}" if pd.notna(r.score_std) else ""
            cov = f" <span class='note'>({int(r.n_ok)}/{int(r.n_cells)})</span>" if r.n_ok < r.n_cells else ""
            cls = ' class="best"' if r.score_mean == best else ""
            cells.append(f"<td{cls}>{r.score_mean:.3f}{std}{cov}</td>")
        rows.append(f"<tr><td>{esc(dataset)}</td><td>{esc(size)}</td><td>{esc(metric)}</td>{''.join(cells)}</tr>")
    head = "".join(f"<th>{esc(m)}</th>" for m in models)
    return (f"<table><thead><tr><th>dataset</th><th>n train</th><th>metric</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def write_report(db: str | Path, out_dir: str | Path) -> Path:
    import plotly.graph_objects as go

    store = Store(db, create=False)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lb = store.query("SELECT * FROM leaderboard ORDER BY dataset, sample_size, model")
    runs = store.query("SELECT run_id, suite, started_at, finished_at, status, n_cells, n_done, n_failed, n_skipped "
                       "FROM runs ORDER BY started_at DESC LIMIT 20")
    failures = store.query("SELECT level, dataset, model, sample_size, fold, status, error FROM failures LIMIT 200")
    nav = [("Leaderboard", "index.html")]
    body = ['<div class="card">Test score of the best-on-validation configuration of each model (accuracy for '
            'classification, R² for regression); mean ± std over folds and subset seeds. Counts in brackets show '
            'coverage where some cells are missing or failed.</div>', "<h2>Per dataset</h2>", leaderboard_table(lb)]
    if not lb.empty:
        ok = lb.dropna(subset=["score_mean"])
        fig = go.Figure()
        for model, g in ok.groupby("model"):
            fig.add_bar(name=str(model), x=[f"{d} (n={s})" for d, s in zip(g.dataset, g.sample_size)], y=g.score_mean,
                        error_y={"type": "data", "array": g.score_std.fillna(0)})
        fig.update_layout(barmode="group", height=420, yaxis_title="test score", margin={"t": 30},
                          legend_title_text="model")
        body += ["<h2>Scores by dataset</h2>", figure_html(fig, first=True)]
        avg = ok.groupby("model").score_mean.agg(["mean", "count"]).reset_index()
        n_ds = ok.groupby(["dataset", "sample_size"]).ngroups
        body += ["<h2>Average over datasets</h2>",
                 "<table><thead><tr><th>model</th><th>mean score</th><th>coverage</th></tr></thead><tbody>" + "".join(
                     f"<tr><td>{esc(r.model)}</td><td>{r['mean']:.3f}</td><td>{int(r['count'])}/{n_ds}</td></tr>"
                     for _, r in avg.sort_values("mean", ascending=False).iterrows()) + "</tbody></table>"]
    body += ["<h2>Runs</h2>", _frame_table(runs), "<h2>Failures</h2>",
             _frame_table(failures) if len(failures) else '<p class="note">None.</p>']
    index = out / "index.html"
    tmp = index.with_suffix(".html.tmp")
    tmp.write_text(page("Leaderboard", "".join(body), nav), encoding="utf-8")
    tmp.replace(index)
    return index


def _frame_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    rows = "".join("<tr>" + "".join(f"<td>{esc('' if pd.isna(v) else v)}</td>" for v in r) + "</tr>"
                   for r in df.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
