"""The report: self-contained HTML pages under ``reports/``, one index linking them all. This module
writes them all (:func:`write_report`) and builds the sample-size, tuning, compute, memory, attention
and claims pages; the index (overview.py), accuracy (accuracy.py) and run-details (runs.py) pages
have modules of their own, and every page reads :class:`pipeline.report.data.ReportData`.

Pages with figures load the one copy of plotly.js written beside them (no CDN: the folder works
offline over ``file://``, and a report of many pages carries plotly.js once). Every page
is built from the SQL views of :mod:`pipeline.report.views`, created as temporary views on a
read-only connection, so the numbers match ``attnbench query`` and ``duckdb results.duckdb``.
Every name that comes from a dataset, a feature or a model is escaped before it reaches a page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.report import aggregate as agg
from pipeline.report import claims as claims_mod
from pipeline.report import figures as figs
from pipeline.report.accuracy import Standing, bound_text, page_accuracy, standing
from pipeline.report.answer import BOOSTING, crossover_text, families, family_of
from pipeline.report.data import ReportData, size_label
from pipeline.report.markup import PLOTLY_JS, Page, cell, esc, note, num, table
from pipeline.report.overview import page_index
from pipeline.report.runs import page_runs
from pipeline.report.views import N_SHUFFLES

MAX_ATTENTION_FEATURES = 60  # wider maps show the features that receive the most attention


# ----------------------------------------------------------------------------------- sample size
def page_sample_size(data: ReportData) -> Page:
    p = Page("sample_size.html", "Sample-size sensitivity")
    p.card("Test score of each model against the number of training rows. Per dataset: the mean over folds "
           "and subset seeds, with its 95% confidence interval as a band where two or more splits finished; a "
           "size where a model has no score is a gap in its line. The crossover size is the smallest training "
           "size from which a network beats the best boosting model at that size and at every larger size run. "
           f"The dotted line marks {claims_mod.REFERENCE_ROWS:,} rows, below which tree ensembles are often reported to "
           "win (Grinsztajn et al., 2022).")
    curves = agg.curve_intervals(data.curves)
    sizes = data.sizes
    if len(sizes) < 2:
        p.add(note(f"Only one training size was run ({', '.join(sizes) or 'none'}); add several to the suite's "
                   "protocol.sample_sizes (e.g. [64, 128, 1024, all]) to see learning curves."))
        return p
    curves["coverage"] = [f"{int(o)}/{int(n)} cells ok" + (f", {int(f)} failed" if f else "") +
                          (f", {int(m)} missing" if m else "")
                          for o, n, f, m in zip(curves.n_ok, curves.n_cells, curves.n_failed, curves.n_missing)]
    curves["flag"] = [("budget-bound: " + bound_text(e, t).replace("⚑ ", "")) if e or t else ""
                      for e, t in zip(curves.n_epochs_bound, curves.n_search_bound)]
    style = data.style()
    networks = [m for m in data.models if data.family(m) != BOOSTING]  # every challenger of boosting
    incumbents = [m for m in data.models if data.family(m) == BOOSTING]

    p.add(curve_coverage(curves, sizes))

    p.h2("Crossover: each model vs the best boosting model", "crossover")
    cross = agg.crossover(curves, networks, incumbents, best_label="best challenger")
    cross = cross[cross.model != "best challenger"]
    attention = [m for m in networks if data.family(m) == family_of("attention")]
    if len(attention) > 1:  # the best attention model at each size, as the overview reports it
        best = agg.crossover(curves, attention, incumbents)
        cross = pd.concat([cross, best[best.model == "best attention"]], ignore_index=True)
        cross = cross.sort_values(["suite", "dataset", "model"], ignore_index=True)
    if cross.empty:
        p.add(note("Needs at least one boosting model and one other model with scores."))
    else:
        rows = []
        for r in cross.itertuples(index=False):
            txt = crossover_text(r)
            cls = "missing" if pd.isna(r.crossover_n) else ("best" if r.ahead_everywhere else "")
            kind = "attention, best at each size" if r.model == "best attention" else data.family(r.model)
            rows.append([cell(data.task_label(r.suite, r.dataset)), cell(r.model), cell(kind), cell(txt, cls),
                         cell(r.n_sizes)])
        p.add(table(["dataset", "model", "family", "crossover size", "sizes compared"], rows, "table-crossover"))
        p.add(note(reference_check(curves, networks, incumbents, data.kinds)))

    p.h2("Over all datasets: mean normalised score by size", "average")
    p.figure(figs.normalized_curves(agg.normalized_by_size(data.cells, sizes), style, sizes), "fig-curve-avg")
    p.add(note("Per task (dataset and size) the best model scores 1 and the worst 0; each point is the mean "
               "over that size's tasks, and a model with no score on a task gets 0 there. No band: datasets "
               "differ in difficulty, so their spread says nothing about the models; the per-dataset bands "
               "below are confidence intervals."))
    p.h2("Per dataset", "datasets")
    for i, ((suite, dataset), g) in enumerate(curves.groupby(["suite", "dataset"], sort=True)):
        metric = str(g.metric.iloc[0])
        n_split = int(g.n_cells.max())
        p.figure(figs.learning_curves(g, style, metric, title=f"{data.task_label(suite, dataset)} · {metric}",
                                      reference_n=claims_mod.REFERENCE_ROWS), f"fig-curve-{i}")
        if n_split < 2:
            p.add(note(f"{data.task_label(suite, dataset)}: one split per size, so no confidence band."))
    return p


def curve_coverage(curves: pd.DataFrame, sizes: list[str]) -> str:
    """Cells ok of expected per model and size, shown when any is short: a curve has no point where a
    model has no score."""
    g = curves.groupby(["model", "sample_size"])[["n_ok", "n_cells", "n_failed", "n_missing"]].sum()
    if (g.n_ok == g.n_cells).all():
        return note("Every expected cell finished ok.")
    rows = []
    for model in sorted(g.index.get_level_values(0).unique()):
        row = [cell(model)]
        for size in sizes:
            if (model, size) not in g.index:
                row.append(cell("—"))
                continue
            r = g.loc[(model, size)]
            short = r.n_ok < r.n_cells
            row.append(cell(f"{int(r.n_ok)}/{int(r.n_cells)}", "missing" if r.n_ok == 0 else ("partial" if short else ""),
                            f"{int(r.n_failed)} failed, {int(r.n_missing)} missing"))
        rows.append(row)
    return ("<h3>Coverage: cells ok of expected</h3>"
            + note("Points are means over the cells that finished; a model with no finished cell at a size has "
                   "no point there.")
            + table(["model", *[size_label(x) for x in sizes]], rows, "table-curve-coverage"))


def reference_check(curves: pd.DataFrame, networks: list[str], incumbents: list[str], kinds: dict[str, str]) -> str:
    """How often the best model of each family but boosting beat the best boosting model below the
    reference size."""
    below = curves[curves.n_train < claims_mod.REFERENCE_ROWS]
    wide = below.pivot_table(index=["suite", "dataset", "sample_size"], columns="model", values="score_mean")
    gb = wide[[m for m in incumbents if m in wide]].max(axis=1)
    parts = []
    for family in families(kinds):
        label = f"the best {family}"
        members = [m for m in networks if family_of(kinds.get(m)) == family and m in wide]
        if not members:
            continue
        best = wide[members].max(axis=1)
        both = best.notna() & gb.notna()
        n, k = int(both.sum()), int((best[both] > gb[both]).sum())
        if n:
            parts.append(f"{label} beat the best boosting model at {k} of {n} (dataset, size) points")
    if not parts:
        return f"No (dataset, size) point below {claims_mod.REFERENCE_ROWS:,} rows has both a boosting model and another."
    return f"Below {claims_mod.REFERENCE_ROWS:,} training rows, " + "; ".join(parts) + "."


# ---------------------------------------------------------------------------------------- tuning
def page_tuning(data: ReportData) -> Page:
    p = Page("tuning.html", "Tuning budget")
    p.card("Best validation score found after the first n trials of a model's search, as a function of "
           "n and of the compute seconds those trials took, and the test score of the configuration that "
           "validation selects after n trials (Grinsztajn et al., 2022). Trial 1 is always the "
           f"default configuration; the other trials are taken in {N_SHUFFLES} orders (the run's own and "
           f"{N_SHUFFLES - 1} seeded shuffles); the line is the mean over orders and the band the 10–90% range "
           "over orders. Scores are rescaled per split between the worst (0) and best (1) trial of any model, "
           "validation and test each on its own scale. Selection reads validation only; the test curve shows "
           "what tuning buys on unseen data.")
    if data.tuning.empty:
        p.add(note("No trials recorded."))
        return p
    summ = agg.tuning_summary(data.tuning)
    style = data.style()
    for size in agg.size_order(summ.sample_size):
        g = summ[summ.sample_size == size]
        p.h2(f"Training size: {size_label(size)}", f"size-{size}")
        p.figure(figs.tuning_curves(g, style, "n_trials"), f"fig-tuning-trials-{size}")
        p.figure(figs.tuning_curves(g, style, "seconds"), f"fig-tuning-seconds-{size}")
        p.figure(figs.tuning_curves(g, style, "n_trials", y="test"), f"fig-tuning-test-{size}")
        rows = []
        at = data.cells[data.cells.sample_size == size].groupby("model").search_bound.sum()
        for model, m in g.groupby("model", sort=True):
            m = m.sort_values("n_trials")
            first, last = m.iloc[0], m.iloc[-1]
            k = int(at.get(model, 0))
            rows.append([cell(model), cell(int(last.n_trials)), cell(num(first.score)), cell(num(last.score)),
                         cell(num(last.score - first.score, "+.3f")), cell(num(first.test)), cell(num(last.test)),
                         cell(num(last.test - first.test, "+.3f")), cell(num(last.seconds, ".1f")),
                         cell(int(first.n_cells)), cell(f"⚑ {k}" if k else "0", "partial" if k else "")])
        p.add(table(["model", "max trials", "val: default config", "val: after all trials", "val: gain",
                     "test: default config", "test: after all trials", "test: gain", "seconds (all trials)",
                     "cells", "best trial was the last"], rows, f"table-tuning-{size}"))
        p.add(note("Best trial was the last: cells whose search found its best configuration on its final trial; "
                   "a longer search might find better ones."))
    return p


# --------------------------------------------------------------------------------------- compute
def per_model(df: pd.DataFrame, how: dict[str, str], data: ReportData) -> pd.DataFrame:
    """The per-model rows shown on the compute and memory pages: plain means (or sums) over the view's
    (dataset, sample size) rows; docs/QUERIES.md gives the same numbers in SQL. ``coverage`` counts
    the cells measured (ok) against the cells expected."""
    out = df.groupby("model").agg(**{k: (k, v) for k, v in how.items() if k in df}, n_tasks=("dataset", "size"),
                                  n_ok=("n_ok", "sum")).reset_index()
    expected = data.cells.groupby("model").size()
    out["coverage"] = [f"{int(k)}/{int(expected.get(m, k))} cells" for m, k in zip(out.model, out.n_ok)]
    return out


def page_compute(data: ReportData, standings: dict[str, Standing]) -> Page:
    p = Page("compute.html", "Compute")
    p.card("Per model, means over the (dataset, training size) rows of the compute view, cells that finished ok: "
           "train time of the selected trial, and per 1,000 training rows; the whole search's time (first trial "
           "start to last trial end); prediction time per 1,000 rows and rows per second; forward FLOPs per row "
           "(torch models; boosting has none); parameters (for boosting: tree nodes for XGBoost, leaf values for "
           "CatBoost). GPU-hours add up the run time of every trial that ran on a CUDA device, one GPU each.")
    c = data.compute
    if c.empty:
        p.add(note("No finished cells."))
        return p
    devices = c.groupby("model").devices.agg(lambda s: ",".join(sorted({d for v in s.dropna() for d in v.split(",")})))
    t = per_model(c, {"fit_seconds": "mean", "train_s_per_1k": "mean", "search_seconds": "mean",
                      "predict_s_per_1k": "mean", "predict_rows_per_s": "mean", "flops_per_row": "mean",
                      "n_params": "mean", "gpu_hours": "sum"}, data).join(devices, on="model")
    rows = [[cell(r.model), cell(data.family(r.model)), cell(num(r.fit_seconds, ".3g")),
             cell(num(r.train_s_per_1k, ".3g")), cell(num(r.search_seconds, ".3g")),
             cell(num(r.predict_s_per_1k, ".3g")), cell(num(r.predict_rows_per_s, ",.0f")),
             cell(num(r.flops_per_row, ".3g", "n/a")), cell(num(r.n_params, ",.0f")), cell(r.devices),
             cell(num(r.gpu_hours, ".4f")), cell(r.n_tasks), cell(r.coverage)] for r in t.itertuples(index=False)]
    p.add(table(["model", "family", "train s (selected trial)", "train s / 1K rows", "search s", "predict s / 1K rows",
                 "inference rows/s", "FLOPs/row", "parameters", "devices", "GPU-hours", "tasks", "coverage"], rows,
                "table-compute"))
    if not (t.gpu_hours > 0).any():
        p.add(note("No cell ran on a GPU: GPU-hours are 0."))
    style = data.style()
    p.figure(figs.model_bars(t, style, {"train_s_per_1k": "train s per 1K rows", "search_seconds": "search seconds",
                                        "predict_s_per_1k": "predict s per 1K rows", "flops_per_row": "FLOPs per row",
                                        "n_params": "parameters"},
                             units={"train_s_per_1k": "s", "search_seconds": "s", "predict_s_per_1k": "s"}),
             "fig-compute-bars")
    size = data.headline_size
    if size in standings:
        at = c[c.sample_size == size].groupby("model")[["train_s_per_1k", "predict_s_per_1k"]].mean()
        pts = standings[size].summary[["model", "normalized_score"]].join(at, on="model")
        for col, what, fig_id in (("train_s_per_1k", "train", "fig-pareto"),
                                  ("predict_s_per_1k", "predict", "fig-pareto-predict")):
            p.h2(f"Score against {what} time ({size_label(size)})", fig_id.removeprefix("fig-"))
            sub = pts[["model", "normalized_score", col]].dropna()
            if sub.empty:
                p.add(note(f"No model has both a score and a {what} time at this size."))
                continue
            sub = sub.assign(front=agg.pareto_front(sub[col], sub.normalized_score))
            p.figure(figs.pareto(sub, style, col, "normalized_score",
                                 f"{what} seconds per 1,000 rows (mean over datasets, log scale)",
                                 "mean normalised score", x_unit="s"), fig_id)
            p.add(note(f"Outlined points are on the Pareto front: no other model both {what}s faster and scores "
                       "better."))
    return p


# ---------------------------------------------------------------------------------------- memory
def page_memory(data: ReportData) -> Page:
    p = Page("memory.html", "Memory")
    p.card("What is measured: the peak memory that training the selected trial of each cell needed, the same way "
           "for every model. CPU: the kernel's high-water mark of the worker process's resident memory during the "
           "fit, less its resident memory when the fit began; before each fit the worker returns the memory its "
           "allocator keeps from earlier trials to the system and resets the high-water mark, every library was "
           "warmed up once when the worker started, and library code paged in from disk is not counted, so the "
           "figure does not depend on what the worker ran before (tests/test_memory.py checks this within 10%). "
           "GPU: the peak of torch's CUDA allocator during the fit, above what it held at the start (n/a for models "
           "that ran on the CPU). Per model, means (and maxima) over the (dataset, training size) rows of the memory "
           "view; then how the peak grows with the number of features.")
    m = data.memory
    if m.empty:
        p.add(note("No finished cells."))
        return p
    t = per_model(m, {"peak_cpu_mb": "mean", "peak_cpu_mb_max": "max", "peak_gpu_mb": "mean", "peak_gpu_mb_max": "max"},
                  data)
    rows = [[cell(r.model), cell(data.family(r.model)), cell(num(r.peak_cpu_mb, ",.1f")),
             cell(num(r.peak_cpu_mb_max, ",.1f")), cell(num(r.peak_gpu_mb, ",.1f", "n/a")),
             cell(num(r.peak_gpu_mb_max, ",.1f", "n/a")), cell(r.n_tasks), cell(r.coverage)]
            for r in t.itertuples(index=False)]
    p.add(table(["model", "family", "peak CPU MB (mean)", "peak CPU MB (max)", "peak GPU MB (mean)",
                 "peak GPU MB (max)", "tasks", "coverage"], rows, "table-memory"))
    style = data.style()
    has_gpu = m.peak_gpu_mb.notna().any()
    if not has_gpu:
        p.add(note("No cell ran on a GPU: no GPU memory to show."))
    p.figure(figs.model_bars(t, style, {"peak_cpu_mb": "peak CPU MB", "peak_gpu_mb": "peak GPU MB"}, log=False,
                             units={"peak_cpu_mb": "MB", "peak_gpu_mb": "MB"}), "fig-memory-bars")
    p.h2("Against the number of features", "features")
    if m.n_features.nunique() < 2:
        p.add(note("All datasets have the same number of features; run wider and narrower datasets to see growth."))
    p.figure(figs.memory_vs_features(m, style, "peak_cpu_mb", "peak CPU MB"), "fig-memory-cpu-features")
    if has_gpu:
        p.figure(figs.memory_vs_features(m, style, "peak_gpu_mb", "peak GPU MB"), "fig-memory-gpu-features")
    return p


# ------------------------------------------------------------------------------------- attention
MeanMap = tuple[str, str, str, str, list[str], np.ndarray, int]


def mean_maps(att: pd.DataFrame) -> list[MeanMap]:
    """(suite, dataset, model, size, features, mean map, n cells) at each pair's largest size."""
    out: list[MeanMap] = []
    if att.empty:
        return out
    for (suite, dataset, model), g in att.groupby(["suite", "dataset", "model"], sort=True):
        size = agg.size_order(g.sample_size)[-1]
        g = g[g.sample_size == size]
        feats = json.loads(g["features"].iloc[0])
        mats = [np.asarray(json.loads(x), dtype=float) for x in g["map"]]
        mats = [x for x in mats if x.shape == (len(feats), len(feats))]
        if mats:
            out.append((suite, dataset, model, size, feats, np.nanmean(np.stack(mats), axis=0), len(mats)))
    return out


