"""Plotly figures for the report pages.

Every string that comes from a dataset, a feature or a model goes through :func:`lab` first: Plotly
renders labels, legends and hover text as a small HTML dialect, so a name like ``<b>x</b>`` would
otherwise be drawn bold (and anything else stripped). Escaped, it shows as the text it is.
"""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from pipeline.models.kinds import ATTENTION, BOOSTING, NETWORK, TREES
from pipeline.records import Verdict
from pipeline.report.stats.aggregate import CriticalDifference
from pipeline.report.stats.answer import SizeAnswer

TEMPLATE = "plotly_white"
PALETTE = qualitative.Plotly + qualitative.D3 + qualitative.Set2
# By family: boosting dashed squares, attention solid circles, other networks dotted diamonds, other
# trees dash-dotted triangles; a user's own family long-dashed crosses.
DASH = {BOOSTING: "dash", ATTENTION: "solid", NETWORK: "dot", TREES: "dashdot"}
SYMBOL = {BOOSTING: "square", ATTENTION: "circle", NETWORK: "diamond", TREES: "triangle-up"}


def lab(x: object) -> str:
    """A name made safe for Plotly's text rendering (shown literally)."""
    return html.escape(str(x), quote=True)


class Style:
    """A stable colour per model and a line style per family (boosting dashed, attention solid)."""

    def __init__(self, models: Sequence[str], families: Mapping[str, str]) -> None:
        self.colors = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(sorted(models))}
        self.families = dict(families)  # model → family

    def color(self, model: str) -> str:
        return self.colors.get(model, "#888888")

    def dash(self, model: str) -> str:
        return DASH.get(self.families.get(model, ""), "longdash")

    def symbol(self, model: str) -> str:
        return SYMBOL.get(self.families.get(model, ""), "x")


@contextlib.contextmanager
def templated() -> Iterator[None]:
    """Figures made inside start from the report's template: plotly's default for the while, put back
    after. A figure copies its default template once, when it is made; setting a template by name
    afterwards (``layout`` outside this) copies and checks it again, ten times the cost of the figure
    itself. The figure is the same either way."""
    before = pio.templates.default
    pio.templates.default = TEMPLATE
    try:
        yield
    finally:
        pio.templates.default = before


def layout(fig: go.Figure, height: int = 420, **kw: object) -> go.Figure:
    if pio.templates.default != TEMPLATE:  # a figure made outside templated()
        kw = {"template": TEMPLATE, **kw}
    fig.update_layout(height=height, margin={"t": 40, "l": 60, "r": 20, "b": 50}, legend={"title_text": "model"},
                      **kw)
    return fig


def magnitude(v: float, unit: str = "") -> str:
    """A tick label that keeps its magnitude: 0.05, 2, 300, 5k, 1.2M (plotly's log ticks print "5"
    for 0.5 and "2, 5" between decades)."""
    a = abs(v)
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= size:
            text = f"{v / size:.3g}{suffix}"
            break
    else:
        text = f"{v:.3g}" if a >= 1e-3 or a == 0 else f"{v:.1e}"
    return f"{text} {unit}".rstrip()


def log_axis(values: Any, unit: str = "") -> dict[str, Any]:
    """A log axis whose ticks sit at 1, 2, 5 × 10^k inside the data's range, each labelled with its
    magnitude and unit; the range's two ends too when fewer than three such values fall inside."""
    v = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce").dropna(), dtype=float)
    v = v[v > 0]
    if not len(v):
        return {"type": "log"}
    lo, hi = float(v.min()), float(v.max())
    ticks = [m * 10.0 ** k for k in range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 1)
             for m in (1, 2, 5)]
    inside = [t for t in ticks if lo <= t <= hi]  # plotly's own range pads the data only a little
    if len(inside) > 7:  # a wide range: the decades alone, or every other decade
        inside = [t for t in inside if f"{t:.0e}".startswith("1")]
        inside = inside[::2] if len(inside) > 7 else inside
    if len(inside) < 3:  # a narrow range: its two ends as well, unless a tick already sits next to one
        ends = [e for e in (lo, hi) if all(abs(np.log10(e / t)) > 0.1 for t in inside)]
        inside = sorted(set(inside) | set(ends))
    return {"type": "log", "tickvals": inside, "ticktext": [magnitude(t, unit) for t in inside]}


