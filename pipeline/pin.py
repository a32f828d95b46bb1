"""``attnbench suites pin``: resolve an OpenML benchmark suite once and write a suite file that pins its tasks.

An ``openml_suite: ID`` entry is resolved at fetch time, so a suite edited on OpenML changes what a run
measures. :func:`pin_suite` asks OpenML (through the real openml client, so ``openml.config.server`` and
its cache apply) for the suite's task list and, where the server answers, each task's dataset name and
size, and writes a YAML suite with every task as its own ``openml_task`` entry.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from pipeline.errors import DataError
from pipeline.spec import SuiteSpec
from pipeline.suite_datasets import OpenMLTask

# What a pinned suite runs, full and lite (``--lite``).
MODELS: dict[bool, list[dict[str, Any]]] = {
    False: [
        {"name": "xgboost", "trials": 20, "fixed": {"n_estimators": 2000, "early_stopping_rounds": 50}},
        {"name": "catboost", "trials": 20, "fixed": {"iterations": 2000, "early_stopping_rounds": 50}},
        {"name": "mlp", "trials": 10, "fixed": {"max_epochs": 200, "patience": 16}},
        {"name": "ft_transformer", "trials": 10, "fixed": {"max_epochs": 200, "patience": 16}},
    ],
    True: [
        {"name": "xgboost", "trials": 3, "fixed": {"n_estimators": 300, "early_stopping_rounds": 30}},
        {"name": "catboost", "trials": 2, "fixed": {"iterations": 300, "early_stopping_rounds": 30}},
        {"name": "mlp", "trials": 2, "fixed": {"max_epochs": 30, "patience": 6}},
        {"name": "ft_transformer", "trials": 2, "space": {"d_token": {"choice": [32, 64]}, "n_blocks": 1},
         "fixed": {"max_epochs": 20, "patience": 5, "n_heads": 4, "lr": 0.0005}},
    ],
}
# folds: used only by a task without official folds; max_repeats 1: a task with repeated CV runs its
# first repeat; lite runs the first official fold only.
PROTOCOL: dict[bool, dict[str, Any]] = {
    False: {"folds": 10, "max_repeats": 1, "validation_fraction": 0.2, "sample_sizes": ["all"]},
    True: {"folds": 10, "max_repeats": 1, "max_folds": 1, "validation_fraction": 0.2, "sample_sizes": ["all"]},
}


# Conventions of the suites we ship, kept when they are pinned again. The Grinsztajn et al. suites run
# both published training caps and tag each name as the authors' folders do (the same datasets appear,
# preprocessed differently, in AMLB, CC18 and each other, and names key the results); AMLB 271 renames
# the five datasets that CC18 holds under other tasks (other folds).
_GRINSZTAJN = {334: "clf_cat", 335: "reg_cat", 336: "reg_num", 337: "clf_num"}
CONVENTIONS: dict[int, dict[str, Any]] = {
    **{sid: {"suffix": f"-{tag}", "sample_sizes": ([10000, 50000, "all"], [1000])}
       for sid, tag in _GRINSZTAJN.items()},
    271: {"rename": {n: f"{n}-amlb" for n in
                     ("credit-g", "blood-transfusion-service-center", "car", "kr-vs-kp", "phoneme")}},
}


def _slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.\-]+", "-", text).strip("-.")
    return s or "suite"


def _one_line(text: str | None, limit: int = 300) -> str:
    s = " ".join((text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _task_metadata(task_ids: list[int]) -> tuple[dict[int, dict[str, Any]], str | None]:
    """tid → {name, did, task_type, n_rows, n_features, n_classes}; an empty map and why where unavailable."""
    import openml

    if not task_ids:
        return {}, None
    from pipeline.data.openml_source import network_timeout

    try:
        with network_timeout():
            df = openml.tasks.list_tasks(task_id=task_ids, output_format="dataframe")
    except Exception as err:  # the listing is a convenience: the pinned ids do not depend on it
        return {}, f"task metadata unavailable ({type(err).__name__}: {_one_line(str(err), 120)})"
    out: dict[int, dict[str, Any]] = {}
    for _, row in pd.DataFrame(df).iterrows():
        def num(key: str, row: Any = row) -> int | None:
            v = row.get(key)
            try:
                return None if v is None or v != v else int(float(v))
            except (TypeError, ValueError):
                return None

        out[int(row["tid"])] = {
            "name": str(row.get("name") or ""),
            "did": num("did"),
            "task_type": str(row.get("task_type") or ""),
            "n_rows": num("NumberOfInstances"),
            "n_features": num("NumberOfFeatures"),
            "n_classes": num("NumberOfClasses"),
        }
    return out, None


def pin_suite(suite_id: int | str, out_path: str | Path, *, lite: bool = False) -> Path:
    """Resolve OpenML suite ``suite_id`` and write a suite YAML pinning each of its tasks to ``out_path``."""
    import openml

    from pipeline.data.openml_source import network_timeout, openml_error

    try:
        with network_timeout():
            suite = openml.study.get_suite(suite_id)
    except Exception as err:
        raise openml_error(f"suite {suite_id}", err) from err
    task_ids = [int(t) for t in (suite.tasks or [])]
    if not task_ids:
        raise DataError(f"OpenML suite {suite_id} ({suite.name}) lists no tasks")
    meta, meta_note = _task_metadata(task_ids)

    base = _slug(suite.alias or suite.name or f"openml-suite-{suite.id}")
    # Dataset labels must be unique in a suite; a name OpenML repeats gets the task id appended.
    names = [meta.get(t, {}).get("name") or f"openml-task-{t}" for t in task_ids]
    labels = [n if names.count(n) == 1 else f"{n}-t{t}" for n, t in zip(names, task_ids)]
    conv = CONVENTIONS.get(suite.id or -1, {})
    labels = [conv.get("rename", {}).get(n, n) + (conv.get("suffix", "") if meta.get(t) else "")
              for n, t in zip(labels, task_ids)]
    protocol = dict(PROTOCOL[lite])
    if "sample_sizes" in conv:
        protocol["sample_sizes"] = conv["sample_sizes"][lite]
    spec = SuiteSpec.model_validate({  # never write a file that does not validate
        "name": f"{base}-lite" if lite else base,
        "description": _one_line(suite.description) or suite.name,
        "seed": 0,
        "datasets": [{"openml_task": t, "name": label} for t, label in zip(task_ids, labels)],
        "protocol": protocol,
        "models": MODELS[lite],
    })
    dumped = spec.model_dump(mode="json", exclude_defaults=True)
    dumped["seed"] = spec.seed
    dumped["protocol"] = {k: v for k, v in spec.protocol.model_dump(mode="json").items() if k in protocol}
    order = ("name", "description", "seed", "datasets", "protocol", "models")
    body = yaml.safe_dump({k: dumped[k] for k in order if k in dumped}, sort_keys=False, allow_unicode=True,
                          width=120)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_header(spec, suite, suite_id, lite, meta, meta_note, bool(conv)) + body, encoding="utf-8")
    return out


def _header(spec: SuiteSpec, suite: Any, suite_id: int | str, lite: bool, meta: dict[int, dict[str, Any]],
            meta_note: str | None, conventions: bool) -> str:
    """The comment block above a pinned suite: where it came from, its size, what a run costs, and
    what OpenML says of each task."""
    import openml

    tasks = [d.openml_task for d in spec.datasets if isinstance(d, OpenMLTask)]
    rows = [meta[t]["n_rows"] for t in tasks if meta.get(t, {}).get("n_rows")]
    folds = spec.protocol.max_folds or spec.protocol.folds
    n_models, trials = len(spec.models), sum(m.trials for m in spec.models)
    lines = [
        f"{spec.name}: OpenML benchmark suite {suite.id}" + (f" ({suite.alias})" if suite.alias else "")
        + f" — {suite.name}, pinned.",
        "",
        f"Written by `attnbench suites pin {suite_id}{' --lite' if lite else ''}` on "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"from {openml.config.server} (openml-python {openml.__version__}).",
        f"Source: https://www.openml.org/search?type=study&study_type=task&id={suite.id}",
        f"  created {suite.creation_date} by user {suite.creator}; status {suite.status}.",
        f"Size: {len(tasks)} tasks" + (f", {min(rows):,}-{max(rows):,} rows each, {sum(rows):,} in all." if rows else "."),
        f"Cost: {len(tasks)} tasks × {folds} fold{'s' if folds > 1 else ''} × {n_models} models"
        f" = {len(tasks) * folds * n_models:,} cells, {trials} trials per task-fold (no refit: the selected trial is "
        "the result).",
        "Every task keeps OpenML's own train/test folds; validation is carved from each training fold.",
    ]
    if meta_note:
        lines.append(f"Note: {meta_note}; dataset names were not pinned.")
    if conventions:
        lines.append("Names and sample sizes follow this project's conventions for this suite (pipeline/pin.py).")
    described = [(t, m) for t in tasks if (m := meta.get(t))]
    if described:
        lines.append("Tasks, as OpenML lists them:")
        for t, m in described:
            bits = [f"did {m['did']}" if m.get("did") else None,
                    f"{m['n_rows']:,} rows" if m.get("n_rows") else None,
                    f"{m['n_features']} features" if m.get("n_features") else None,
                    f"{m['n_classes']} classes" if m.get("n_classes") else None,
                    m.get("task_type") or None]
            lines.append(f"  task {t} ({m.get('name') or '?'}): " + ", ".join(b for b in bits if b))
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


# ----------------------------------------------------------------------------------- data checksums
def pin_checksums(path: str | Path) -> list[tuple[str, str]]:
    """Write each file entry's rows checksum (``checksum:``) into the suite file where it gives none and
    the file is there, so that a copy of the data from anywhere else (OpenML, another machine) is
    checked against the rows the suite was written for. The file's text is kept as it is around each
    insertion (comments, order, flow or block style). Returns (dataset, checksum) of each written."""
    from pipeline.data.sources import load_file
    from pipeline.spec import load_suite
    from pipeline.suite_datasets import LocalFile, dataset_label

    p = Path(path)
    suite = load_suite(p)
    text = p.read_text()
    root = yaml.compose(text)
    entries = next((v for k, v in root.value if k.value == "datasets"), None) if root is not None else None
    inserts: list[tuple[int, str]] = []
    written = []
    for spec, node in zip(suite.datasets, entries.value if entries is not None else []):
        if not isinstance(spec, LocalFile) or spec.checksum or not Path(spec.file).is_file():
            continue
        checksum = load_file(spec).checksum()
        written.append((dataset_label(spec), checksum))
        if node.flow_style:  # {name: x, file: y}: before the closing brace
            inserts.append((node.end_mark.index - 1, f", checksum: {checksum}"))
        else:  # a block mapping: a line of its own, indented as its keys
            last = node.value[-1][1].end_mark
            indent = " " * node.value[0][0].start_mark.column
            inserts.append((last.index, f"\n{indent}checksum: {checksum}"))
    original = text
    for at, piece in sorted(inserts, reverse=True):
        text = text[:at] + piece + text[at:]
    if written:
        p.write_text(text)
        try:  # the edited file must read as the same suite, plus its checksums
            again = load_suite(p)
            assert [getattr(d, "checksum", None) for d in again.datasets if isinstance(d, LocalFile)
                    and getattr(d, "checksum", None)] == [c for _, c in written] or suite.datasets != again.datasets
        except BaseException:
            p.write_text(original)
            raise
    return written