def page_attention(data: ReportData) -> Page:
    p = Page("attention.html", "Attention maps")
    p.card("Mean feature-to-feature attention of each attention model, averaged over heads, layers and test rows "
           "by the model, and here over folds and seeds at the largest training size run. Row = the attending "
           "(query) feature, column = the attended (key) feature. Colour shows each weight as a multiple of "
           "uniform attention (1/number of features): white is uniform, red more, blue less, on a fixed scale, "
           "so a map within a few percent of uniform looks uniform. Under each map: its range of weights and "
           "its mean distance from uniform (total variation, 0 = uniform, 1 = all attention on one feature).")
    maps = mean_maps(data.attention)
    if not maps:
        p.add(note("No attention maps recorded (no attention model finished a cell)."))
        return p
    by_dataset: dict[tuple[str, str], list[MeanMap]] = {}
    for m in maps:
        by_dataset.setdefault((m[0], m[1]), []).append(m)
    for i, ((suite, dataset), items) in enumerate(sorted(by_dataset.items())):
        p.h2(data.task_label(suite, dataset), f"dataset-{i}")
        for j, (_, _, model, size, feats, mat, n) in enumerate(items):
            shown = np.arange(len(feats))
            if len(feats) > MAX_ATTENTION_FEATURES:
                shown = np.sort(np.argsort(-np.nansum(mat, axis=0))[:MAX_ATTENTION_FEATURES])
                p.add(note(f"{model}: {len(feats)} features; showing the {MAX_ATTENTION_FEATURES} that receive the "
                           "most attention."))
            u = agg.uniformity(mat)
            ratio = agg.uniform_ratio(mat)
            p.figure(figs.attention_heatmap(ratio[np.ix_(shown, shown)], [feats[k] for k in shown],
                                            f"{model} · {size_label(size)} · mean of {n} cells",
                                            weights=mat[np.ix_(shown, shown)]), f"fig-attention-{i}-{j}")
            verdict = (f"uniform to within {agg.UNIFORM_TV:.0%}: the model attends to every feature alike, and "
                       "the pattern carries no information" if u.uniform else "not uniform")
            cls = (f"; each row gives the {u.n_keys} features {u.row_sum:.3f} of its attention, the rest to "
                   "other tokens ([CLS])" if u.row_sum < 0.999 else "")
            p.add(note(f"{model}: weights {u.low:.4f}–{u.high:.4f} (uniform {u.uniform_weight:.4f}{cls}), "
                       f"{u.ratio_low:.2f}×–{u.ratio_high:.2f}× uniform; distance from uniform {u.tv:.3f}: {verdict}."))
    return p


