"""SQL views the pages are built from; ``duckdb results.duckdb`` and ``attnbench query`` see the same.

A view is recreated on every write-open of the database, so an upgraded attnbench brings its views.
"""

from __future__ import annotations

from typing import Any

VIEWS: dict[str, str] = {
    # One row per cell that finished, failures included (their scores are NULL).
    "cells": """
        SELECT r.*, d.n_rows, d.n_features, d.n_categorical, d.n_classes
        FROM results r LEFT JOIN datasets d USING (dataset)
    """,
    # The headline score of a cell, higher is better: accuracy, or R² for regression.
    "scores": """
        SELECT suite, dataset, task_type, model, model_name, sample_size, repeat, fold, seed, status,
               CASE WHEN task_type = 'regression' THEN r2 ELSE accuracy END AS score,
               CASE WHEN task_type = 'regression' THEN 'r2' ELSE 'accuracy' END AS score_name,
               n_train, fit_seconds, predict_rows_per_s, peak_cpu_mb, peak_gpu_mb, n_params, device
        FROM results
    """,
    # Mean ± std over folds and seeds per (suite, dataset, size, model), with coverage.
    "leaderboard": """
        SELECT suite, dataset, task_type, sample_size, model, any_value(score_name) AS metric,
               avg(score) FILTER (WHERE status = 'ok') AS score_mean,
               stddev_samp(score) FILTER (WHERE status = 'ok') AS score_std,
               count(*) FILTER (WHERE status = 'ok') AS n_ok,
               count(*) AS n_cells,
               count(*) FILTER (WHERE status <> 'ok') AS n_failed,
               avg(fit_seconds) FILTER (WHERE status = 'ok') AS fit_seconds
        FROM scores GROUP BY ALL
    """,
    "failures": """
        SELECT 'cell' AS level, cell_id AS id, suite, dataset, model, sample_size, repeat, fold, status, error,
               finished_at
        FROM results WHERE status <> 'ok'
        UNION ALL
        SELECT 'trial', t.trial_id, r.suite, r.dataset, r.model, r.sample_size, r.repeat, r.fold, t.status,
               t.error, t.finished_at
        FROM trials t JOIN results r USING (cell_id) WHERE t.status <> 'ok'
    """,
}


def create_views(con: Any) -> None:
    for name, sql in VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")
