"""``attnbench suites pin``: resolve an OpenML benchmark suite once and write a suite file that pins its tasks.

An ``openml_suite: ID`` entry is resolved at fetch time, so a suite edited on OpenML changes what a run
measures. :func:`pin_suite` asks OpenML (through the real openml client, so ``openml.config.server`` and
its cache apply) for the suite's task list and, where the server answers, each task's dataset name and
size, and writes a YAML suite with every task as its own ``openml_task`` entry.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from pipeline.errors import DataError
from pipeline.spec import parse_suite

FULL_MODELS = """\
models:
  - name: xgboost
    trials: 20
    fixed: {n_estimators: 2000, early_stopping_rounds: 50}
  - name: catboost
    trials: 20
    fixed: {iterations: 2000, early_stopping_rounds: 50}
  - name: mlp
    trials: 10
    fixed: {max_epochs: 200, patience: 16}
  - name: ft_transformer
    trials: 10
    fixed: {max_epochs: 200, patience: 16}
"""

LITE_MODELS = """\
models:
  - name: xgboost
    trials: 3
    fixed: {n_estimators: 300, early_stopping_rounds: 30}
  - name: catboost
    trials: 2
    fixed: {iterations: 300, early_stopping_rounds: 30}
  - name: mlp
    trials: 2
    fixed: {max_epochs: 30, patience: 6}
  - name: ft_transformer
    trials: 2
    space: {d_token: {choice: [32, 64]}, n_blocks: 1}
    fixed: {max_epochs: 20, patience: 5, n_heads: 4, lr: 0.0005}
"""

FULL_PROTOCOL = """\
protocol:
  folds: 10               # only used by a task without official folds; OpenML's own folds are used otherwise
  max_repeats: 1          # a task with repeated CV: the first repeat (10 folds) only
  validation_fraction: 0.2
  sample_sizes: [all]
"""

LITE_PROTOCOL = """\
protocol:
  folds: 10
  max_repeats: 1
  max_folds: 1            # lite: the first official fold of each task only
  validation_fraction: 0.2
  sample_sizes: [all]
"""


# Conventions of the suites we ship, kept when they are pinned again. The Grinsztajn et al. suites run
# both published training caps and tag each name as the authors' folders do (the same datasets appear,
# preprocessed differently, in AMLB, CC18 and each other, and names key the results); AMLB 271 renames
# the five datasets that CC18 holds under other tasks (other folds).
_GRINSZTAJN = {334: "clf_cat", 335: "reg_cat", 336: "reg_num", 337: "clf_num"}
CONVENTIONS: dict[int, dict[str, Any]] = {
    **{sid: {"suffix": f"-{tag}", "sample_sizes": ("[10000, 50000, all]", "[1000]")}
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


def _yaml_str(s: str) -> str:
    """A double-quoted YAML scalar (JSON string syntax is valid YAML)."""
    return json.dumps(s, ensure_ascii=False)


def _task_metadata(task_ids: list[int]) -> tuple[dict[int, dict[str, Any]], str | None]:
    """tid → {name, did, task_type, n_rows, n_features, n_classes}; an empty map and why where unavailable."""
    import openml

    if not task_ids:
        return {}, None
    from pipeline.data.sources import network_timeout

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

    from pipeline.data.sources import network_timeout

    try:
        with network_timeout():
            suite = openml.study.get_suite(suite_id)
    except Exception as err:
        from pipeline.data.sources import _openml_error

        raise _openml_error(f"suite {suite_id}", err) from err
    task_ids = [int(t) for t in (suite.tasks or [])]
    if not task_ids:
        raise DataError(f"OpenML suite {suite_id} ({suite.name}) lists no tasks")
    meta, meta_note = _task_metadata(task_ids)

    base = _slug(suite.alias or suite.name or f"openml-suite-{suite.id}")
    name = f"{base}-lite" if lite else base
    # Dataset labels must be unique in a suite; a name OpenML repeats gets the task id appended.
    names = [meta.get(t, {}).get("name") or f"openml-task-{t}" for t in task_ids]
    labels = [n if names.count(n) == 1 else f"{n}-t{t}" for n, t in zip(names, task_ids)]
    conv = CONVENTIONS.get(suite.id or -1, {})
    labels = [conv.get("rename", {}).get(n, n) + (conv.get("suffix", "") if meta.get(t) else "")
              for n, t in zip(labels, task_ids)]
    protocol = LITE_PROTOCOL if lite else FULL_PROTOCOL
    if "sample_sizes" in conv:
        protocol = protocol.replace("sample_sizes: [all]", f"sample_sizes: {conv['sample_sizes'][lite]}")
    models = LITE_MODELS if lite else FULL_MODELS
    folds = 1 if lite else 10
    trials = sum(int(m) for m in re.findall(r"trials: (\d+)", models))
    n_models = models.count("- name:")
    rows = [meta[t]["n_rows"] for t in task_ids if meta.get(t, {}).get("n_rows")]

    server = openml.config.server
    lines = [
        f"# {name}: OpenML benchmark suite {suite.id}"
        + (f" ({suite.alias})" if suite.alias else "") + f" — {suite.name}, pinned.",
        "#",
        "# Written by `attnbench suites pin"
        + f" {suite_id}{' --lite' if lite else ''}` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"# from {server} (openml-python {openml.__version__}).",
        f"# Source: https://www.openml.org/search?type=study&study_type=task&id={suite.id}",
        f"#   created {suite.creation_date} by user {suite.creator}; status {suite.status}.",
        f"# Size: {len(task_ids)} tasks"
        + (f", {min(rows):,}-{max(rows):,} rows each, {sum(rows):,} in all." if rows else "."),
        f"# Cost: {len(task_ids)} tasks × {folds} fold{'s' if folds > 1 else ''} × {n_models} models"
        f" = {len(task_ids) * folds * n_models:,} cells, {trials} trials per task-fold (no refit: the selected trial is the result).",
        "# Every task keeps OpenML's own train/test folds; validation is carved from each training fold.",
    ]
    if meta_note:
        lines.append(f"# Note: {meta_note}; dataset names were not pinned.")
    if conv:
        lines.append("# Names and sample sizes follow this project's conventions for this suite (pipeline/pin.py).")
    lines += [
        f"name: {name}",
        f"description: {_yaml_str(_one_line(suite.description) or suite.name)}",
        "seed: 0",
        "datasets:",
    ]
    for t, label in zip(task_ids, labels):
        m = meta.get(t)
        comment = ""
        if m:
            bits = [f"did {m['did']}" if m.get("did") else None,
                    f"{m['n_rows']:,} rows" if m.get("n_rows") else None,
                    f"{m['n_features']} features" if m.get("n_features") else None,
                    f"{m['n_classes']} classes" if m.get("n_classes") else None,
                    m.get("task_type") or None]
            comment = "  # " + ", ".join(b for b in bits if b) if any(bits) else ""
        lines.append(f"  - openml_task: {t}")
        lines.append(f"    name: {_yaml_str(label)}{comment}")
    text = "\n".join(lines) + "\n" + protocol + models

    parse_suite(yaml.safe_load(text), str(out_path))  # never write a file that does not validate
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out