def rgba(color: str, alpha: float) -> str:
    c = color.lstrip("#")
    r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


# -------------------------------------------------------------------------------------- accuracy
def summary_bars(summary: pd.DataFrame, style: Style) -> go.Figure:
    """Normalised score and average rank per model, side by side; coverage in the hover text. Bars in
    the summary table's order (best average rank on top)."""
    s = summary.iloc[::-1]  # plotly draws the first category at the bottom
    names = [lab(m) for m in s.model]
    hover = [f"{lab(m)}<br>tasks with a score: {int(a)}/{int(t)}" for m, a, t in zip(s.model, s.tasks_scored, s.tasks)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("mean normalised score (1 = best, 0 = worst)",
                                                        "average rank (1 = best)"), horizontal_spacing=0.18)
    colors = [style.color(m) for m in s.model]
    fig.add_bar(y=names, x=s.normalized_score, orientation="h", marker_color=colors, hovertext=hover,
                hovertemplate="%{hovertext}<br>normalised score %{x:.3f}<extra></extra>", row=1, col=1)
    fig.add_bar(y=names, x=s.avg_rank, orientation="h", marker_color=colors, hovertext=hover,
                hovertemplate="%{hovertext}<br>average rank %{x:.2f}<extra></extra>", row=1, col=2)
    fig.update_xaxes(range=[0, 1.05], row=1, col=1)
    fig.update_xaxes(range=[1, max(2.0, float(summary.avg_rank.max()) + 0.5)], row=1, col=2)
    return layout(fig, height=max(260, 40 + 32 * len(s)), showlegend=False)


