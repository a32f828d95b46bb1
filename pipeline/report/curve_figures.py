"""The Sample-size page's figures: each dataset's learning curves (mean test score against training rows, with
their confidence bands), the small multiples of them when datasets are many, and the mean normalised score by
size. Labels go through :func:`pipeline.report.figures.lab`, as every figure's do."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pipeline.report.figures import Style, lab, layout, magnitude, rgba


def _runs(mask: np.ndarray) -> list[np.ndarray]:
    """Index arrays of the consecutive True stretches of ``mask``."""
    idx = np.flatnonzero(mask)
    return [r for r in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1) if len(r)] if len(idx) else []


def curve_traces(curves: pd.DataFrame, style: Style, metric: str) -> list[go.Scatter]:
    """The traces of :func:`learning_curves`: per model its band runs, then its line."""
    traces: list[go.Scatter] = []
    xpos = curves.groupby("sample_size").n_train.mean()  # one x per size: the rows it trained on
    for model, g in curves.groupby("model", sort=True):
        g = g.assign(x=g.sample_size.map(xpos)).dropna(subset=["x"]).sort_values("x")
        if g.score_mean.isna().all():
            continue
        color = style.color(str(model))
        if "score_low" in g:
            for run in _runs(g.score_low.notna().to_numpy()):
                b = g.iloc[run]
                x = list(b.x)
                traces.append(go.Scatter(x=x + x[::-1], y=list(b.score_high) + list(b.score_low[::-1]),
                                         fill="toself", fillcolor=rgba(color, 0.15), line={"width": 0},
                                         mode="lines", hoverinfo="skip", showlegend=False, legendgroup=lab(model)))
        cov = g.get("coverage", pd.Series([""] * len(g), index=g.index)).fillna("")
        flag = g.get("flag", pd.Series([""] * len(g), index=g.index)).fillna("")
        ci = [f"95% CI {lo:.3f}–{hi:.3f}" if pd.notna(lo) else "no interval (one split)"
              for lo, hi in zip(g.get("score_low", g.score_mean * np.nan), g.get("score_high", g.score_mean * np.nan))]
        traces.append(go.Scatter(
            x=list(g.x), y=[None if pd.isna(v) else float(v) for v in g.score_mean], connectgaps=False,
            mode="lines+markers", name=lab(model), legendgroup=lab(model),
            line={"color": color, "dash": style.dash(str(model))}, marker={"symbol": style.symbol(str(model))},
            customdata=np.stack([g.sample_size.map(lab), ci, cov.map(lab), flag.map(lab)], axis=-1),
            hovertemplate=f"{lab(model)}<br>size %{{customdata[0]}} (%{{x:,.0f}} rows)<br>{metric} "
                          "%{y:.3f}, %{customdata[1]}<br>%{customdata[2]}<br>%{customdata[3]}<extra></extra>"))
    return traces


def learning_curves(curves: pd.DataFrame, style: Style, metric: str, title: str | None = None,
                    reference_n: float | None = 10_000) -> go.Figure:
    """Mean test score of one dataset against training rows (log axis), one line per model. The band is
    the confidence interval of the mean over folds and seeds (``score_low``/``score_high``, drawn only
    where there is one); a size where a model has no score is a gap in its line, never bridged."""
    fig = go.Figure(curve_traces(curves, style, metric))
    xpos = curves.groupby("sample_size").n_train.mean()
    if reference_n and not curves.empty and curves.n_train.max() * 3 >= reference_n:
        fig.add_vline(x=reference_n, line_dash="dot", line_color="#999",
                      annotation_text=f"{reference_n:,.0f} rows", annotation_position="top left")
    ticks = sorted({round(float(v)) for v in xpos.dropna()})
    fig.update_xaxes(type="log", title_text="training rows (log scale)", tickvals=ticks,
                     ticktext=[f"{v:,}" for v in ticks])
    fig.update_yaxes(title_text=f"test {metric}")
    return layout(fig, height=380, title_text=lab(title) if title else None)


def normalized_curves(df: pd.DataFrame, style: Style, sizes: Sequence[str]) -> go.Figure:
    """Mean normalised score against the training size as run, one line per model. The x axis is the
    sizes' labels in order, evenly spaced: 'all' is each dataset's own full size, not a number of rows."""
    fig = go.Figure()
    labels = {s: ("all" if s == "all" else f"{int(s):,}") for s in sizes}
    for model, g in df.groupby("model", sort=True):
        g = g.set_index("sample_size").reindex(list(sizes))
        fig.add_scatter(x=[labels[s] for s in sizes], y=[None if pd.isna(v) else float(v) for v in g.normalized_score],
                        connectgaps=False, mode="lines+markers", name=lab(model),
                        line={"color": style.color(str(model)), "dash": style.dash(str(model))},
                        marker={"symbol": style.symbol(str(model))},
                        customdata=np.stack([g.n_scored.fillna(0), g.n_tasks.fillna(0)], axis=-1),
                        hovertemplate=f"{lab(model)}<br>%{{x}} training rows<br>mean normalised score %{{y:.3f}}"
                                      "<br>scored on %{customdata[0]:.0f} of %{customdata[1]:.0f} tasks<extra></extra>")
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=[labels[s] for s in sizes],
                     title_text="training rows, as run ('all' = each dataset's full training part)")
    fig.update_yaxes(title_text="mean normalised score (1 = best, 0 = worst)", range=[-0.05, 1.05])
    return layout(fig, height=380)



def learning_curve_grid(panels: Sequence[tuple[str, pd.DataFrame, str]], style: Style, cols: int = 4,
                        reference_n: float | None = 10_000) -> go.Figure:
    """Small multiples of :func:`learning_curves`: one panel per (title, curves, metric), ``cols`` a row,
    one legend for all (a model's entry shows or hides it in every panel)."""
    rows = math.ceil(len(panels) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"{lab(t)} · {lab(m)}" for t, _, m in panels],
                        vertical_spacing=min(0.3 / max(rows - 1, 1), 0.08), horizontal_spacing=0.05)
    shown: set[str] = set()
    traces: list[go.Scatter] = []
    at: list[tuple[int, int]] = []
    lines: list[dict[str, Any]] = []
    for i, (_, curves, metric) in enumerate(panels):
        r, c = divmod(i, cols)
        drawn = len(traces)
        for trace in curve_traces(curves, style, metric):
            group = trace.legendgroup
            if trace.showlegend is not False:
                trace.showlegend = group not in shown
                shown.add(group)
            traces.append(trace)
            at.append((r + 1, c + 1))
        ticks = sorted({round(float(v)) for v in curves.groupby("sample_size").n_train.mean().dropna()})
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[magnitude(v) for v in ticks], row=r + 1, col=c + 1)
        # (as add_vline leaves an empty panel: no line where no model has a score)
        if reference_n and len(traces) > drawn and curves.n_train.max() * 3 >= reference_n:
            axes = fig.get_subplot(r + 1, c + 1)  # a vertical line across the panel, as add_vline draws it
            lines.append({"type": "line", "x0": reference_n, "x1": reference_n, "y0": 0, "y1": 1,
                          "xref": axes.xaxis.plotly_name.replace("axis", ""),
                          "yref": f"{axes.yaxis.plotly_name.replace('axis', '')} domain",
                          "line": {"dash": "dot", "color": "#999"}})
    # All at once: one trace or one line at a time copies the figure's traces or shapes again each time.
    fig.add_traces(traces, rows=[r for r, _ in at], cols=[c for _, c in at])
    fig.update_layout(shapes=lines)
    for ann in fig.layout.annotations:
        ann.font = {"size": 11}
    return layout(fig, height=max(260 * rows, 320))
