"""The compute page: train and predict time, FLOPs, parameters, GPU-hours, and the score/time Pareto
fronts."""

from __future__ import annotations

import pandas as pd

from pipeline.report import figures as figs
from pipeline.report.data import ReportData, fewer_tasks_note, per_model, size_label
from pipeline.report.markup import Page, cell, note, num, table
from pipeline.report.site import PageSpec
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats.ranking import Ranking

SPEC = PageSpec("compute.html", "Compute", "Train time, inference speed, FLOPs, parameters, GPU-hours; score/time Pareto front.",
                lambda s: page_compute(s.data, s.rankings))


def page_compute(data: ReportData, rankings: dict[str, Ranking]) -> Page:
    p = SPEC.page()
    p.card("Per model, means over the (dataset, training size) rows of the compute view, cells that finished ok: "
           "train time of the selected trial, and per 1,000 training rows; the whole search's time (its trials' own "
           "run times, summed); prediction time per 1,000 rows and rows per second; forward FLOPs per row "
           "(torch models; boosting has none); parameters (for boosting: tree nodes for XGBoost, leaf values for "
           "CatBoost). GPU-hours add up the run time of every trial that ran on a CUDA device, one GPU each.")
    c = data.compute
    if c.empty:
        p.add(note("No finished cells."))
        return p
    def distinct(col: str) -> pd.Series:
        return c.groupby("model")[col].agg(lambda s: ",".join(sorted({d for v in s.dropna() for d in v.split(",")})))

    precision = distinct("precision") if "precision" in c else pd.Series(dtype=str)
    t = per_model(c, {"fit_seconds": "mean", "train_s_per_1k": "mean", "search_seconds": "mean",
                      "predict_s_per_1k": "mean", "predict_rows_per_s": "mean", "flops_per_row": "mean",
                      "n_params": "mean", "gpu_hours": "sum"}, data).join(distinct("devices"), on="model")
    t["precision"] = t.model.map(precision).fillna("")
    rows = [[cell(data.timed(r.model)), cell(data.family(r.model)), cell(num(r.fit_seconds, ".3g")),
             cell(num(r.train_s_per_1k, ".3g")), cell(num(r.search_seconds, ".3g")),
             cell(num(r.predict_s_per_1k, ".3g")), cell(num(r.predict_rows_per_s, ",.0f")),
             cell(num(r.flops_per_row, ".3g", "n/a")), cell(num(r.n_params, ",.0f")), cell(r.devices),
             cell(r.precision or "—"), cell(num(r.gpu_hours, ".4f")), cell(r.n_tasks), cell(r.coverage)]
            for r in t.itertuples(index=False)]
    p.add(table(["model", "family", "train s (selected trial)", "train s / 1K rows", "search s", "predict s / 1K rows",
                 "inference rows/s", "FLOPs/row", "parameters", "devices", "precision", "GPU-hours", "tasks",
                 "coverage"], rows, "table-compute"))
    if t.precision.str.contains("bf16|fp16").any():
        p.add(note("Precision: what a torch model's matrix products ran in (amp: auto is bf16 on a CPU or GPU with "
                   "native bf16 units, fp32 elsewhere; weights, optimiser state and losses stay fp32). A model "
                   "timed in bf16 is faster than the same model in fp32 on the same machine: compare its "
                   "seconds with that in mind."))
    if fewer_tasks_note(t):
        p.add(note(fewer_tasks_note(t)))
    if data.hardware_note():
        p.add(note(data.hardware_note()))
    if not (t.gpu_hours > 0).any():
        p.add(note("No cell ran on a GPU: GPU-hours are 0."))
    style = data.style()
    p.figure(figs.model_bars(t, style, {"train_s_per_1k": "train s per 1K rows", "search_seconds": "search seconds",
                                        "predict_s_per_1k": "predict s per 1K rows", "flops_per_row": "FLOPs per row",
                                        "n_params": "parameters"},
                             units={"train_s_per_1k": "s", "search_seconds": "s", "predict_s_per_1k": "s"}),
             "fig-compute-bars")
    size = data.headline_size
    if size in rankings:
        at = c[c.sample_size == size].groupby("model")[["train_s_per_1k", "predict_s_per_1k"]].mean()
        pts = rankings[size].summary[["model", "normalized_score"]].join(at, on="model")
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
