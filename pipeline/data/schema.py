"""The results file's tables: their SQL, the columns of each suite's plan and reference scores, and
the names of the tables that hold a dataset's rows. The store creates and upgrades them."""

from __future__ import annotations

import re
from typing import Any

from pipeline.records import TEST_METRICS, Metrics, sql_columns

# 2: trials carry test metrics, cost, node/worker, start and attempt; 3: each suite's planned cells
# (suite_cells) and the constant predictor's score per split (reference_scores); 4: each planned cell and
# result carries its model's kind (model_kind), so that a report needs no registry to name families;
# 5: each trial's validation and test predictions (predictions) and each cell's targets (targets); the
# merges that built the file and the choice made for each cell two files both had (merges, merge_choices);
# 6: a task is a split, not a suite: planned cells, results and reference scores carry their split key
# (cell ids no longer hash the suite's name), planned cells their model entry's version (model_version),
# and runs the digest of each model's own code (model_code); later in 6, added on open: runs' plan notes
# (plan_notes: the cells left out as past a model's declared limits, and the in-context models), and
# planned cells the versions of attnbench's files their results depend on (code_versions: models/versions.py)
# 7: the number moves whenever the shape does (SHAPES): files of 6 gained features.high_cardinality,
# runs.plan_notes and suite_cells.code_versions under the same number, which said nothing of it; 8: each
# planned cell the metric its suite's protocol reads (suite_cells.metric; NULL: accuracy, or R² for regression)
SCHEMA_VERSION = 8
APP = "attnbench"
# Each schema number's shape (shape(): a digest of every table's SQL). tests/test_schema_version.py fails when
# the schema changes without a new number and a new entry here.
SHAPES = {7: "2dec8492dc936670", 8: "c326557e9ca352dc"}

