"""SQL views the pages are built from; ``duckdb results.duckdb`` and ``attnbench query`` see the same.

Every run installs them in the results file (:func:`install`: once per version of the views); the
pages and ``attnbench query`` make them for their own connection (:func:`temporary_views`), so an
upgraded attnbench reads an older file with its own views.
docs/QUERIES.md documents each view with example queries.

Vocabulary: a *split* is what decides a model's training and test rows: (dataset, split_key,
sample_size, repeat, fold, seed), where the split key hashes the dataset's checksum and the protocol
that split it. A *task* is (dataset, split_key, sample_size), the unit of every aggregate. A suite is a
label: two suites, or two merged files, that ran the same split ran the same task. A *cell* is a split
run by one model entry; its id hashes the split, the preprocessing and the entry (not the suite), so
two suites that plan the same entry on the same split plan one cell. Each run writes its suite's cells
as planned (``suite_cells``); ``plan`` is their union, one row per cell, with ``suite`` listing the
suites that planned it. A result whose cell is planned is *current*; any other result is *superseded*
(its model entry or protocol changed since, or no suite plans that cell any more): it stays in
``results`` as history and is listed by ``superseded``, but no view that scores, counts or costs
models reads it. A planned cell with no current result is ``missing`` (not run yet, or interrupted),
never dropped; a model a suite never planned on a task has no row there at all (not run is not a
loss). Where two suites plan different entries under one model key, ``model`` names each with the
first suite that plans it (``mlp [suite-b]``). A results file from before ``suite_cells`` existed
expects, per suite, every split it has results for times every model. The headline score is accuracy
for classification and R² for regression, higher is better; each split also has the score of a
constant predictor (``reference_scores``), the floor a model must clear.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from pipeline.data.older_files import shadow_older_tables
from pipeline.data.sql_words import BUDGET_STOPS, MISSING, OK, OK_OR_MISSING, SCORED_IN, SPLIT, SUITES, TASK
from pipeline.data.standings import standings_sql
from pipeline.records import TEST_METRICS

if TYPE_CHECKING:
    from pipeline.data.store import Store

# How many random trial orders `tuning_curves` draws per cell (order 0 is the run's own).
N_SHUFFLES = 10

# How many of the models that ran each task (a record there, ok or failed) planned the task and each of
# its splits (compared_cells, unshared_cells): a model planned with nothing run yet narrows nothing.
# expected_cells is read once (materialised: each read of it costs its joins again).
SHARING = f"""WITH e AS MATERIALIZED (SELECT * FROM expected_cells), ran AS (
            SELECT {TASK}, model FROM e GROUP BY ALL HAVING bool_or(status <> {MISSING})
        ), per_task AS (
            SELECT {TASK}, count(DISTINCT model) AS n FROM e JOIN ran USING ({TASK}, model) GROUP BY ALL
        ), per_split AS (
            SELECT {SPLIT}, count(DISTINCT model) AS n FROM e JOIN ran USING ({TASK}, model) GROUP BY ALL
        ), sharing AS (
            SELECT e.*, coalesce(s.n, 0) AS models_on_split, coalesce(t.n, 0) AS models_on_task
            FROM e LEFT JOIN per_split s USING ({SPLIT}) LEFT JOIN per_task t USING ({TASK})
        )"""


# The constant predictor's every test metric, per split (split_floor): the floor on whichever metric a suite reads.
FLOOR_METRICS = ", ".join(f"any_value({m}) AS {m}" for m in TEST_METRICS)


def score_of(t: str, metric: str | None = None, default: str | None = None) -> str:
    """The SQL of a row's headline score, higher is better, on the metric its suite reads (``metric``: a column
    naming it, default ``t.metric``; NULL: accuracy, or R² for regression, or ``default``): log-loss and RMSE
    negated."""
    m = metric or f"{t}.metric"
    fallback = default or f"CASE WHEN r.task_type = 'regression' THEN {t}.r2 ELSE {t}.accuracy END"
    return (f"CASE {m} WHEN 'accuracy' THEN {t}.accuracy WHEN 'balanced_accuracy' THEN {t}.balanced_accuracy "
            f"WHEN 'roc_auc' THEN {t}.roc_auc WHEN 'log_loss' THEN -{t}.log_loss WHEN 'r2' THEN {t}.r2 "
            f"WHEN 'rmse' THEN -{t}.rmse ELSE {fallback} END")


VIEWS: dict[str, str] = {
    # Every planned cell once (two suites that planned one cell list both in `suite`), with its model
    # named apart from another entry under the same key: `key [first suite]` where keys collide.
    "plan": """
        WITH c AS (
            SELECT cell_id, string_agg(DISTINCT suite, ', ' ORDER BY suite) AS suite, min(suite) AS first_suite,
                   any_value(dataset) AS dataset, any_value(coalesce(split_key, 'suite:' || suite)) AS split_key,
                   any_value(task_type) AS task_type, any_value(repeat) AS repeat, any_value(fold) AS fold,
                   any_value(sample_size) AS sample_size, any_value(seed) AS seed, any_value(model) AS model_key,
                   any_value(model_name) AS model_name, any_value(variant) AS variant,
                   any_value(n_train) AS n_train, any_value(model_kind) AS model_kind,
                   any_value(coalesce(model_version, 'suite:' || suite)) AS model_version,
                   any_value(metric) AS metric
            FROM suite_cells GROUP BY cell_id
        ), v AS (
            SELECT model_key, model_version, min(first_suite) AS first_suite,
                   count(*) OVER (PARTITION BY model_key) AS n_versions
            FROM c GROUP BY model_key, model_version
        )
        SELECT c.cell_id, c.suite, c.dataset, c.split_key, c.task_type, c.repeat, c.fold, c.sample_size, c.seed,
               CASE WHEN v.n_versions > 1 THEN c.model_key || ' [' || v.first_suite || ']' ELSE c.model_key END
                   AS model,
               c.model_key, c.model_name, c.variant, c.n_train, c.model_kind, c.model_version, c.metric
        FROM c JOIN v USING (model_key, model_version)
    """,
    # The results of planned cells, named as `plan` names them; every other result of a suite that has
    # no plan on record (a file from before suite_cells), each such suite a split key of its own. A result
    # whose cell another suite plans is that suite's (a shipped suite whose cells an earlier suite ran
    # holds their results under the earlier suite's name, with no plan of it).
    "current_results": """
        SELECT r.* REPLACE (p.suite AS suite, p.model AS model, p.split_key AS split_key), p.metric
        FROM results r JOIN plan p USING (cell_id)
        UNION ALL BY NAME
        SELECT r.* REPLACE ('suite:' || r.suite AS split_key) FROM results r
        WHERE r.suite NOT IN (SELECT suite FROM suite_cells) AND r.cell_id NOT IN (SELECT cell_id FROM suite_cells)
    """,
    # Results kept as history: 'replaced' when the suite that ran it plans a cell of the same key now
    # (the model entry or the protocol changed, so the cell id did), 'not in the suite' when it plans none.
    "superseded": """
        SELECT r.suite, r.dataset, r.model, r.sample_size, r.repeat, r.fold, r.seed, r.status,
               CASE WHEN r.task_type = 'regression' THEN r.r2 ELSE r.accuracy END AS score,
               CASE WHEN c.cell_id IS NULL THEN 'not in the suite' ELSE 'replaced' END AS why,
               r.cell_id, c.cell_id AS current_cell_id, r.spec_hash, r.run_id, r.finished_at
        FROM results r LEFT JOIN suite_cells c USING (suite, dataset, repeat, fold, sample_size, seed, model)
        WHERE r.suite IN (SELECT suite FROM suite_cells)
          AND r.cell_id NOT IN (SELECT cell_id FROM suite_cells)
    """,
    # One row per current cell that finished, failures included (their scores are NULL).
    "cells": """
        SELECT r.*, d.n_rows, d.n_features, d.n_categorical, d.n_classes
        FROM current_results r LEFT JOIN datasets d USING (dataset)
    """,
    # The constant predictor's scores, once per split (suites that ran one split share its row).
    "split_floor": f"""
        SELECT {SPLIT}, any_value(score) AS score, {FLOOR_METRICS} FROM (
            SELECT * REPLACE (coalesce(split_key, 'suite:' || suite) AS split_key) FROM reference_scores
            WHERE suite IN (SELECT suite FROM suite_cells)
            UNION ALL BY NAME
            SELECT * REPLACE ('suite:' || suite AS split_key) FROM reference_scores
            WHERE suite NOT IN (SELECT suite FROM suite_cells)
        ) GROUP BY ALL
    """,
    # The headline score of a cell, higher is better: accuracy, or R² for regression. default_score is
    # the test score of the search's first trial, the model's default configuration; val_score the
    # selected configuration's validation score (accuracy, or −RMSE: what picks a group's best model,
    # comparable within a split only). Budget flags:
    # epochs_bound when the selected trial kept its last epoch (boosting: round) and stopped for lack
    # of budget (max epochs or rounds, time limit, or ASHA's cut), i.e. it was still improving;
    # search_bound when the selected trial was the search's last (of more than one). Time per 1,000
    # rows: train_s_per_1k over the cell's training rows, predict_s_per_1k at its measured speed.
    # constant_score: the split's constant predictor (majority class, or the training mean);
    # no_better_than_constant: a finished cell that scored no better than it (it learned nothing).
    "scores": f"""
        WITH last AS (SELECT cell_id, max(trial_index) AS last_index FROM trials GROUP BY cell_id),
        dflt AS (SELECT cell_id, arg_min(trial_id, trial_index) AS first_trial, arg_min(status IN {SCORED_IN},
                                                                                      trial_index) AS scored
                 FROM trials GROUP BY cell_id)
        SELECT r.suite, r.dataset, r.split_key, r.task_type, r.model, r.model_name, r.sample_size, r.repeat, r.fold,
               r.seed, r.status,
               {score_of("r")} AS score,
               coalesce(r.metric, CASE WHEN r.task_type = 'regression' THEN 'r2' ELSE 'accuracy' END) AS score_name,
               r.val_score,
               CASE WHEN r.status = {OK} AND dflt.scored THEN {score_of("ft", "r.metric", "coalesce(ft.r2, ft.accuracy)")} END
                   AS default_score,
               r.n_train, r.fit_seconds, r.predict_rows_per_s, r.peak_cpu_mb, r.peak_gpu_mb, r.n_params, r.device,
               r.epochs, r.best_epoch, r.stop_reason, r.n_trials,
               coalesce(r.status = {OK} AND r.best_epoch >= r.epochs
                        AND r.stop_reason IN {BUDGET_STOPS}, false) AS epochs_bound,
               coalesce(r.status = {OK} AND r.n_trials > 1 AND b.trial_index = last.last_index, false)
                   AS search_bound,
               1000 * r.fit_seconds / nullif(r.n_train, 0) AS train_s_per_1k,
               1000 / nullif(r.predict_rows_per_s, 0) AS predict_s_per_1k,
               {score_of("k", "r.metric", "k.score")} AS constant_score,
               coalesce(r.status = {OK} AND {score_of("r")} <= {score_of("k", "r.metric", "k.score")} + 1e-9, false)
                   AS no_better_than_constant,
               r.cell_id
        FROM current_results r LEFT JOIN trials b ON b.trial_id = r.best_trial
        LEFT JOIN last ON last.cell_id = r.cell_id LEFT JOIN dflt ON dflt.cell_id = r.cell_id
        LEFT JOIN trials ft ON ft.trial_id = dflt.first_trial
        LEFT JOIN split_floor k USING (dataset, split_key, repeat, fold, sample_size, seed)
    """,
    # Every expected cell: each planned cell (plan), or, for a suite with no plan on record, each
    # split it has results for × each model it has results for (its results are those of no planned
    # cell: a cell two suites plan is one row, its suite named "a, b", not also a plan-less suite's).
    # Status 'missing' where no current result was written. A model has rows only on the tasks it was
    # planned on.
    "expected_cells": f"""
        WITH legacy_splits AS (
            SELECT DISTINCT suite, dataset, split_key, task_type, sample_size, repeat, fold, seed FROM current_results
            WHERE cell_id NOT IN (SELECT cell_id FROM suite_cells)
        ), legacy_models AS (
            SELECT suite, model, any_value(model_name) AS model_name, any_value(model_kind) AS model_kind
            FROM current_results WHERE cell_id NOT IN (SELECT cell_id FROM suite_cells) GROUP BY ALL
        ), legacy AS (
            SELECT s.suite, s.dataset, s.split_key, s.task_type, s.sample_size, s.repeat, s.fold, s.seed, m.model,
                   m.model_name, m.model_kind, r.cell_id, NULL::VARCHAR AS metric
            FROM legacy_splits s JOIN legacy_models m USING (suite)
            LEFT JOIN current_results r USING (suite, dataset, sample_size, repeat, fold, seed, model)
        ), planned AS (
            SELECT suite, dataset, split_key, task_type, sample_size, repeat, fold, seed, model, model_name,
                   model_kind, cell_id, metric
            FROM plan
            UNION ALL
            SELECT * FROM legacy
        )
        SELECT p.suite, p.dataset, p.split_key, p.task_type, p.sample_size, p.repeat, p.fold, p.seed, p.model,
               p.model_name, p.model_kind,
               coalesce(c.status, {MISSING}) AS status,
               CASE WHEN c.status = {OK} THEN c.score END AS score,
               coalesce(p.metric, CASE WHEN p.task_type = 'regression' THEN 'r2' ELSE 'accuracy' END) AS score_name,
               CASE WHEN c.status = {OK} THEN c.val_score END AS val_score,
               c.default_score, coalesce(c.epochs_bound, false) AS epochs_bound,
               coalesce(c.search_bound, false) AS search_bound,
               CASE WHEN c.status = {OK} THEN c.train_s_per_1k END AS train_s_per_1k,
               CASE WHEN c.status = {OK} THEN c.predict_s_per_1k END AS predict_s_per_1k,
               {score_of("k", "p.metric", "k.score")} AS constant_score,
               coalesce(c.no_better_than_constant, false) AS no_better_than_constant,
               c.n_train, p.cell_id
        FROM planned p
        LEFT JOIN scores c ON c.cell_id = p.cell_id
        LEFT JOIN split_floor k ON k.dataset = p.dataset AND k.split_key = p.split_key AND k.repeat = p.repeat
             AND k.fold = p.fold AND k.sample_size = p.sample_size AND k.seed = p.seed
    """,
    # The expected cells every aggregate compares, and counts coverage from: on each task, the splits that
    # every model that ran the task planned (one planned there with no record yet narrows nothing). Where suites planned one task on different splits (a
    # one-fold tuned slice merged beside a three-fold study), a model's mean over its own splits would set
    # one fold against three, and an entry identical to another would lose to it on the folds it never
    # ran; those splits are left out here, and unshared_cells lists them.
    "compared_cells": f"""
        {SHARING}
        SELECT * EXCLUDE (models_on_split, models_on_task) FROM sharing WHERE models_on_split = models_on_task
    """,
    # The expected cells compared_cells leaves out: splits of a task that only some of the models that ran
    # it planned, with how many of those planned the split (models_on_split of models_on_task).
    "unshared_cells": f"""
        {SHARING}
        SELECT * FROM sharing WHERE models_on_split < models_on_task
    """,
    # Mean ± std over folds and seeds per (task, model), with coverage; is_best marks the highest mean
    # of its task (dataset, split_key, sample_size) when one model alone has it; is_tied_best marks each
    # of several that share it (a tie, which no model wins). Only models planned on the task compete.
    "leaderboard": f"""
        WITH g AS (
            SELECT {TASK}, any_value(task_type) AS task_type, model,
                   {SUITES.format(col="suite")}, any_value(score_name) AS metric,
                   avg(score) AS score_mean, stddev_samp(score) AS score_std, avg(val_score) AS val_mean,
                   count(*) FILTER (WHERE status = {OK}) AS n_ok,
                   count(*) AS n_cells,
                   count(*) FILTER (WHERE status NOT IN {OK_OR_MISSING}) AS n_failed,
                   count(*) FILTER (WHERE status = {MISSING}) AS n_missing,
                   count(*) FILTER (WHERE epochs_bound) AS n_epochs_bound,
                   count(*) FILTER (WHERE search_bound) AS n_search_bound,
                   count(*) FILTER (WHERE no_better_than_constant) AS n_no_better,
                   avg(default_score) AS default_mean, avg(constant_score) AS constant_mean
            FROM compared_cells GROUP BY {TASK}, model
        )
        , top AS (
            SELECT g.*, max(score_mean) OVER (PARTITION BY {TASK}) AS top_mean FROM g
        ), t AS (
            SELECT top.*, count(*) FILTER (WHERE score_mean >= top_mean - 1e-12)
                              OVER (PARTITION BY {TASK}) AS n_at_top FROM top
        )
        SELECT t.* EXCLUDE (top_mean, n_at_top),
               coalesce(t.score_mean >= t.top_mean - 1e-12 AND t.n_at_top = 1, false) AS is_best,
               coalesce(t.score_mean >= t.top_mean - 1e-12 AND t.n_at_top > 1, false) AS is_tied_best,
               f.fit_seconds
        FROM t LEFT JOIN (
            SELECT c.dataset, c.split_key, c.sample_size, c.model, avg(r.fit_seconds) AS fit_seconds
            FROM compared_cells c JOIN current_results r ON r.cell_id = c.cell_id WHERE c.status = {OK} GROUP BY ALL
        ) f USING (dataset, split_key, sample_size, model)
    """,
    # Test score against training size: one row per (dataset, split_key, model, sample_size); n_train is
    # the mean number of training rows actually used ('all' becomes the dataset's size); val_mean the mean
    # validation score (what picks the best of several models at a size).
    "learning_curves": f"""
        SELECT dataset, split_key, any_value(task_type) AS task_type, model, sample_size,
               {SUITES.format(col="suite")},
               avg(n_train) AS n_train, any_value(score_name) AS metric,
               avg(score) AS score_mean, stddev_samp(score) AS score_std,
               min(score) AS score_min, max(score) AS score_max, avg(val_score) AS val_mean,
               count(*) FILTER (WHERE status = {OK}) AS n_ok, count(*) AS n_cells,
               count(*) FILTER (WHERE status NOT IN {OK_OR_MISSING}) AS n_failed,
               count(*) FILTER (WHERE status = {MISSING}) AS n_missing,
               count(*) FILTER (WHERE epochs_bound) AS n_epochs_bound,
               count(*) FILTER (WHERE search_bound) AS n_search_bound,
               count(*) FILTER (WHERE no_better_than_constant) AS n_no_better,
               avg(constant_score) AS constant_mean
        FROM compared_cells GROUP BY dataset, split_key, model, sample_size
    """,
    # Best validation score after the first n_trials trials of a cell, for N_SHUFFLES trial orders:
    # shuffle 0 is the order the run used; the others are seeded random orders of the random trials,
    # each starting from the default configuration (trial_index 0). best_val_norm rescales the
    # validation score per split between the worst and best trial of any model (0 = worst, 1 = best).
    "tuning_curves": f"""
        WITH t AS (
            SELECT r.suite, r.dataset, r.split_key, r.task_type, r.sample_size, r.repeat, r.fold, r.seed, r.model,
                   t.cell_id, t.trial_id, t.trial_index, t.status,
                   CASE WHEN t.status IN {SCORED_IN} THEN t.val_score END AS val_score,
                   CASE WHEN t.status IN {SCORED_IN} THEN t.val_loss END AS val_loss,
                   CASE WHEN t.status NOT IN {SCORED_IN} THEN NULL
                        WHEN r.task_type = 'regression' THEN t.r2 ELSE t.accuracy END AS test_score,
                   coalesce(t.seconds, 0) AS seconds
            FROM trials t JOIN current_results r USING (cell_id)
        ), bounds AS (
            SELECT {SPLIT},
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
        SELECT c.suite, c.dataset, c.split_key, c.task_type, c.sample_size, c.repeat, c.fold, c.seed, c.model,
               c.cell_id, c.shuffle, c.n_trials, c.trial_index, c.status, c.val_score, c.test_score, c.seconds,
               c.best_val_score, c.best_test_score, c.cum_seconds,
               CASE WHEN b.val_max > b.val_min THEN (c.best_val_score - b.val_min) / (b.val_max - b.val_min)
                    WHEN c.best_val_score IS NOT NULL THEN 1.0 END AS best_val_norm,
               CASE WHEN b.test_max > b.test_min THEN (c.best_test_score - b.test_min) / (b.test_max - b.test_min)
                    WHEN c.best_test_score IS NOT NULL THEN 1.0 END AS best_test_norm
        FROM c JOIN bounds b USING (dataset, split_key, sample_size, repeat, fold, seed)
    """,
    # Cost per (task, model) over the cells compared (compared_cells: a task's shared splits) that finished
    # ok. fit_seconds is the selected trial's training; search_seconds the whole search (the sum of its
    # trials' own run times).
    # gpu_hours adds up the run time of every trial that ran on a CUDA device, one GPU each.
    "compute": f"""
        WITH gpu AS (SELECT cell_id, sum(seconds) AS s FROM trials WHERE device LIKE 'cuda%' GROUP BY cell_id)
        SELECT r.dataset, r.split_key, r.sample_size, r.model, {SUITES.format(col="r.suite")},
               any_value(r.model_name) AS model_name,
               any_value(d.n_features) AS n_features, avg(r.n_train) AS n_train,
               count(*) AS n_ok,
               avg(r.fit_seconds) AS fit_seconds, avg(r.search_seconds) AS search_seconds,
               avg(1000 * r.fit_seconds / nullif(r.n_train, 0)) AS train_s_per_1k,
               avg(1000 / nullif(r.predict_rows_per_s, 0)) AS predict_s_per_1k,
               avg(r.predict_rows_per_s) AS predict_rows_per_s, avg(r.flops_per_row) AS flops_per_row,
               avg(r.n_params) AS n_params,
               string_agg(DISTINCT r.device, ',' ORDER BY r.device) AS devices,
               string_agg(DISTINCT r.precision, ',' ORDER BY r.precision) AS precision,
               coalesce(sum(g.s), 0) / 3600 AS gpu_hours
        FROM current_results r LEFT JOIN datasets d USING (dataset) LEFT JOIN gpu g USING (cell_id)
        WHERE r.status = {OK} AND r.cell_id IN (SELECT cell_id FROM compared_cells)
        GROUP BY r.{TASK.replace(", ", ", r.")}, r.model
    """,
    # Peak memory of the selected trial per (task, model), against the dataset's width; like compute, over
    # the cells compared (compared_cells: a task's shared splits).
    "memory": f"""
        SELECT r.dataset, r.split_key, r.sample_size, r.model, {SUITES.format(col="r.suite")},
               any_value(r.model_name) AS model_name,
               any_value(d.n_features) AS n_features, avg(r.n_train) AS n_train, count(*) AS n_ok,
               avg(r.peak_cpu_mb) AS peak_cpu_mb, max(r.peak_cpu_mb) AS peak_cpu_mb_max,
               avg(r.peak_gpu_mb) AS peak_gpu_mb, max(r.peak_gpu_mb) AS peak_gpu_mb_max
        FROM current_results r LEFT JOIN datasets d USING (dataset)
        WHERE r.status = {OK} AND r.cell_id IN (SELECT cell_id FROM compared_cells)
        GROUP BY r.{TASK.replace(", ", ", r.")}, r.model
    """,
    # Every failed current cell and every failed trial of one, with its error text and, in message, the
    # error's last line (the exception) with no trailing newline.
    "failures": f"""
        SELECT 'cell' AS level, cell_id AS id, suite, dataset, split_key, model, sample_size, repeat, fold, status,
               error, finished_at,
               trim(string_split(rtrim(coalesce(error, ''), chr(10) || ' '), chr(10))[-1]) AS message
        FROM current_results WHERE status <> {OK}
        UNION ALL
        SELECT 'trial', t.trial_id, r.suite, r.dataset, r.split_key, r.model, r.sample_size, r.repeat, r.fold,
               t.status, t.error, t.finished_at,
               trim(string_split(rtrim(coalesce(t.error, ''), chr(10) || ' '), chr(10))[-1])
        FROM trials t JOIN current_results r USING (cell_id) WHERE t.status NOT IN {SCORED_IN}
    """,
    # The design each dataset was split by: one row per (dataset, split_key) with a current result. folds is
    # the k of its k-fold cross-validation: the dataset's rows over a fold's test rows, rounded (a suite that
    # ran one fold of three, as a tuned slice does, was still split in three), else the folds it ran; never
    # under 2. The standings' interval takes its correlation between splits from it (n_test/n_train = 1/(k − 1)).
    "designs": """
        SELECT r.dataset, r.split_key, any_value(d.n_rows) AS n_rows, avg(r.n_test) AS n_test,
               count(DISTINCT r.fold) AS folds_run,
               greatest(2, coalesce(round(any_value(d.n_rows) / avg(r.n_test))::INTEGER,
                                    count(DISTINCT r.fold))) AS folds
        FROM current_results r LEFT JOIN datasets d USING (dataset) GROUP BY r.dataset, r.split_key
    """,
    # One verdict per pair of models on a task, the one every page reads (docs/PROTOCOL.md, "Verdicts"): one
    # row per (dataset, split_key, sample_size, model, versus). versus names the family picked against: 'best
    # gradient boosting' for every model of another family, and 'best other network' for an attention
    # network; versus_model is the model picked, the family's model with the highest mean validation score on
    # the task over the splits every model of the family that ran the task finished (means to 12 decimals, as
    # pipeline/report/stats/pick.py compares them; a tie to the first by name; the test set picks nothing).
    # family_best: the model is its own family's pick there. diff: the mean over every split both finished
    # (a fold of a repeat, its subset seeds averaged), not only those every model planned, of model −
    # versus_model test score (test_mean, versus_test_mean: the two means over those splits); lo/hi its 95%
    # Nadeau–Bengio corrected interval, t(0.975, J − 1) · sd · √(1/J + 1/(k − 1)) (J = n_splits, k = folds
    # of the design), eq_lo/eq_hi the 90% one; verdict: 'not compared' with no split in common,
    # 'undetermined' with one, 'equivalent' when the 90% interval lies inside ±margin, 'ahead'/'behind' when
    # the 95% one excludes zero ('not converged' where the model behind was still improving when its
    # epochs, rounds or time ran out: model_bound, versus_bound), 'undetermined' otherwise.
    # n_train and n_valid: the task's mean training and validation rows (the picks were made on n_valid).
    # sd: the standard deviation of the differences over the splits, their fold-to-fold spread (NaN under two).
    "standings": standings_sql(),
}


VIEWS_HASH = hashlib.sha256(json.dumps(VIEWS, sort_keys=True).encode()).hexdigest()[:16]


def install(store: Store) -> list[str]:
    """Write this version's views into the results file, so that ``duckdb results.duckdb`` sees them;
    a file that has them already is not written. The views it added to a file that held others (an older
    attnbench's), by name; none for a new file."""
    with store.connect() as con:
        if store.meta(con, "views") == VIEWS_HASH:
            return []
        had = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        create_views(con)
        con.execute("INSERT OR REPLACE INTO attnbench_meta VALUES ('views', ?)", [VIEWS_HASH])
        now = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        return sorted(now - had) if had else []


def temporary_views(con: Any) -> None:
    """This version's views for one connection only (it may be read-only): a file written by an older
    attnbench answers the same queries as the pages. For ``Store.connect(prepare=...)``. A file that holds
    this version's views already (``install``) and needs no shadowed table is read through its own: making
    them again took a fifth of a second a connection."""
    if not shadow_older_tables(con) and _installed(con) == VIEWS_HASH:
        return
    create_views(con, temporary=True)


def _installed(con: Any) -> str | None:
    """The hash of the views the file holds (``install``), if any."""
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'attnbench_meta' "
                       "AND table_schema = 'main'").fetchone()[0]:
        return None
    row = con.execute("SELECT value FROM attnbench_meta WHERE key = 'views'").fetchone()
    return None if row is None else str(row[0])


def create_views(con: Any, temporary: bool = False) -> None:
    """(Re)create every view. ``temporary=True`` makes them for this connection only, which works on a
    read-only connection and shadows the file's own (possibly older) views: the report does that."""
    kind = "TEMP VIEW" if temporary else "VIEW"
    for name, sql in VIEWS.items():
        con.execute(f"CREATE OR REPLACE {kind} {name} AS {sql}")
