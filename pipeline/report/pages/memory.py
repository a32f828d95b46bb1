"""The memory page: peak CPU and GPU memory per model, and its growth with the number of features."""

from __future__ import annotations

from pipeline.report import figures as figs
from pipeline.report.data import ReportData, fewer_tasks_note, per_model
from pipeline.report.markup import Page, cell, note, num, table
from pipeline.report.site import PageSpec

SPEC = PageSpec("memory.html", "Memory", "Peak CPU and GPU memory, and its growth with the number of features.",
                lambda s: page_memory(s.data))


def page_memory(data: ReportData) -> Page:
    p = SPEC.page()
    p.card("What is measured: the peak memory that training the selected trial of each cell needed, the same way "
           "for every model. CPU: the kernel's high-water mark of the worker process's resident memory during the "
           "fit, less its resident memory when the fit began; before each fit the worker returns the memory its "
           "allocator keeps from earlier trials to the system and resets the high-water mark, every library was "
           "warmed up once when the worker started, and library code paged in from disk is not counted, so the "
           "figure does not depend on what the worker ran before (tests/test_memory.py checks this within 10%). "
           "GPU: the peak of torch's CUDA allocator during the fit, above what it held at the start, with the matrix "
           "library's workspaces (about 64 MiB on an H100) dropped before each fit so that every fit pays for its own "
           "(benchmarks/gpu_models.py checks that a trial's GPU peak is the same first in a worker and after others); "
           "n/a for models that ran on the CPU. Per model, means (and maxima) over the (dataset, training size) rows "
           "of the memory view; then how the peak grows with the number of features.")
    m = data.memory
    if m.empty:
        p.add(note("No finished cells."))
        return p
    t = per_model(m, {"peak_cpu_mb": "mean", "peak_cpu_mb_max": "max", "peak_gpu_mb": "mean", "peak_gpu_mb_max": "max"},
                  data)
    rows = [[cell(data.timed(r.model)), cell(data.family(r.model)), cell(num(r.peak_cpu_mb, ",.1f")),
             cell(num(r.peak_cpu_mb_max, ",.1f")), cell(num(r.peak_gpu_mb, ",.1f", "n/a")),
             cell(num(r.peak_gpu_mb_max, ",.1f", "n/a")), cell(r.n_tasks), cell(r.coverage)]
            for r in t.itertuples(index=False)]
    p.add(table(["model", "family", "peak CPU MB (mean)", "peak CPU MB (max)", "peak GPU MB (mean)",
                 "peak GPU MB (max)", "tasks", "coverage"], rows, "table-memory"))
    if fewer_tasks_note(t):
        p.add(note(fewer_tasks_note(t)))
    if data.hardware_note():
        p.add(note(data.hardware_note()))
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
