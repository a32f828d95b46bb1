"""The Run details page: runs, models, datasets, trials per model and size, every failure with its
error, and the superseded results kept as history."""

from __future__ import annotations

import json

import pandas as pd

from pipeline.report.data import ReportData
from pipeline.report.markup import Page, cell, esc, note, num, raw, table
from pipeline.report.site import PageSpec
from pipeline.report.stats import aggregate as agg

# runs, trials and failures read every current result, not the compared cells: no shared-splits note
SPEC = PageSpec("runs.html", "Run details", "Suites, versions, hardware, trial counts and every failure with its error.",
                lambda s: page_runs(s.data), compares=False)


def json_table(text: object) -> str:
    try:
        d = json.loads(str(text)) if text is not None else {}
    except ValueError:
        return f"<pre>{esc(text)}</pre>"
    if not isinstance(d, dict):
        return f"<pre>{esc(text)}</pre>"
    return table(["key", "value"], [[cell(k), cell(v, "text")] for k, v in d.items()])


def duration(value: object) -> str:
    """A run's wall time as h:mm:ss ('' while it runs or when unknown)."""
    try:
        seconds = int(pd.Timedelta(value).total_seconds())
    except (TypeError, ValueError):
        return ""
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def hours(value: object) -> str:
    return "" if value is None or pd.isna(value) else f"{float(value) / 3600:.2f}"  # type: ignore[arg-type]


def page_runs(data: ReportData) -> Page:
    p = SPEC.page()
    p.h2("Runs", "runs")
    cols = ["run_id", "suite", "status", "started_at", "finished_at", "git_rev", "n_cells", "n_done", "n_failed",
            "n_skipped"]
    p.add(table([*cols, "wall", "trial hours"],
                [[*[cell(r[c]) for c in cols], cell(duration(r.get("wall"))), cell(hours(r.get("trial_seconds")))]
                 for _, r in data.runs.iterrows()], "table-runs"))
    p.add(note("A run's cost: its wall time (start to finish: a chunk of a long study is a run of its own) and the "
               "seconds of its trials summed, in hours (several trials run at once, so this can exceed the wall). "
               "A run 'killed' ended without recording its end (killed outright, its machine gone): the next run "
               "into the file marked it so, finished at its last commit."))
    for _, r in data.runs.iterrows():
        p.add(f"<details><summary>{esc(r.run_id)} · {esc(r.suite)}: command, suite, versions, hardware</summary>"
              f"<pre>{esc(r.argv)}</pre>"
              + (f"<pre>{esc(r.error)}</pre>" if r.error else "")
              + f"<h3>Suite</h3><pre>{esc(r.suite_yaml)}</pre><h3>Versions</h3>{json_table(r.versions)}"
              f"<h3>Hardware</h3>{json_table(r.hardware)}</details>")
    p.h2("Models", "models")
    rows = [[cell(m), cell(data.model_names.get(m)), cell(data.kinds.get(m)), cell(data.family_text(m))]
            for m in data.models]
    p.add(table(["model", "model name", "kind", "family"], rows, "table-models"))
    p.add(note("Each model's kind as its run stored it (a model of one's own declares its own)."
               + (" Files written before kinds were stored take them from today's registry: "
                  + ", ".join(data.legacy_kinds) + "." if data.legacy_kinds else "")))
    p.h2("Datasets", "datasets")
    p.add(table(list(data.datasets.columns), [[cell(v) for v in r] for r in data.datasets.itertuples(index=False)],
                "table-datasets"))
    p.h2("Trials", "trials")
    t = data.trials
    if t.empty:
        p.add(note("No cells yet."))
    else:
        g = t.groupby(["model", "sample_size"]).agg(cells=("cell_id", "size"), trials=("n_trials", "sum"),
                                                    per_cell_min=("n_trials", "min"), per_cell_max=("n_trials", "max"),
                                                    failed=("n_failed", "sum"), stopped=("n_stopped", "sum"),
                                                    seconds=("seconds", "sum")).reset_index()
        g = g.sort_values(["model", "sample_size"], key=lambda s: s.map(
            {k: i for i, k in enumerate(agg.size_order(g.sample_size))}) if s.name == "sample_size" else s)
        p.add(table(["model", "size", "cells", "trials", "per cell (min–max)", "failed trials", "stopped early",
                     "trial seconds"],
                    [[cell(r.model), cell(r.sample_size), cell(r.cells), cell(r.trials),
                      cell(f"{r.per_cell_min}–{r.per_cell_max}"), cell(r.failed, "missing" if r.failed else ""),
                      cell(r.stopped), cell(num(r.seconds, ",.1f"))] for r in g.itertuples(index=False)],
                    "table-trials"))
    p.h2(f"Failures ({len(data.failures)})", "failures")
    if data.failures.empty:
        p.add(note("None."))
    else:
        rows = []
        for r in data.failures.itertuples(index=False):
            err = str(r.error or "").strip()
            last = err.splitlines()[-1] if err else "(no error text)"
            rows.append([cell(r.level), cell(data.task_label(r.dataset, r.split_key)), cell(r.model), cell(r.sample_size),
                         cell(r.fold), cell(r.status, "missing"),
                         raw(f"<details><summary>{esc(last)}</summary><pre>{esc(err)}</pre></details>", "text")])
        p.add(table(["level", "dataset", "model", "size", "fold", "status", "error"], rows, "table-failures"))
    sup = data.superseded
    p.h2(f"Superseded results ({int(sup.n.sum()) if len(sup) else 0})", "superseded")
    p.add(note("Results of earlier versions of a cell, kept in the file as history and left out of every figure: "
               "'replaced' when the model entry or the protocol changed since (the current version is the one "
               "shown), 'not in the suite' when the suite no longer has that model or size. Query them with "
               "SELECT * FROM superseded."))
    if len(sup):
        p.add(table(["suite", "model", "size", "why", "results", "last finished"],
                    [[cell(r.suite), cell(r.model), cell(r.sample_size), cell(r.why), cell(r.n), cell(r.last)]
                     for r in sup.itertuples(index=False)], "table-superseded"))
    return p
