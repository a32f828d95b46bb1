"""A suite's plan: its cells (dataset × repeat × fold × sample size × subset seed × model), each
cell's id, and the rows that record the plan (``suite_cells``, the constant predictor's scores, the
run's plan notes). Pure: nothing here loads, writes or runs; :mod:`pipeline.runner` does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipeline.data import ingest as ingest_mod
from pipeline.data.floor import constant_scores
from pipeline.data.schema import PLAN_COLUMNS, REFERENCE_COLUMNS
from pipeline.spec import SuiteSpec


@dataclass(frozen=True)
class Cell:
    dataset: str
    repeat: int
    fold: int
    sample_size: str  # "128", ..., or "all"
    seed: int
    model: str  # the suite's key for the model entry
    n_train: int
    cell_id: str
    split_key: str = ""


def cell_id(suite: SuiteSpec, dataset: str, split_key: str, repeat: int, fold: int, size: str, seed: int,
            model: str, n_train: int = 0) -> str:
    """A cell's id: a hash of everything its own result depends on (the dataset's rows and split, the
    preprocessing, the training size and subset seed, the model entry and, for a model from outside
    attnbench, its code), and of nothing else: adding a size, a fold or a model to a suite leaves the
    other cells' ids, so they are not run again, and another suite that plans the same entry on the same
    split plans the same cell (the suite's name is a label, not part of what a cell is). ``n_train``: the
    cell's training rows, which choose the entry's ``from_size`` rule (0: none)."""
    blob = json.dumps([dataset, split_key, suite.protocol.preprocessing.model_dump(mode="json"), repeat,
                       fold, size, seed, model, suite.cell_hash(model, n_train)])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def legacy_cell_id(suite: SuiteSpec, dataset: str, split_key: str, repeat: int, fold: int, size: str, seed: int,
                   model: str) -> str:
    """The id the same cell had before schema 6 (it hashed the suite's name, and no model's code): a
    results file written then keeps its done cells (:meth:`Store.adopt` gives them their new ids)."""
    blob = json.dumps([suite.name, dataset, split_key, suite.protocol.preprocessing.model_dump(mode="json"), repeat,
                       fold, size, seed, model, suite.model_hash(model, code=False)])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def model_version(suite: SuiteSpec, model: str) -> str:
    """What makes two suites' entries under one model key the same model: the entry (with its code)
    and the preprocessing its cells see."""
    blob = json.dumps([suite.model_hash(model), suite.protocol.preprocessing.model_dump(mode="json")])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def expand(suite: SuiteSpec, datasets: list[ingest_mod.Prepared],
           notice: Callable[[str], None] = lambda _: None,
           not_applicable: list[dict[str, Any]] | None = None) -> Iterator[tuple[Cell, ingest_mod.Prepared]]:
    """Every cell of the suite. A sample size not below a fold's training rows is left out (``all``
    is the whole training part), with one notice per dataset; so is a model's cell past its declared
    limits, with a notice and a row (dataset, model, sizes, why) added to ``not_applicable``."""
    p = suite.protocol
    limits = {m.key: lim for m in suite.models if (lim := getattr(m.model_info().learner_class(), "limits", None))}
    for ds in datasets:
        outside: dict[str, tuple[set[str], str]] = {}  # model → the sizes past its declared limits, and why
        dropped: set[int] = set()
        fewest = None
        folds = ds.fold_sizes()
        if not ds.dataset.has_official_folds:
            folds = folds[folds.repeat < p.repeats_of(ds.name)]
        elif p.max_repeats is None and folds.repeat.nunique() > 1:
            n_rep, n_fold = folds.repeat.nunique(), folds.fold.nunique()
            notice(f"  notice: {ds.name}: its OpenML task has {n_rep} repeats × {n_fold} folds, and every repeat "
                   f"runs ({n_rep}× the cells of one); protocol.max_repeats: 1 runs the first repeat only")
        if p.max_repeats:
            folds = folds[folds.repeat < p.max_repeats]
        if p.max_folds:
            folds = folds[folds.fold < p.max_folds]
        # more_repeats: its repeats past the protocol's plan the dataset's largest size only, the largest that
        # the protocol's own repeats plan on any fold.
        more = not ds.dataset.has_official_folds and p.repeats_of(ds.name) > p.repeats
        most_rows = folds[folds.repeat < p.repeats].iloc[:, 2].max() if len(folds) else 0
        listed = p.sizes_for(ds.name)
        whole = whole_part_planned(p, listed, int(folds[folds.repeat < p.repeats].iloc[:, 2].min()) if len(folds) else 0)
        fit = [s for s in listed if (s == "all" and whole) or (s != "all" and s < most_rows)]
        grid_top = str(max((s for s in fit if s != "all"), default=0))
        top = "all" if "all" in fit and not (p.more_repeats and p.more_repeats.at == "grid") else grid_top
        for r, f, n_avail in folds.itertuples(index=False):
            sizes: list[tuple[str, int, int]] = []
            for s in listed:
                if s == "all":
                    if whole:
                        sizes.append(("all", int(n_avail), 1))
                elif s < n_avail:
                    sizes.append((str(s), int(s), p.subset_seeds))
                else:
                    dropped.add(int(s))
                    fewest = int(n_avail) if fewest is None else min(fewest, int(n_avail))
            if more and r >= p.repeats:
                sizes = [s for s in sizes if s[0] == top]
            for label, n, n_seeds in sizes:
                applicable = []
                for m in suite.models:
                    if m.sample_sizes is not None and label not in {str(x) for x in m.sample_sizes}:
                        continue  # not one of the entry's sizes: no cell
                    if m.repeats is not None and r >= m.repeats and ds.name not in (m.every_repeat_on or ()):
                        continue  # past the entry's repeats (and not a dataset it runs every repeat on): no cell
                    if m.datasets_at and label.isdigit() and ds.name not in m.datasets_at.get(int(label), [ds.name]):
                        continue  # a dataset the entry leaves out at this size: no cell
                    rows = min(n, int(m.fixed.get("context_rows") or n))  # a subsampled context's rows
                    why = (limits[m.key].problem(rows, ds.dataset.features.shape[1], len(ds.dataset.classes or ()),
                                                 m.resources.gpus > 0) if m.key in limits else None)
                    if why:  # not applicable: left out of the plan, never a failure or a zero
                        outside.setdefault(m.key, (set(), why))[0].add(label)
                    else:
                        applicable.append(m)
                for seed in range(n_seeds):
                    for m in applicable:
                        cid = cell_id(suite, ds.name, ds.split_key, int(r), int(f), label, seed, m.key, n)
                        yield Cell(ds.name, int(r), int(f), label, seed, m.key, n, cid, ds.split_key), ds
        for key, (labels, why) in outside.items():
            if not_applicable is not None:
                not_applicable.append({"dataset": ds.name, "model": key, "sizes": sorted(labels), "why": why})
            notice(f"  notice: {ds.name}: {key} not applicable at size{'s' if len(labels) > 1 else ''} "
                   f"{', '.join(sorted(labels, key=lambda x: (x == 'all', x.zfill(12))))} (at the first: {why}); those cells "
                   "are left out of the plan, not failed")
        if "all" in listed and not whole and len(folds):
            notice(f"  notice: {ds.name}: 'all' left out: its training part is "
                   + (f"above all_max_rows ({p.all_max_rows:,})" if p.all_max_rows is not None and
                      folds.iloc[:, 2].min() > p.all_max_rows else
                      f"less than {1 + p.all_min_gain:g}× the largest size below it ({grid_top})"))
        if dropped:
            notice(f"  notice: {ds.name}: sample size{'s' if len(dropped) > 1 else ''} "
                   f"{', '.join(map(str, sorted(dropped)))} not below the {fewest} training rows of a fold; "
                   "those cells are left out" + (" ('all' runs the whole training part)" if "all" in p.sample_sizes
                                                 else ""))


def whole_part_planned(p: Any, listed: list[Any], fewest: int) -> bool:
    """Whether a dataset whose folds' training parts hold at least ``fewest`` rows runs at 'all': the protocol
    lists it for the dataset (``listed``), the part is not above ``all_max_rows``, and it is at least
    ``1 + all_min_gain`` times the largest numbered size below it (a whole part just past a listed size adds a near
    copy of that size)."""
    if "all" not in listed or (p.all_max_rows is not None and fewest > p.all_max_rows):
        return False
    below = [s for s in listed if s != "all" and s < fewest]
    return not below or fewest >= (1 + p.all_min_gain) * max(below)


REGRESSION_METRICS = {"r2", "rmse"}


def read_on(metric: str | None, task_type: str) -> str | None:
    """The metric a cell of ``task_type`` is read on under a protocol's ``metric``: it where it fits the task
    (a regression metric for a regression dataset, a classification one for the others), else None (the
    default: accuracy, or R²)."""
    if metric is None or (metric in REGRESSION_METRICS) != (task_type == "regression"):
        return None
    return metric


def plan_notes(suite: SuiteSpec, not_applicable: list[dict[str, Any]]) -> str:
    """What the plan says beside its cells, kept with the run (the report reads it): the cells left out as
    past a model's declared limits, and the in-context models."""
    in_context = [m.key for m in suite.models if m.model_info().capabilities.in_context]
    return json.dumps({"not_applicable": not_applicable, "in_context": in_context})


