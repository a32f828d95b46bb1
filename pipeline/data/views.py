"""SQL views the pages are built from; ``duckdb results.duckdb`` and ``attnbench query`` see the same.

Every run installs them in the results file (:func:`install`: once per version of the views); the
pages and ``attnbench query`` make them for their own connection (:func:`temporary_views`), so an
upgraded attnbench reads an older file with its own views.
docs/QUERIES.md documents each view with example queries.

Vocabulary: a *split* is one (suite, dataset, sample_size, repeat, fold, seed); a *cell* is a split
run by one model, and its *key* is (suite, dataset, repeat, fold, sample_size, seed, model). Each run
writes its suite's cells as planned (``suite_cells``): the expected cells. A result whose cell id is
among them is *current*; any other result of that suite is *superseded* (its model entry or protocol
changed since, or the suite no longer has that cell): it stays in ``results`` as history and is listed
by ``superseded``, but no view that scores, counts or costs models reads it. An expected cell with no
current result is ``missing`` (not run yet, or interrupted), never dropped. A results file from before
``suite_cells`` existed expects, per suite, every split it has results for times every model. The
headline score is accuracy for classification and R² for regression, higher is better; each split
also has the score of a constant predictor (``reference_scores``), the floor a model must clear.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.data.store import Store

# How many random trial orders `tuning_curves` draws per cell (order 0 is the run's own).
N_SHUFFLES = 10

# A cell key: one model on one split of a suite.
KEY = "suite, dataset, repeat, fold, sample_size, seed, model"

VIEWS: dict[str, str] = {
    # The results of each suite's current cells (those its last run planned); every result of a suite
    # that has no plan on record (a file from before suite_cells).
    "current_results": """
        SELECT r.* FROM results r
        WHERE r.cell_id IN (SELECT cell_id FROM suite_cells)
           OR r.suite NOT IN (SELECT suite FROM suite_cells)
    """,
    # Results kept as history: 'replaced' when the suite's current plan has a cell of the same key (the
    # model entry or the protocol changed, so the cell id did), 'not in the suite' when it has none.
    "superseded": f"""
        SELECT r.suite, r.dataset, r.model, r.sample_size, r.repeat, r.fold, r.seed, r.status,
               CASE WHEN r.task_type = 'regression' THEN r.r2 ELSE r.accuracy END AS score,
               CASE WHEN c.cell_id IS NULL THEN 'not in the suite' ELSE 'replaced' END AS why,
               r.cell_id, c.cell_id AS current_cell_id, r.spec_hash, r.run_id, r.finished_at
        FROM results r LEFT JOIN suite_cells c USING ({KEY})
        WHERE r.suite IN (SELECT suite FROM suite_cells)
          AND r.cell_id NOT IN (SELECT cell_id FROM suite_cells)
    """,
    # One row per current cell that finished, failures included (their scores are NULL).
    "cells": """
        SELECT r.*, d.n_rows, d.n_features, d.n_categorical, d.n_classes
        FROM current_results r LEFT JOIN datasets d USING (dataset)
    """,
    # The headline score of a cell, higher is better: accuracy, or R² for regression. default_score is
    # the test score of the search's first trial, the model's default configuration. Budget flags:
    # epochs_bound when the selected trial kept its last epoch (boosting: round) and stopped for lack
    # of budget (max epochs or rounds, time limit, or ASHA's cut), i.e. it was still improving;
    # search_bound when the selected trial was the search's last (of more than one). Time per 1,000
    # rows: train_s_per_1k over the cell's training rows, predict_s_per_1k at its measured speed.
    # constant_score: the split's constant predictor (majority class, or the training mean);
    # no_better_than_constant: a finished cell that scored no better than it (it learned nothing).
    "scores": """
        WITH last AS (SELECT cell_id, max(trial_index) AS last_index FROM trials GROUP BY cell_id),
        dflt AS (SELECT cell_id, arg_min(CASE WHEN status IN ('ok', 'stopped') THEN coalesce(r2, accuracy) END,
                                         trial_index) AS s FROM trials GROUP BY cell_id)
        SELECT r.suite, r.dataset, r.task_type, r.model, r.model_name, r.sample_size, r.repeat, r.fold, r.seed,
               r.status,
               CASE WHEN r.task_type = 'regression' THEN r.r2 ELSE r.accuracy END AS score,
               CASE WHEN r.task_type = 'regression' THEN 'r2' ELSE 'accuracy' END AS score_name,
               CASE WHEN r.status = 'ok' THEN dflt.s END AS default_score,
               r.n_train, r.fit_seconds, r.predict_rows_per_s, r.peak_cpu_mb, r.peak_gpu_mb, r.n_params, r.device,
               r.epochs, r.best_epoch, r.stop_reason, r.n_trials,
               coalesce(r.status = 'ok' AND r.best_epoch >= r.epochs
                        AND r.stop_reason IN ('max_epochs', 'time_limit', 'pruned'), false) AS epochs_bound,
               coalesce(r.status = 'ok' AND r.n_trials > 1 AND b.trial_index = last.last_index, false)
                   AS search_bound,
               1000 * r.fit_seconds / nullif(r.n_train, 0) AS train_s_per_1k,
               1000 / nullif(r.predict_rows_per_s, 0) AS predict_s_per_1k,
               k.score AS constant_score,
               coalesce(r.status = 'ok' AND CASE WHEN r.task_type = 'regression' THEN r.r2 ELSE r.accuracy END
                        <= k.score + 1e-9, false) AS no_better_than_constant,
               r.cell_id
        FROM current_results r LEFT JOIN trials b ON b.trial_id = r.best_trial
        LEFT JOIN last ON last.cell_id = r.cell_id LEFT JOIN dflt ON dflt.cell_id = r.cell_id
        LEFT JOIN reference_scores k USING (suite, dataset, repeat, fold, sample_size, seed)
    """,
    # Every expected cell: each cell its suite's last run planned (suite_cells), or, for a suite with no
    # plan on record, each split it has results for × each model it has results for. Status 'missing'
    # where no current result was written. The coverage of every aggregate is counted from here.
    "expected_cells": """
        WITH legacy_splits AS (
            SELECT DISTINCT suite, dataset, task_type, sample_size, repeat, fold, seed FROM current_results
            WHERE suite NOT IN (SELECT suite FROM suite_cells)
        ), legacy_models AS (
            SELECT suite, model, any_value(model_name) AS model_name, any_value(model_kind) AS model_kind
            FROM current_results WHERE suite NOT IN (SELECT suite FROM suite_cells) GROUP BY ALL
        ), planned AS (
            SELECT suite, dataset, task_type, sample_size, repeat, fold, seed, model, model_name, model_kind
            FROM suite_cells
            UNION ALL
            SELECT s.suite, s.dataset, s.task_type, s.sample_size, s.repeat, s.fold, s.seed, m.model, m.model_name,
                   m.model_kind
            FROM legacy_splits s JOIN legacy_models m USING (suite)
        )
        SELECT p.suite, p.dataset, p.task_type, p.sample_size, p.repeat, p.fold, p.seed, p.model, p.model_name,
               p.model_kind,
               coalesce(c.status, 'missing') AS status,
               CASE WHEN c.status = 'ok' THEN c.score END AS score,
               CASE WHEN p.task_type = 'regression' THEN 'r2' ELSE 'accuracy' END AS score_name,
               c.default_score, coalesce(c.epochs_bound, false) AS epochs_bound,
               coalesce(c.search_bound, false) AS search_bound,
               CASE WHEN c.status = 'ok' THEN c.train_s_per_1k END AS train_s_per_1k,
               CASE WHEN c.status = 'ok' THEN c.predict_s_per_1k END AS predict_s_per_1k,
               k.score AS constant_score, coalesce(c.no_better_than_constant, false) AS no_better_than_constant,
               c.n_train, c.cell_id
        FROM planned p
        LEFT JOIN scores c USING (suite, dataset, sample_size, repeat, fold, seed, model)
        LEFT JOIN reference_scores k USING (suite, dataset, repeat, fold, sample_size, seed)
    """,
    # Mean ± std over folds and seeds per (suite, dataset, size, model), with coverage; is_best marks the
    # highest mean of its (suite, dataset, sample_size) when one model alone has it; is_tied_best marks
    # each of several that share it (a tie, which no model wins).
    "leaderboard": """
        WITH g AS (
            SELECT suite, dataset, task_type, sample_size, model, any_value(score_name) AS metric,
                   avg(score) AS score_mean, stddev_samp(score) AS score_std,
                   count(*) FILTER (WHERE status = 'ok') AS n_ok,
                   count(*) AS n_cells,
                   count(*) FILTER (WHERE status NOT IN ('ok', 'missing')) AS n_failed,
                   count(*) FILTER (WHERE status = 'missing') AS n_missing,
                   count(*) FILTER (WHERE epochs_bound) AS n_epochs_bound,
                   count(*) FILTER (WHERE search_bound) AS n_search_bound,
                   count(*) FILTER (WHERE no_better_than_constant) AS n_no_better,
                   avg(default_score) AS default_mean, avg(constant_score) AS constant_mean
            FROM expected_cells GROUP BY ALL
        )
        , top AS (
            SELECT g.*, max(score_mean) OVER (PARTITION BY suite, dataset, sample_size) AS top_mean FROM g
        ), t AS (
            SELECT top.*, count(*) FILTER (WHERE score_mean >= top_mean - 1e-12)
                              OVER (PARTITION BY suite, dataset, sample_size) AS n_at_top FROM top
        )
        SELECT t.* EXCLUDE (top_mean, n_at_top),
               coalesce(t.score_mean >= t.top_mean - 1e-12 AND t.n_at_top = 1, false) AS is_best,
               coalesce(t.score_mean >= t.top_mean - 1e-12 AND t.n_at_top > 1, false) AS is_tied_best,
               f.fit_seconds
        FROM t LEFT JOIN (
            SELECT suite, dataset, sample_size, model, avg(fit_seconds) AS fit_seconds
            FROM current_results WHERE status = 'ok' GROUP BY ALL
        ) f USING (suite, dataset, sample_size, model)
    """,
    # Test score against training size: one row per (suite, dataset, model, sample_size); n_train is
    # the mean number of training rows actually used ('all' becomes the dataset's size).
    "learning_curves": """
        SELECT suite, dataset, task_type, model, sample_size,
               avg(n_train) AS n_train, any_value(score_name) AS metric,
               avg(score) AS score_mean, stddev_samp(score) AS score_std,
               min(score) AS score_min, max(score) AS score_max,
               count(*) FILTER (WHERE status = 'ok') AS n_ok, count(*) AS n_cells,
               count(*) FILTER (WHERE status NOT IN ('ok', 'missing')) AS n_failed,
               count(*) FILTER (WHERE status = 'missing') AS n_missing,
               count(*) FILTER (WHERE epochs_bound) AS n_epochs_bound,
               count(*) FILTER (WHERE search_bound) AS n_search_bound,
               count(*) FILTER (WHERE no_better_than_constant) AS n_no_better,
               avg(constant_score) AS constant_mean
        FROM expected_cells GROUP BY ALL
    """,
    # Best validation score after the first n_trials trials of a cell, for N_SHUFFLES trial orders:
    # shuffle 0 is the order the run used; the others are seeded random orders of the random trials,
    # each starting from the default configuration (trial_index 0). best_val_norm rescales the
    # validation score per split between the worst and best trial of any model (0 = worst, 1 = best).
    "tuning_curves": f"""
        WITH t AS (
            SELECT r.suite, r.dataset, r.task_type, r.sample_size, r.repeat, r.fold, r.seed, r.model,
                   t.cell_id, t.trial_id, t.trial_index, t.status,
                   CASE WHEN t.status IN ('ok', 'stopped') THEN t.val_score END AS val_score,
                   CASE WHEN t.status IN ('ok', 'stopped') THEN t.val_loss END AS val_loss,
                   CASE WHEN t.status NOT IN ('ok', 'stopped') THEN NULL
                        WHEN r.task_type = 'regression' THEN t.r2 ELSE t.accuracy END AS test_score,
                   coalesce(t.seconds, 0) AS seconds
            FROM trials t JOIN current_results r USING (cell_id)
        ), bounds AS (
            SELECT suite, dataset, sample_size, repeat, fold, seed,
                   min(val_score) AS val_min, max(val_score) AS val_max,
                   min(test_score) AS test_min, max(test_score) AS test_max
            FROM t GROUP BY ALL
        ), o AS (
            SELECT t.*, s.shuffle,
                   row_number() OVER (
                       PARTITION BY t.cell_id, s.shuffle
                       ORDER BY t.trial_index > 0,
                                CASE WHEN s.shuffle = 0 THEN t.trial_index::UBIGINT
                                     ELSE hash(t.trial_id, s.shuffle) END,
                                t.trial_index
                   ) AS n_trials
            FROM t CROSS JOIN (SELECT range AS shuffle FROM range({N_SHUFFLES})) s
        ), c AS (
            SELECT o.*,
                   max(val_score) OVER w AS best_val_score,
                   -- the test score of the configuration selected so far: best validation score, ties
                   -- to the lower validation loss, then the earlier trial (as the cell's selection)
                   arg_max(test_score, CASE WHEN val_score IS NOT NULL THEN struct_pack(
                       v := val_score, l := -coalesce(val_loss, 'inf'::DOUBLE), o := -n_trials) END) OVER w
                       AS best_test_score,
                   sum(seconds) OVER w AS cum_seconds
            FROM o WINDOW w AS (PARTITION BY cell_id, shuffle ORDER BY n_trials ROWS UNBOUNDED PRECEDING)
        )
        SELECT c.suite, c.dataset, c.task_type, c.sample_size, c.repeat, c.fold, c.seed, c.model, c.cell_id,
               c.shuffle, c.n_trials, c.trial_index, c.status, c.val_score, c.test_score, c.seconds,
               c.best_val_score, c.best_test_score, c.cum_seconds,
               CASE WHEN b.val_max > b.val_min THEN (c.best_val_score - b.val_min) / (b.val_max - b.val_min)
                    WHEN c.best_val_score IS NOT NULL THEN 1.0 END AS best_val_norm,
               CASE WHEN b.test_max > b.test_min THEN (c.best_test_score - b.test_min) / (b.test_max - b.test_min)
                    WHEN c.best_test_score IS NOT NULL THEN 1.0 END AS best_test_norm
        FROM c JOIN bounds b USING (suite, dataset, sample_size, repeat, fold, seed)
    """,
    # Cost per (suite, dataset, size, model) over the cells that finished ok. fit_seconds is the
    # selected trial's training; search_seconds the whole search (first trial start to last trial end).
    # gpu_hours adds up the run time of every trial that ran on a CUDA device, one GPU each.
    "compute": """
        WITH gpu AS (SELECT cell_id, sum(seconds) AS s FROM trials WHERE device LIKE 'cuda%' GROUP BY cell_id)
        SELECT r.suite, r.dataset, r.sample_size, r.model, any_value(r.model_name) AS model_name,
               any_value(d.n_features) AS n_features, avg(r.n_train) AS n_train,
               count(*) AS n_ok,
               avg(r.fit_seconds) AS fit_seconds, avg(r.search_seconds) AS search_seconds,
               avg(1000 * r.fit_seconds / nullif(r.n_train, 0)) AS train_s_per_1k,
               avg(1000 / nullif(r.predict_rows_per_s, 0)) AS predict_s_per_1k,
               avg(r.predict_rows_per_s) AS predict_rows_per_s, avg(r.flops_per_row) AS flops_per_row,
               avg(r.n_params) AS n_params,
               string_agg(DISTINCT r.device, ',' ORDER BY r.device) AS devices,
               coalesce(sum(g.s), 0) / 3600 AS gpu_hours
        FROM current_results r LEFT JOIN datasets d USING (dataset) LEFT JOIN gpu g USING (cell_id)
        WHERE r.status = 'ok' GROUP BY r.suite, r.dataset, r.sample_size, r.model
    """,
    # Peak memory of the selected trial per (suite, dataset, size, model), against the dataset's width.
    "memory": """
        SELECT r.suite, r.dataset, r.sample_size, r.model, any_value(r.model_name) AS model_name,
               any_value(d.n_features) AS n_features, avg(r.n_train) AS n_train, count(*) AS n_ok,
               avg(r.peak_cpu_mb) AS peak_cpu_mb, max(r.peak_cpu_mb) AS peak_cpu_mb_max,
               avg(r.peak_gpu_mb) AS peak_gpu_mb, max(r.peak_gpu_mb) AS peak_gpu_mb_max
        FROM current_results r LEFT JOIN datasets d USING (dataset)
        WHERE r.status = 'ok' GROUP BY r.suite, r.dataset, r.sample_size, r.model
    """,
    # Every failed current cell and every failed trial of one, with its error text and, in message, the
    # error's last line (the exception) with no trailing newline.
    "failures": """
        SELECT 'cell' AS level, cell_id AS id, suite, dataset, model, sample_size, repeat, fold, status, error,
               finished_at, trim(string_split(rtrim(coalesce(error, ''), chr(10) || ' '), chr(10))[-1]) AS message
        FROM current_results WHERE status <> 'ok'
        UNION ALL
        SELECT 'trial', t.trial_id, r.suite, r.dataset, r.model, r.sample_size, r.repeat, r.fold, t.status,
               t.error, t.finished_at, trim(string_split(rtrim(coalesce(t.error, ''), chr(10) || ' '), chr(10))[-1])
        FROM trials t JOIN current_results r USING (cell_id) WHERE t.status NOT IN ('ok', 'stopped')
    """,
}


VIEWS_HASH = hashlib.sha256(json.dumps(VIEWS, sort_keys=True).encode()).hexdigest()[:16]


def install(store: Store) -> None:
    """Write this version's views into the results file, so that ``duckdb results.duckdb`` sees them;
    a file that has them already is not written."""
    with store.connect() as con:
        if store.meta(con, "views") == VIEWS_HASH:
            return
        create_views(con)
        con.execute("INSERT OR REPLACE INTO attnbench_meta VALUES ('views', ?)", [VIEWS_HASH])


def temporary_views(con: Any) -> None:
    """This version's views for one connection only (it may be read-only): a file written by an older
    attnbench answers the same queries as the pages. For ``Store.connect(prepare=...)``."""
    create_views(con, temporary=True)


def create_views(con: Any, temporary: bool = False) -> None:
    """(Re)create every view. ``temporary=True`` makes them for this connection only, which works on a
    read-only connection and shadows the file's own (possibly older) views: the report does that."""
    kind = "TEMP VIEW" if temporary else "VIEW"
    for name, sql in VIEWS.items():
        con.execute(f"CREATE OR REPLACE {kind} {name} AS {sql}")
