"""One architecture at two configurations in Markdown (issue 59 item 4: FT-Transformer at its published size,
d_token 192, beside the study's d_token 64), for ``attnbench answer``: the table docs/STUDY.md holds, and the
sentences of what the second configuration changes that the README's summary ends with. The figures are
:func:`pipeline.report.stats.configs.changes`'; the datasets each entry's plan holds say where they are interim."""

from __future__ import annotations

import itertools
from typing import Any

from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.records import Status, Verdict
from pipeline.report.stats.architectures import COUNTED, datasets_planned
from pipeline.report.text import counted, listed, signed, thousands


def configuration_changes(db: str) -> list[Any]:
    """Where the file holds one architecture as more than one entry (FT-Transformer at d_token 64 and at its
    published 192): per entry and training size, against the base entry on the splits both finished
    (:func:`pipeline.report.stats.configs.changes`: the datasets by verdict, the mean difference over datasets,
    what it costs in trial time, memory and parameters). Entries are paired both at defaults or both searched: a
    default beside its searched entry is the tuning part's."""
    from pipeline.report.stats import configs

    q = Store(db, create=False).query
    cells = q("SELECT e.dataset, e.sample_size, e.repeat, e.fold, e.model, e.model_name, e.score, "
              "r.search_seconds AS seconds, e.epochs_bound AS bound, r.peak_cpu_mb AS peak_mb, r.n_params, "
              "e.model IN (SELECT DISTINCT c.model FROM current_results c JOIN "
              "(SELECT cell_id FROM trials GROUP BY cell_id HAVING count(DISTINCT suggestion) > 1) t USING (cell_id)) AS searched "
              "FROM expected_cells e JOIN current_results r USING (cell_id) WHERE e.status = ? AND e.score IS NOT NULL",
              [Status.OK.value], prepare=temporary_views)
    pairs = configs.pairs_of_configurations(cells)
    if not pairs:
        return []
    folds = {str(r.dataset): int(r.folds) for r in q("SELECT dataset, max(folds) AS folds FROM designs GROUP BY dataset",
                                                     prepare=temporary_views).itertuples(index=False)}
    return [c for model, base in pairs for c in configs.changes(cells, folds, model, base)]


def _ratio(x: float) -> str:
    return "–" if x != x else f"×{x:.2f}"


def configurations(db: str) -> list[str]:
    """:func:`configuration_changes` as a table, in Markdown."""
    found = configuration_changes(db)
    if not found:
        return []
    out = ["| entry | against | training rows | datasets | splits | ahead–equivalent–behind–undetermined | "
           "mean difference [95% CI over datasets] | trial time, ratio (hours) | peak memory, ratio | parameters, ratio |",
           "| --- | --- | ---: | ---: | ---: | --- | --- | --- | ---: | ---: |"]
    for c in found:
        text = "–".join(str(c.verdicts[v.value]) for v in COUNTED)
        if c.verdicts[Verdict.NOT_CONVERGED.value]:
            text += f" (+{c.verdicts[Verdict.NOT_CONVERGED.value]} not converged)"
        out.append(f"| {c.model} | {c.base} | {thousands(float(c.sample_size)) if c.sample_size.isdigit() else c.sample_size} "
                   f"| {c.datasets} | {c.splits} | {text} | {signed(c.mean)} [{signed(c.low)}, {signed(c.high)}] | "
                   f"×{c.cost_ratio:.2f} ({c.hours:.2f} vs {c.base_hours:.2f}) | {_ratio(c.memory_ratio)} | "
                   f"{_ratio(c.params_ratio)} |")
    return ["**One architecture at two configurations** (each entry against the one named as the architecture, "
            "on the splits both finished; each dataset decided over its splits, the mean over datasets; trial "
            "time: each cell's whole search, summed over the same cells; peak memory and parameters: the medians "
            "over the same cells):", "", *out]


def published_size(db: str) -> str:
    """What the published size changes (issue 59 item 4), in sentences for the README: per training size the
    second configuration's mean difference over datasets with its interval, what it costs, how many datasets
    it rests on of those planned; then at which sizes it is ahead or behind on average (its interval past zero)
    and where the data cannot tell yet."""
    from pipeline.report.data import PLANNED

    found = configuration_changes(db)
    if not found:
        return ""
    planned = Store(db, create=False).query(PLANNED, prepare=temporary_views)
    plans = datasets_planned(planned)
    out = []
    for (model, base), group in itertools.groupby(found, key=lambda c: (c.model, c.base)):
        each: list[str] = []
        ahead: list[str] = []
        behind: list[str] = []
        open_: list[str] = []
        none: list[str] = []
        for c in group:
            size = thousands(float(c.sample_size)) if c.sample_size.isdigit() else c.sample_size
            of = plans.get((model, c.sample_size), c.datasets)
            rest = f"{c.datasets} of {of} datasets, interim" if of > c.datasets else counted(c.datasets, "dataset")
            cost = f"for {_ratio(c.cost_ratio)} the trial time and {_ratio(c.memory_ratio)} the peak memory"
            if c.mean != c.mean:  # every dataset not converged, or too few splits: no dataset compared
                nc = c.verdicts[Verdict.NOT_CONVERGED.value]
                each.append(f"at {size} rows no mean (no dataset compared: {nc} not converged), {cost}")
                none.append(size)
                continue
            each.append(f"at {size} rows {signed(c.mean)} [{signed(c.low)}, {signed(c.high)}] ({rest}), {cost}")
            (ahead if c.low > 0 else behind if c.high < 0 else open_).append(size)
        said = ([f"ahead on average at {listed(ahead)} rows"] if ahead else []) + \
            ([f"behind on average at {listed(behind)} rows"] if behind else []) + \
            ([f"undetermined at {listed(open_)} rows (the interval holds zero)"] if open_ else [])
        said += [f"has no mean at {listed(none)} rows (not converged)"] if none else []
        verbs = [w if w.startswith("has ") else f"is {w}" for w in said]
        out.append(f"**What the second configuration changes: {model} against {base}** (the same architecture, on the "
                   f"splits both finished; mean difference over datasets, 95% t-interval): {'; '.join(each)}. So far it "
                   f"{', and '.join(verbs)}.")
    return "\n\n".join(out)