# ---------------------------------------------------------------------------------------- claims
VERDICT_CLASS = {claims_mod.SUPPORTED: "best", claims_mod.CONTRADICTED: "missing", claims_mod.THIN: "partial"}


def page_claims(data: ReportData) -> Page:
    p = Page("claims.html", "Claims")
    p.card("Five claims from the design notes behind these architectures, tested on the results in this file "
           "rather than assumed. Each gets an effect with a 95% interval and the comparisons behind it: "
           "supported when the interval lies on the claim's side, contradicted when it lies on the other, and "
           f"not enough data when there are fewer than {claims_mod.MIN_PAIRS} comparisons or the interval "
           "includes no effect. Ablations are found in the selected configurations: cells of one model on one "
           "split whose configurations differ only in the switch (se_reduction: 0 or se: false, attention: "
           "self, warmup_frac: 0), i.e. the same model entered twice in a suite, one entry labelled.")
    found = claims_mod.verdicts(data.curves,
                                data.configured, data.attention, data.datasets, data.kinds)
    rows = [[cell(i + 1), cell(c.statement), cell(c.verdict, VERDICT_CLASS[c.verdict]),
             cell(claims_mod.effect_text(c)),
             cell(c.n), cell(c.coverage)] for i, c in enumerate(found)]
    p.add(table(["#", "claim", "verdict", "effect [95% interval]", "comparisons", "coverage"], rows, "table-claims"))
    for i, c in enumerate(found):
        p.h2(f"{i + 1}. {c.statement}", f"claim-{c.key}")
        p.add(f'<p id="verdict-{esc(c.key)}"><strong>{esc(c.verdict)}</strong>: {esc(c.why)}</p>')
        p.add(note(f"Effect: {c.measure}. Coverage: {c.coverage}."))
        if c.cells:
            ids = ", ".join(f"'{x}'" for x in c.cells[:200])
            p.add(f"<details><summary>{len(c.cells)} cells behind it, and the query that lists them</summary>"
                  f"<pre>attnbench query \"SELECT * FROM scores WHERE cell_id IN ({esc(ids)})\"</pre></details>")
    return p


# ------------------------------------------------------------------------------------------ write
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