def model_kinds(suite: SuiteSpec) -> dict[str, str]:
    """Each model entry's kind, as its Learner declares it: what the plan and the results store."""
    return {m.key: m.model_info().kind for m in suite.models}


def plan_rows(suite: SuiteSpec, run_id: str, cells: list[tuple[Cell, ingest_mod.Prepared]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's plan as the store keeps it: every cell of the suite (with the compressed variants its
    model entries ask for), and the constant predictor's scores on every split (the report's floor)."""
    entries = {m.key: m for m in suite.models}
    kinds = model_kinds(suite)  # stored: reports of this file need no registry
    versions = {m.key: model_version(suite, m.key) for m in suite.models}
    code = {m.key: suite.our_code[m.key].stored() for m in suite.models}  # attnbench's files, by version
    rows: list[dict[str, Any]] = []
    splits: dict[str, dict[tuple[int, int, str, int, int], None]] = {}
    split_keys: dict[str, str] = {}
    by_name = {}
    for cell, ds in cells:
        m = entries[cell.model]
        base = {"suite": suite.name, "cell_id": cell.cell_id, "run_id": run_id, "dataset": cell.dataset,
                "task_type": ds.dataset.task_type, "repeat": cell.repeat, "fold": cell.fold,
                "sample_size": cell.sample_size, "seed": cell.seed, "model": cell.model, "model_name": m.name,
                "variant": None, "n_train": cell.n_train, "model_kind": kinds[cell.model], "split_key": cell.split_key,
                "model_version": versions[cell.model], "code_versions": code[cell.model],
                "metric": read_on(suite.protocol.metric, ds.dataset.task_type)}
        rows.append(base)
        rows.extend({**base, "cell_id": f"{cell.cell_id}+{method}", "model": f"{cell.model}+{method}",
                     "variant": method} for method in m.compress)
        splits.setdefault(ds.name, {})[(cell.repeat, cell.fold, cell.sample_size, cell.n_train, cell.seed)] = None
        split_keys[ds.name] = cell.split_key
        by_name[ds.name] = ds
    reference = []
    for name, keys in splits.items():
        d = by_name[name]
        for row in constant_scores(d.dataset.task_type, d.dataset.y, d.dataset.classes, d.parts, d.orders, keys):
            reference.append({"suite": suite.name, "dataset": name, **row, "split_key": split_keys[name]})
    return pd.DataFrame(rows, columns=PLAN_COLUMNS), pd.DataFrame(reference, columns=REFERENCE_COLUMNS)