def win_rate_heatmap(rates: pd.DataFrame, n: pd.DataFrame) -> go.Figure:
    """Row model's share of wins against the column model; the number of tasks in the hover text."""
    names = [lab(m) for m in rates.index]
    z = rates.to_numpy(dtype=float)
    text = [[("" if np.isnan(v) else f"{v:.2f}") for v in row] for row in z]
    custom = n.to_numpy(dtype=float)
    fig = go.Figure(go.Heatmap(z=z, x=names, y=names, zmin=0, zmax=1, colorscale="RdBu", text=text,
                               texttemplate="%{text}", customdata=custom, colorbar={"title": {"text": "win rate"}},
                               hovertemplate="%{y} beats %{x}<br>win rate %{z:.2f} over %{customdata:.0f} tasks"
                                             "<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title_text="model (row)")
    fig.update_xaxes(title_text="opponent (column)")
    side = 120 + 42 * len(names)
    return layout(fig, height=max(320, side))


def elo_plot(table: pd.DataFrame, style: Style, level: float, fewer: frozenset[str] = frozenset()) -> go.Figure:
    """Elo points with bootstrap confidence intervals, best on top; the models of ``fewer`` (planned on
    fewer tasks than the others: an Elo from fewer games) below them all, hollow, their tasks named."""
    t = table.assign(full=~table.model.isin(fewer)).sort_values(["full", "elo"], ascending=True)
    fig = go.Figure()
    for r in t.itertuples(index=False):
        name = lab(r.model) if r.full else f"{lab(r.model)} ({r.n_tasks} task{'s' if r.n_tasks != 1 else ''})"
        symbol = style.symbol(r.model) if r.full else f"{style.symbol(r.model)}-open"
        fig.add_scatter(x=[r.elo], y=[name], mode="markers", name=name,
                        marker={"color": style.color(r.model), "size": 11, "symbol": symbol},
                        error_x={"type": "data", "symmetric": False, "array": [r.elo_high - r.elo],
                                 "arrayminus": [r.elo - r.elo_low]},
                        hovertemplate=f"{name}<br>Elo %{{x:.0f}} "
                                      f"[{r.elo_low:.0f}, {r.elo_high:.0f}] ({level:.0%} CI)<extra></extra>",
                        showlegend=False)
    fig.add_vline(x=1000, line_dash="dot", line_color="#999")
    fig.update_xaxes(title_text=f"Elo (mean 1000), {level:.0%} bootstrap interval")
    return layout(fig, height=max(240, 60 + 34 * len(t)))


def cd_diagram(cd: CriticalDifference, style: Style) -> go.Figure:
    """Critical-difference diagram: average ranks on one axis, bars join models not significantly apart."""
    names = list(cd.avg_ranks.index)
    k = len(names)
    fig = go.Figure()
    half = math.ceil(k / 2)
    for i, m in enumerate(names):
        x = float(cd.avg_ranks[m])
        left = i < half
        y_text = -(i + 1) if left else -(k - i)
        x_text = 0.6 if left else k + 0.4
        fig.add_scatter(x=[x, x, x_text], y=[0, y_text, y_text], mode="lines", line={"color": style.color(m), "width": 1.5},
                        hoverinfo="skip", showlegend=False)
        fig.add_scatter(x=[x], y=[0], mode="markers", marker={"color": style.color(m), "size": 9},
                        name=lab(m), hovertemplate=f"{lab(m)}: average rank %{{x:.2f}}<extra></extra>", showlegend=False)
        fig.add_annotation(x=x_text, y=y_text, text=f"{lab(m)} ({x:.2f})", showarrow=False,
                           xanchor="right" if left else "left", font={"size": 12})
    for j, group in enumerate(cd.cliques):
        lo, hi = float(cd.avg_ranks[group].min()), float(cd.avg_ranks[group].max())
        y = -0.35 - 0.25 * j
        fig.add_scatter(x=[lo - 0.03, hi + 0.03], y=[y, y], mode="lines", line={"color": "#222", "width": 5},
                        hovertemplate="not significantly different: " + ", ".join(lab(g) for g in group) + "<extra></extra>",
                        showlegend=False)
    if not math.isnan(cd.cd):
        fig.add_scatter(x=[1, 1 + cd.cd], y=[1, 1], mode="lines+markers", line={"color": "#b3261e", "width": 3},
                        marker={"symbol": "line-ns-open", "size": 12}, showlegend=False,
                        hovertemplate=f"critical difference {cd.cd:.2f} (α = {cd.alpha})<extra></extra>")
        fig.add_annotation(x=1 + cd.cd / 2, y=1.35, text=f"CD = {cd.cd:.2f}", showarrow=False)
    fig.update_xaxes(range=[0.0, k + 1.0], tickmode="array", tickvals=list(range(1, k + 1)), side="top",
                     title_text="average rank (1 = best)", showgrid=False, zeroline=False)
    fig.update_yaxes(visible=False, range=[-(half + 1), 1.8])
    return layout(fig, height=160 + 36 * half)


# ------------------------------------------------------------------------------------- overview
FAMILY_COLOR = {ATTENTION: "#636EFA", NETWORK: "#00CC96", BOOSTING: "#EF553B", TREES: "#AB63FA"}


SHORT_FAMILY = {ATTENTION: "attn", NETWORK: "net", TREES: "trees"}  # under each bar; the axis title says them
# The verdicts' colours, and the order their shares stack in, bottom up: ahead on the axis (its interval at
# its top), behind at the top, those the splits cannot tell between.
VERDICT_COLOR = {Verdict.AHEAD: "#2e7d32", Verdict.EQUIVALENT: "#6b8fb3", Verdict.UNDETERMINED: "#cfd4db",
                 Verdict.NOT_CONVERGED: "#e0a030", Verdict.BEHIND: "#c62828"}
STACK = (Verdict.AHEAD, Verdict.EQUIVALENT, Verdict.UNDETERMINED, Verdict.NOT_CONVERGED, Verdict.BEHIND)


def answer_by_size(answers: Sequence[SizeAnswer], families: Sequence[str]) -> go.Figure:
    """The answer at a glance, per training size. Left: for each family, its best model on each dataset
    against the best boosting model there, as shares of the datasets by verdict (ahead, equivalent,
    undetermined, not converged, behind: :class:`pipeline.report.stats.verdicts.Tally`), the share ahead with its
    Wilson 95% interval. Right: the mean normalised score of each family's leader at that size
    (:class:`pipeline.report.stats.answer.SizeAnswer`)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.07, column_widths=[0.56, 0.44], subplot_titles=(
        f"share of datasets won against the best {lab(BOOSTING)} model: each family's best on each<br>"
        "dataset, by verdict (ahead with its 95% interval; undetermined: the folds cannot tell)",
        "mean normalised score of each family's leader at the size (1 = best, 0 = worst)"))
    labels = ["all" if a.size == "all" else f"{int(a.size):,}" for a in answers]
    others = [f for f in families if f != BOOSTING and any((t := a.vs_boosting.get(f)) is not None and t.n
                                                           for a in answers)]
    bars = [(a, lbl, f, a.vs_boosting.get(f)) for a, lbl in zip(answers, labels) for f in others]
    x = [[lbl for _, lbl, _, _ in bars], [SHORT_FAMILY.get(f, lab(f)) for _, _, f, _ in bars]]
    for v in STACK:
        shares = [t.share(v) if t is not None and t.n else None for _, _, _, t in bars]
        if not any(t is not None and t[v] for _, _, _, t in bars):
            continue
        extra: dict[str, Any] = {}
        if v is Verdict.AHEAD:
            iv = [t.interval(v) if t is not None and t.n else None for _, _, _, t in bars]
            extra["error_y"] = {"type": "data", "symmetric": False, "thickness": 1.5, "width": 4, "color": "#1b4d1e",
                                "array": [i[1] - y if i and y is not None else None for i, y in zip(iv, shares)],
                                "arrayminus": [y - i[0] if i and y is not None else None for i, y in zip(iv, shares)]}
        fig.add_bar(x=x, y=shares, name=str(v), marker={"color": VERDICT_COLOR[v]},
                    row=1, col=1, hovertemplate="%{hovertext}<extra></extra>",
                    hovertext=[f"{lab(f)} at {lab(lbl)} training rows, against the best {lab(BOOSTING)} model of each "
                               f"dataset:<br>{lab(t.text())}<br>{v}: {t[v]} of {t.n}, 95% interval "
                               f"{t.interval(v)[0]:.0%}–{t.interval(v)[1]:.0%}" if t is not None and t.n else ""
                               for _, lbl, f, t in bars], **extra)
    fig.update_layout(barmode="stack", bargap=0.25)
    extra_families = [f for f in families if f not in FAMILY_COLOR]
    for family in families:
        color = FAMILY_COLOR.get(family) or PALETTE[(5 + extra_families.index(family)) % len(PALETTE)]
        leads = [a.leaders.get(family) for a in answers]
        if any(leads):
            fig.add_scatter(
                x=list(range(len(answers))), mode="lines+markers", name=lab(family), legendgroup=lab(family),
                line={"color": color, "dash": DASH.get(family, "longdash")},
                marker={"symbol": SYMBOL.get(family, "x"), "size": 9, "color": color},
                hovertemplate="%{hovertext}<extra></extra>",
                y=[lead.normalized_score if lead else None for lead in leads], row=1, col=2,
                hovertext=[f"{lab(family)} at {lab(t)} training rows: {lab(lead.model)}<br>mean normalised score "
                           f"{lead.normalized_score:.3f} over the {lead.tasks_ran} tasks it ran" if lead else ""
                           for t, lead in zip(labels, leads)])
    named = ", ".join(f"{SHORT_FAMILY.get(f, lab(f))}: {lab(f)}" for f in others if SHORT_FAMILY.get(f, f) != f)
    fig.update_xaxes(title_text=f"training rows, as run, and family ({named})", tickangle=0, tickfont_size=10,
                     row=1, col=1)
    fig.update_xaxes(tickvals=list(range(len(answers))), ticktext=labels, range=[-0.5, len(answers) - 0.5],
                     title_text="training rows, as run", row=1, col=2)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", title_text="datasets", row=1, col=1)
    fig.update_yaxes(range=[0, 1.02], title_text="mean normalised score", row=1, col=2)
    layout(fig, height=440)
    fig.update_layout(legend={"orientation": "h", "x": 0, "y": -0.3, "yanchor": "top", "title_text": "",
                              "traceorder": "normal"},
                      margin={"t": 60, "l": 60, "r": 20, "b": 80})
    fig.update_annotations(font_size=13)
    return fig


def across_datasets(new: pd.DataFrame, rope: float) -> go.Figure:
    """The hierarchical model's answer for a new dataset (``new``: the across_datasets table's rows of a new dataset
    at ``rope``, the two best pairs), per training size: stacked bars of the probability that the pair's model is
    behind, equivalent to or ahead of the best boosting model, as Corani et al. draw them."""
    from pipeline.report.stats.across import LARGEST

    fig = go.Figure()
    order = sorted(set(new.sample_size), key=lambda z: (z == LARGEST, int(z) if z != LARGEST else 0))
    labels = [z if z == LARGEST else f"{int(z):,}" for z in order]
    pairs = [p for p in dict.fromkeys(new.pair)]
    x = [[lbl for _ in pairs for lbl in labels], [lab(p.removeprefix("best ")) for p in pairs for _ in labels]]
    for word, column in ((Verdict.BEHIND, "behind"), (Verdict.EQUIVALENT, "equivalent"), (Verdict.AHEAD, "ahead")):
        ys, hover = [], []
        for p in pairs:
            for z in order:
                r = new[(new.pair == p) & (new.sample_size == z)]
                ys.append(float(r[column].iloc[0]) if len(r) else None)
                hover.append(f"{lab(p)} against the best {lab(BOOSTING)} model, {lab(z)} training rows: on a new "
                             f"dataset, {column} (±{rope:g}) with probability {float(r[column].iloc[0]):.0%} "
                             f"({int(r.n_datasets.iloc[0])} datasets, {int(r.n_splits.iloc[0])} splits)" if len(r) else "")
        fig.add_bar(x=x, y=ys, name=f"{column} (±{rope:g})", marker={"color": VERDICT_COLOR[word]},
                    hovertemplate="%{hovertext}<extra></extra>", hovertext=hover)
    fig.update_layout(barmode="stack", bargap=0.25)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", title_text="probability on a new dataset")
    fig.update_xaxes(title_text="training rows, and the model set against boosting", tickangle=0, tickfont_size=10)
    layout(fig, height=380)
    fig.update_layout(legend={"orientation": "h", "x": 0, "y": -0.3, "yanchor": "top", "title_text": ""},
                      margin={"t": 30, "l": 60, "r": 20, "b": 80})
    return fig


# --------------------------------------------------------------------------------------- tuning
def tuning_curves(summary: pd.DataFrame, style: Style, x: str, y: str = "score") -> go.Figure:
    """Normalised best-validation score (``y='score'``), or the normalised test score of the configuration
    selected by validation (``y='test'``), against trials (``x='n_trials'``) or seconds (``x='seconds'``)."""
    fig = go.Figure()
    what = "normalised best val score" if y == "score" else "normalised test score of the selected config"
    for model, g in summary.groupby("model", sort=True):
        g = g.sort_values("n_trials")
        if g[y].isna().all():
            continue
        color = style.color(str(model))
        xs = list(g[x])
        fig.add_scatter(x=xs + xs[::-1], y=list(g[f"{y}_high"]) + list(g[f"{y}_low"][::-1]), fill="toself",
                        fillcolor=rgba(color, 0.15), line={"width": 0}, mode="lines", hoverinfo="skip",
                        showlegend=False,
                        legendgroup=lab(model))
        fig.add_scatter(x=xs, y=g[y], mode="lines+markers", name=lab(model), legendgroup=lab(model),
                        line={"color": color, "dash": style.dash(str(model)), "shape": "hv" if x == "seconds" else "linear"},
                        customdata=np.stack([g.n_trials, g.seconds, g.n_cells], axis=-1),
                        hovertemplate=f"{lab(model)}<br>%{{customdata[0]:.0f}} trials, %{{customdata[1]:.1f}} s"
                                      f"<br>{what} %{{y:.3f}}<br>%{{customdata[2]:.0f}} cells"
                                      "<extra></extra>")
    if x == "seconds":
        fig.update_xaxes(**log_axis(summary.seconds, "s"),
                         title_text="compute seconds spent on the search (mean per cell, log scale)")
    else:
        fig.update_xaxes(title_text="number of trials (1 = default configuration)", dtick=1 if len(summary) and
                         summary.n_trials.max() <= 20 else None)
    fig.update_yaxes(title_text="normalised best validation score" if y == "score" else
                     "normalised test score of the selected config")
    return layout(fig, height=380)


# -------------------------------------------------------------------------------------- compute
def model_bars(table: pd.DataFrame, style: Style, columns: Mapping[str, str], log: bool = True,
               units: Mapping[str, str] | None = None) -> go.Figure:
    """One small chart per column (title = the mapping's value), models on the x axis: bars on a linear
    axis, or, with ``log``, dots on a log axis labelled with their values (a bar's length means
    nothing on a log scale, where a small value looks like none)."""
    cols = [c for c in columns if c in table and table[c].notna().any()]
    fig = make_subplots(rows=1, cols=max(1, len(cols)), subplot_titles=[columns[c] for c in cols],
                        horizontal_spacing=0.07)
    names = [lab(m) for m in table.model]
    colors = [style.color(m) for m in table.model]
    for i, c in enumerate(cols, start=1):
        unit = (units or {}).get(c, "")
        hover = "%{x}<br>" + lab(columns[c]) + " %{y:.4g}<extra></extra>"
        if log:
            fig.add_scatter(x=names, y=table[c], mode="markers+text", showlegend=False, row=1, col=i,
                            marker={"color": colors, "size": 12},
                            text=[magnitude(v, unit) if pd.notna(v) else "" for v in table[c]],
                            textposition="middle right", cliponaxis=False, hovertemplate=hover)
            fig.update_yaxes(**log_axis(table[c], unit), row=1, col=i)
        else:
            fig.add_bar(x=names, y=table[c], marker_color=colors, showlegend=False, row=1, col=i,
                        hovertemplate=hover)
            if unit:
                fig.update_yaxes(ticksuffix=f" {unit}", row=1, col=i)
    return layout(fig, height=380)


def pareto(points: pd.DataFrame, style: Style, x: str, y: str, x_title: str, y_title: str,
           x_unit: str = "") -> go.Figure:
    """Score against cost per model, log cost axis; the Pareto front (``front`` column) joined."""
    fig = go.Figure()
    front = points[points.front].sort_values(x)
    if len(front) > 1:
        fig.add_scatter(x=front[x], y=front[y], mode="lines", line={"color": "#999", "dash": "dot"},
                        name="Pareto front", hoverinfo="skip")
    for r in points.itertuples(index=False):
        m = str(r.model)
        fig.add_scatter(x=[getattr(r, x)], y=[getattr(r, y)], mode="markers+text", name=lab(m), text=[lab(m)],
                        textposition="top center",
                        marker={"color": style.color(m), "size": 12, "symbol": style.symbol(m),
                                "line": {"width": 2, "color": "#222"} if r.front else {"width": 0}},
                        hovertemplate=f"{lab(m)}<br>{lab(x_title)} %{{x:.3g}}<br>{lab(y_title)} %{{y:.3f}}"
                                      f"{'<br>on the Pareto front' if r.front else ''}<extra></extra>")
    fig.update_xaxes(**log_axis(points[x], x_unit), title_text=x_title)
    fig.update_yaxes(title_text=y_title)
    return layout(fig, height=420)


def memory_vs_features(mem: pd.DataFrame, style: Style, column: str, title: str) -> go.Figure:
    """Peak memory against the number of features, one line per model (means over sizes and folds)."""
    fig = go.Figure()
    for model, g in mem.dropna(subset=[column]).groupby("model", sort=True):
        g = g.groupby("n_features", as_index=False).agg(v=(column, "mean"), datasets=("dataset", lambda s: ", ".join(
            sorted({lab(d) for d in s}))))
        fig.add_scatter(x=g.n_features, y=g.v, mode="lines+markers", name=lab(model),
                        line={"color": style.color(str(model)), "dash": style.dash(str(model))},
                        marker={"symbol": style.symbol(str(model))}, customdata=g.datasets,
                        hovertemplate=f"{lab(model)}<br>%{{x}} features (%{{customdata}})<br>%{{y:.1f}} MB"
                                      "<extra></extra>")
    widths = mem.n_features.dropna()
    if len(widths) and widths.max() >= 10 * max(widths.min(), 1):
        fig.update_xaxes(**log_axis(widths), title_text="number of features (log scale)")
    else:
        fig.update_xaxes(title_text="number of features")
    fig.update_yaxes(title_text=title)
    return layout(fig, height=380)


# ------------------------------------------------------------------------------------ attention
def attention_heatmap(matrix: np.ndarray, features: Sequence[str], title: str,
                      weights: np.ndarray | None = None) -> go.Figure:
    """Feature-to-feature attention as a multiple of uniform (``matrix``: 1 = every key alike): row =
    attending feature (query), column = attended (key). The colour scale is fixed, white at 1 and full
    colour at 0 and at 2× or more, so a map within a few percent of uniform looks uniform."""
    names = [lab(f) for f in features]
    raw_w = matrix if weights is None else weights
    fig = go.Figure(go.Heatmap(z=matrix, x=names, y=names, colorscale="RdBu", reversescale=True, zmin=0,
                               zmid=1, zmax=max(2.0, float(np.nanmax(matrix))), customdata=raw_w,
                               colorbar={"title": {"text": "× uniform"}},
                               hovertemplate="%{y} → %{x}<br>%{z:.3f} × uniform (weight %{customdata:.4f})"
                                             "<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title_text="query feature", automargin=True, dtick=1,
                     scaleanchor="x", constrain="domain")
    fig.update_xaxes(title_text="key feature", automargin=True, tickangle=-45, dtick=1, constrain="domain")
    side = min(1100, max(420, 220 + 14 * len(names)))
    return layout(fig, height=side, title_text=lab(title))


def trait_scatter(joined: pd.DataFrame, traits: Mapping[str, str], stats_text: Mapping[str, str]) -> go.Figure:
    """Small multiples: for each dataset characteristic, the attention − boosting gap at the largest size
    (y) against it (x), a point per dataset; each panel's title gives Spearman's ρ and its BH q-value."""
    names = list(traits)
    cols = 4
    rows = math.ceil(len(names) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"{lab(traits[t])}<br>{lab(stats_text.get(t, ''))}"
                                                              for t in names],
                        vertical_spacing=0.16, horizontal_spacing=0.06)
    for i, t in enumerate(names):
        r, c = divmod(i, cols)
        pts = joined[[t, "gap"]].dropna()
        fig.add_trace(go.Scatter(x=pts[t], y=pts.gap, mode="markers", marker={"size": 7, "color": PALETTE[0]},
                                 text=[lab(d) for d in joined.loc[pts.index, "dataset"]],
                                 hovertemplate="%{text}<br>%{x:.3g}: gap %{y:+.3f}<extra></extra>", showlegend=False),
                      row=r + 1, col=c + 1)
        fig.add_hline(y=0, line={"color": "#999", "dash": "dot", "width": 1}, row=r + 1, col=c + 1)
    for ann in fig.layout.annotations:
        ann.font = {"size": 11}
    fig.update_yaxes(title_text="attention − boosting", col=1)
    return layout(fig, height=300 * rows)