# The test metrics' columns (pipeline.records.Metrics), as the reference scores hold them.
METRIC_COLUMNS = ", ".join(f"{c} {t}" for c, t in sql_columns(Metrics))

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS attnbench_meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, suite VARCHAR, suite_yaml VARCHAR, started_at TIMESTAMP,
    finished_at TIMESTAMP, status VARCHAR, git_rev VARCHAR, versions JSON, hardware JSON,
    argv VARCHAR, n_cells INTEGER, n_done INTEGER, n_failed INTEGER, n_skipped INTEGER, error VARCHAR,
    model_code JSON, plan_notes JSON
);
CREATE TABLE IF NOT EXISTS datasets (
    dataset VARCHAR PRIMARY KEY, source VARCHAR, task_type VARCHAR, target VARCHAR, n_rows INTEGER,
    n_features INTEGER, n_numeric INTEGER, n_categorical INTEGER, n_classes INTEGER,
    classes JSON, openml_id INTEGER, openml_task_id INTEGER, checksum VARCHAR, data_table VARCHAR,
    has_official_folds BOOLEAN, description VARCHAR, notes VARCHAR, fetched_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS dataset_traits (
    dataset VARCHAR PRIMARY KEY, target_imbalance DOUBLE, uninformative_share DOUBLE, irregularity DOUBLE
);
CREATE TABLE IF NOT EXISTS features (
    dataset VARCHAR, position INTEGER, name VARCHAR, kind VARCHAR, n_missing INTEGER, n_levels INTEGER,
    high_cardinality BOOLEAN, PRIMARY KEY (dataset, position)
);
CREATE TABLE IF NOT EXISTS splits (
    dataset VARCHAR, split_key VARCHAR, repeat INTEGER, fold INTEGER, row_id INTEGER, role VARCHAR
);
CREATE TABLE IF NOT EXISTS train_order (
    dataset VARCHAR, split_key VARCHAR, repeat INTEGER, fold INTEGER, seed INTEGER, row_id INTEGER,
    rank INTEGER
);
CREATE TABLE IF NOT EXISTS attention_maps (
    cell_id VARCHAR PRIMARY KEY, dataset VARCHAR, model VARCHAR, features JSON, map JSON
);
CREATE TABLE IF NOT EXISTS suite_cells (
    suite VARCHAR, cell_id VARCHAR, run_id VARCHAR, dataset VARCHAR, task_type VARCHAR, repeat INTEGER,
    fold INTEGER, sample_size VARCHAR, seed INTEGER, model VARCHAR, model_name VARCHAR, variant VARCHAR,
    n_train INTEGER, model_kind VARCHAR, split_key VARCHAR, model_version VARCHAR, code_versions VARCHAR,
    metric VARCHAR, PRIMARY KEY (suite, cell_id)
);
CREATE TABLE IF NOT EXISTS predictions (
    cell_id VARCHAR, trial_id VARCHAR, part VARCHAR, n_rows INTEGER, n_cols INTEGER, proba USMALLINT[],
    value FLOAT[], PRIMARY KEY (trial_id, part)
);
CREATE TABLE IF NOT EXISTS targets (
    cell_id VARCHAR, part VARCHAR, n_rows INTEGER, y DOUBLE[], PRIMARY KEY (cell_id, part)
);
CREATE TABLE IF NOT EXISTS merges (
    merged_at TIMESTAMP, files JSON, cells_added INTEGER, cells_replaced INTEGER, choices INTEGER
);
CREATE TABLE IF NOT EXISTS merge_choices (
    merged_at TIMESTAMP, cell_id VARCHAR, cell VARCHAR, kept_file VARCHAR, dropped_file VARCHAR, why VARCHAR
);
CREATE TABLE IF NOT EXISTS reference_scores (
    suite VARCHAR, dataset VARCHAR, repeat INTEGER, fold INTEGER, sample_size VARCHAR, seed INTEGER,
    task_type VARCHAR, n_train INTEGER, predictor VARCHAR, score DOUBLE, {METRIC_COLUMNS}, split_key VARCHAR,
    PRIMARY KEY (suite, dataset, repeat, fold, sample_size, seed)
);
"""

# The columns of a suite's plan, in table order (see ``Store.write_plan``).
PLAN_COLUMNS = ["suite", "cell_id", "run_id", "dataset", "task_type", "repeat", "fold", "sample_size", "seed", "model",
                "model_name", "variant", "n_train", "model_kind", "split_key", "model_version", "code_versions", "metric"]
REFERENCE_COLUMNS = ["suite", "dataset", "repeat", "fold", "sample_size", "seed", "task_type", "n_train", "predictor",
                     "score", *TEST_METRICS, "split_key"]

# Columns later schemas added to tables that older files already have (the store adds them on upgrade).
ADDED_COLUMNS = [("suite_cells", "model_kind", "VARCHAR"), ("suite_cells", "split_key", "VARCHAR"),
                 ("suite_cells", "model_version", "VARCHAR"), ("reference_scores", "split_key", "VARCHAR"),
                 ("runs", "model_code", "JSON"), ("features", "high_cardinality", "BOOLEAN"),
                 ("runs", "plan_notes", "JSON"), ("suite_cells", "code_versions", "VARCHAR"),
                 ("suite_cells", "metric", "VARCHAR")]

# Files before schema 6 kept no split key with a plan or a result: the upgrade takes it from the
# dataset's stored training orders where the dataset has one split key (a file written under one
# protocol), and otherwise makes those rows a task of their suite's own ('suite:<name>'), as every task
# was before. A plan's model version is its results' spec hash (one per suite and model), else the
# suite's name.
def split_key_backfill(table: str) -> str:
    return f"""
        WITH one AS (SELECT dataset, any_value(split_key) AS split_key FROM train_order GROUP BY dataset
                     HAVING count(DISTINCT split_key) = 1)
        UPDATE {table} SET split_key = coalesce((SELECT one.split_key FROM one WHERE one.dataset = {table}.dataset),
                                                'suite:' || {table}.suite)
        WHERE split_key IS NULL"""


VERSION_BACKFILL = """
    WITH v AS (SELECT c.suite, c.model, any_value(r.spec_hash) AS spec_hash
               FROM suite_cells c JOIN results r USING (cell_id) GROUP BY ALL)
    UPDATE suite_cells SET model_version = coalesce(
        (SELECT v.spec_hash FROM v WHERE v.suite = suite_cells.suite AND v.model = suite_cells.model),
        'suite:' || suite_cells.suite)
    WHERE model_version IS NULL"""


def backfill(con: Any) -> None:
    """Fill what rows from before schema 6 lack (split keys, model versions): on upgrade, and after a
    merge copied such rows in."""
    for table in ("suite_cells", "reference_scores", "results"):
        con.execute(split_key_backfill(table))
    con.execute(VERSION_BACKFILL)


def record_table(name: str, cls: type, key: str) -> str:
    """A table whose columns are the stored fields of a record dataclass (pipeline.records)."""
    cols = ", ".join(f"{c} {t}" for c, t in sql_columns(cls))
    return f"CREATE TABLE IF NOT EXISTS {name} ({cols}, PRIMARY KEY ({key}));"


def record_tables() -> list[tuple[str, type, str]]:
    from pipeline.records import CellResult, TrialRecord

    return [("trials", TrialRecord, "cell_id, trial_id"), ("results", CellResult, "cell_id")]


def table_name(dataset: str, checksum: str) -> str:
    """A safe table name for a dataset's rows; the checksum keeps different versions apart."""
    return "data_" + re.sub(r"[^a-z0-9]+", "_", dataset.lower()).strip("_")[:40] + "_" + checksum[:8]


def shape() -> str:
    """A digest of the tables this version makes: what SHAPES records per schema number."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps([SCHEMA, [record_table(*t) for t in record_tables()]],
                                     sort_keys=True).encode()).hexdigest()[:16]
