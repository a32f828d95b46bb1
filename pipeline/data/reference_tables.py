"""The tables a reference is made of, as a results file's cells give them: which tables (and what names
one row of each), a digest of every split (its validation and test rows and the order its training subsets
take rows in), and :func:`export_tables`, which copies one suite's rows of an attached results file less
what a reference's earlier chunks already ``Held``. :mod:`pipeline.data.references` reads references with it,
:mod:`pipeline.data.chunks` writes their chunks with it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pipeline.records import RunStatus

# The tables a reference holds, with what selects a chunk's rows of each (its cells, its runs, ...).
CELL_TABLES = ("results", "trials", "attention_maps", "predictions", "targets")
TABLES = (*CELL_TABLES, "suite_cells", "unplanned", "reference_scores", "runs", "datasets", "features",
          "dataset_traits", "split_digests")
# The plan's tables: each chunk's new plan rows, and the cells an earlier chunk planned that the suite plans no
# more (its plan re-cut, an entry changed or removed); a reference's plan is each cell's latest word.
PLAN_TABLES = ("suite_cells", "unplanned")
# A cell's result, by attempt: a cell re-run after a chunk shipped it (lost to the infrastructure, or
# --retry-failed, --force) is shipped again by the next chunk, its older attempt's trials dropped on load.
RESULT_KEY = "cell_id || '/' || coalesce(attempts, 0)"
# What names one row of the tables a chunk ships row by row: a search's trials (with their predictions and
# targets) are shipped as they are committed, before their cell has a result, and a later chunk ships only
# the rows it lacks. (A trial keeps its trial_id where a results file's upgrade moves its cell to a new
# cell_id: keyed by both.)
ROW_KEYS = {"trials": "cell_id || '/' || trial_id", "predictions": "cell_id || '/' || trial_id || '/' || part",
            "targets": "cell_id || '/' || part"}
# One row per key in a reference: where chunks hold a key twice, the latest chunk's row (a run shipped while
# running and again once it ended; a cell re-run; a search's trials in chunks from before ROW_KEYS).
LATEST = {"runs": "run_id", "results": "cell_id", "attention_maps": "cell_id", **ROW_KEYS}
SPLIT = ["dataset", "split_key", "repeat", "fold", "sample_size", "seed"]
# The protocol keys that make a cell what it is (its rows, its preprocessing): a reference keeps them; the
# caps (folds, sizes and repeats run) may grow, and a suite run against it may take fewer.
SPLIT_KEYS = ("folds", "repeats", "validation_fraction", "preprocessing")
DATASET_COLUMNS = ["dataset", "source", "task_type", "target", "n_rows", "n_features", "n_numeric", "n_categorical",
                   "n_classes", "classes", "openml_id", "openml_task_id", "checksum", "has_official_folds"]


def split_digests(dataset: str, split_key: str, parts: pd.DataFrame, orders: pd.DataFrame) -> pd.DataFrame:
    """One digest per (repeat, fold, seed) of a dataset's split: its validation and test rows and the order
    its nested training subsets take rows in (so every training size is covered)."""
    rows = []
    held = {k: g for k, g in parts.groupby(["repeat", "fold"])}
    for (repeat, fold, seed), g in orders.groupby(["repeat", "fold", "seed"]):
        p = held.get((repeat, fold))
        if p is None:
            continue
        h = hashlib.sha256()
        for role in ("valid", "test"):
            h.update(role.encode() + np.sort(p.row_id[p.role == role].to_numpy(dtype=np.int64)).tobytes())
        ordered = g.sort_values("rank").row_id if "rank" in g else g.row_id
        h.update(b"order" + ordered.to_numpy(dtype=np.int64).tobytes())
        rows.append({"dataset": dataset, "split_key": split_key, "repeat": int(repeat), "fold": int(fold),
                     "seed": int(seed), "digest": h.hexdigest()[:16]})
    return pd.DataFrame(rows, columns=["dataset", "split_key", "repeat", "fold", "seed", "digest"])


def one(con: Any, sql: str, params: list[Any] | None = None) -> Any:
    return con.execute(sql, params or []).fetchall()[0][0]


def suite_yaml(con: Any, suite: str) -> dict[str, Any]:
    """The suite as its latest run in the attached file ``src`` recorded it."""
    import yaml

    text = one(con, "SELECT suite_yaml FROM src.runs WHERE suite = ? ORDER BY started_at DESC LIMIT 1", [suite])
    return yaml.safe_load(text or "") or {}


@dataclass
class Held:
    """What a reference's earlier chunks hold, so that a new chunk writes each row once: the planned cells
    (a chunk of a study carries the whole plan, every chunk after it the new plan rows only), the cells
    with results (by :data:`RESULT_KEY`), the rows shipped row by row (``rows``, by :data:`ROW_KEYS`: a
    search's trials shipped before its cell finished), the runs, the datasets, the datasets'
    characteristics from their rows, and the constant predictor's splits. A run shipped while still running (``open_runs``) is
    shipped once more when it has ended (finished, interrupted, failed, or marked killed by a later run)."""

    plan: set[str] = field(default_factory=set)
    results: set[str] = field(default_factory=set)
    runs: set[str] = field(default_factory=set)
    datasets: set[str] = field(default_factory=set)
    scores: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SPLIT))
    traits: set[str] = field(default_factory=set)
    open_runs: set[str] = field(default_factory=set)
    rows: dict[str, set[str]] = field(default_factory=dict)
    plan_started: float | None = None  # when the latest run it holds started (epoch seconds): its plan's age


def export_tables(con: Any, src: str, suite: str, prefix: str, held: Held | None = None) -> None:
    """The reference tables of ``suite`` from the results file attached as ``src``, as tables
    ``<prefix>_<table>`` on ``con``, less what an earlier chunk ``held`` holds: the plan rows (and, as
    ``unplanned``, the held plan's cells the suite plans no more), the cells'
    results (with their trials, maps and predictions), the runs (and those it holds as running that have ended
    since; and those of the trials it holds, a run that finished no cell too), the datasets (and the
    characteristics of their rows the file holds) and the floor it has."""
    held = held or Held()
    skip_rows = {f"skip_{t}_rows": held.rows.get(t, set()) for t in ROW_KEYS}
    for name, values in (("skip_plan", held.plan), ("skip_results", held.results), ("skip_runs", held.runs),
                         ("skip_datasets", held.datasets), ("skip_traits", held.traits), ("open_runs", held.open_runs),
                         *skip_rows.items()):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} (id VARCHAR)")
        if values:
            con.executemany(f"INSERT INTO {name} VALUES (?)", [[v] for v in sorted(values)])
    con.register("held_scores", held.scores.astype({"repeat": "int64", "fold": "int64", "seed": "int64",
                                                     "sample_size": str}) if len(held.scores) else
                 pd.DataFrame({c: pd.Series(dtype="int64" if c in ("repeat", "fold", "seed") else str) for c in SPLIT}))
    con.execute(f"CREATE TABLE {prefix}_suite_cells AS SELECT * FROM {src}.suite_cells WHERE suite = ? "
                "AND cell_id NOT IN (SELECT id FROM skip_plan)", [suite])
    con.execute(f"CREATE TABLE {prefix}_unplanned AS SELECT id AS cell_id FROM skip_plan WHERE id NOT IN "
                f"(SELECT cell_id FROM {src}.suite_cells WHERE suite = ?) ORDER BY 1", [suite])
    new_cells = (f"(SELECT cell_id FROM {src}.suite_cells WHERE suite = ? "
                 f"EXCEPT SELECT cell_id FROM {src}.results WHERE ({RESULT_KEY}) IN (SELECT id FROM skip_results))")
    for table in CELL_TABLES:
        rows = f" AND ({ROW_KEYS[table]}) NOT IN (SELECT id FROM skip_{table}_rows)" if table in ROW_KEYS else ""
        con.execute(f"CREATE TABLE {prefix}_{table} AS SELECT * FROM {src}.{table} WHERE cell_id IN {new_cells}{rows}",
                    [suite])
    con.execute(f"CREATE TABLE {prefix}_reference_scores AS SELECT k.* FROM {src}.reference_scores k WHERE suite = ? "
                f"AND NOT EXISTS (SELECT 1 FROM held_scores h WHERE {' AND '.join(f'h.{c} = k.{c}' for c in SPLIT)})",
                [suite])
    con.unregister("held_scores")
    # A chunk that changes the plan ships the run whose plan it takes (the file's latest of the suite), so
    # that the reference knows how new its plan is (a file of an older plan is refused: chunks.add_chunk).
    plan_run = (f"SELECT run_id FROM (SELECT run_id FROM {src}.runs WHERE suite = ? ORDER BY started_at DESC "
                f"LIMIT 1) WHERE EXISTS (FROM {prefix}_suite_cells) OR EXISTS (FROM {prefix}_unplanned)")
    con.execute(f"CREATE TABLE {prefix}_runs AS SELECT * FROM {src}.runs WHERE (run_id IN "
                f"(SELECT run_id FROM {prefix}_results UNION SELECT run_id FROM {prefix}_suite_cells UNION SELECT run_id "
                f"FROM {prefix}_trials UNION SELECT run_id FROM {src}.trials WHERE ({ROW_KEYS['trials']}) IN "
                f"(SELECT id FROM skip_trials_rows) UNION {plan_run}) "
                "AND run_id NOT IN (SELECT id FROM skip_runs)) OR (run_id IN (SELECT id FROM open_runs) "
                f"AND status <> {RunStatus.RUNNING.sql})", [suite])
    datasets = (f"(SELECT dataset FROM {prefix}_suite_cells UNION SELECT dataset FROM {prefix}_results "
                "EXCEPT SELECT id FROM skip_datasets)")
    con.execute(f"CREATE TABLE {prefix}_datasets AS SELECT {', '.join(DATASET_COLUMNS)} FROM {src}.datasets "
                f"WHERE dataset IN {datasets}")
    con.execute(f"CREATE TABLE {prefix}_features AS SELECT * FROM {src}.features WHERE dataset IN {datasets}")
    if one(con, "SELECT count(*) FROM information_schema.tables WHERE table_catalog = ? AND table_name = "
                 "'dataset_traits'", [src]):
        con.execute(f"CREATE TABLE {prefix}_dataset_traits AS SELECT * FROM {src}.dataset_traits WHERE dataset IN "
                    f"(SELECT dataset FROM {src}.suite_cells WHERE suite = ? EXCEPT SELECT id FROM skip_traits)", [suite])
    else:  # a results file from before the table (opened read-only, so not upgraded)
        con.execute(f"CREATE TABLE {prefix}_dataset_traits (dataset VARCHAR, target_imbalance DOUBLE, "
                    "uninformative_share DOUBLE, irregularity DOUBLE)")
    keys = con.execute(f"SELECT DISTINCT dataset, split_key FROM {prefix}_suite_cells").fetchall()
    frames = []
    for dataset, key in keys:
        parts = con.execute(f"SELECT repeat, fold, row_id, role FROM {src}.splits WHERE dataset = ? AND "
                            "split_key = ?", [dataset, key]).df()
        orders = con.execute(f"SELECT repeat, fold, seed, row_id, rank FROM {src}.train_order WHERE dataset = ? "
                             "AND split_key = ?", [dataset, key]).df()
        frames.append(split_digests(dataset, key, parts, orders))
    digests = pd.concat(frames, ignore_index=True) if frames else split_digests("", "", pd.DataFrame(
        columns=["repeat", "fold", "row_id", "role"]), pd.DataFrame(columns=["repeat", "fold", "seed", "row_id", "rank"]))
    con.register("digests_df", digests)
    con.execute(f"CREATE TABLE {prefix}_split_digests AS SELECT d.* FROM digests_df d SEMI JOIN "
                f"(SELECT DISTINCT dataset, split_key, repeat, fold, seed FROM {prefix}_suite_cells) c "
                "USING (dataset, split_key, repeat, fold, seed)")
    con.unregister("digests_df")
