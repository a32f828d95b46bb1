"""The ``standings`` view's SQL: one verdict per pair of models on a task, the one every page reads
(docs/PROTOCOL.md, "Verdicts"), computed in SQL by the rule :mod:`pipeline.report.stats.verdicts` states in
Python (tests/report/test_standings.py checks the two agree on every row of the shipped references)."""

from __future__ import annotations

from pipeline.data.sql_words import MISSING, OK, SPLIT, TASK, quote
from pipeline.models.kinds import ATTENTION, BOOSTING, KINDS, NETWORK
from pipeline.records import VERDICT_ALPHA, VERDICT_MARGIN, Power, Verdict

# A stored kind in words, the family the report names (pipeline.models.kinds.family_of), in SQL.
FAMILY = ("CASE model_kind " + " ".join(f"WHEN {quote(k)} THEN {quote(f)}" for k, f in KINDS.items())
          + " ELSE coalesce(model_kind, 'unknown') END")
# Which family's best each model is set against in `standings` (versus: 'best ' || family): every family but
# boosting against the best boosting model; the attention networks also against the best other network.
AGAINST = [(BOOSTING, f"family <> {quote(BOOSTING)}"), (NETWORK, f"family = {quote(ATTENTION)}")]
T_TABLE = 100  # degrees of freedom tabulated; past them a Cornish–Fisher expansion (error < 1e-10)


def t_quantile(p: float, df: str) -> str:
    """The Student-t quantile ``p`` at ``df`` degrees of freedom (an SQL expression) in SQL: scipy's values
    for df 1 to :data:`T_TABLE` as a list literal (each written so that it reads back as the same double),
    past them the Cornish–Fisher expansion of t in the normal quantile z to the fourth order (what the
    verdict rule, :func:`pipeline.report.stats.verdicts.decide`, takes from scipy; tests/report/test_standings.py
    checks the two agree)."""
    from scipy import stats

    table = ", ".join(f"{float(stats.t.ppf(p, k)):.17e}" for k in range(1, T_TABLE + 1))
    z = float(stats.norm.ppf(p))
    g = [(z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96, (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
         (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160]
    tail = f"{z:.17e}" + "".join(f" + {c:.17e} / pow({df}, {i + 1})" for i, c in enumerate(g))
    return f"CASE WHEN {df} <= {T_TABLE} THEN [{table}][{df}] ELSE {tail} END"


def standings_sql(kinds: dict[str, str] | None = None) -> str:
    """The ``standings`` view's SQL. ``kinds`` (model → kind) fills the kind of a model no run stored one for
    (a file before schema 4), as the report names its family (pipeline/report/data.py); the view itself
    reads the stored kinds.

    Two sets of splits, each the fair one for its question. A family's best is picked on the splits every
    model of the family that ran the task finished (``shared``: a model planned on fewer folds neither wins nor
    loses the pick on folds it never ran, nor one that failed a fold); a model with cells of the task still to run
    (a study in chunks) has not run it yet: it enters the pick, and has verdicts there, once all have an outcome. A pair's difference is over every split both finished: an entry
    planned on three folds set against boosting planned on fifteen is compared on its three, and the
    fifteen-split verdict of a model that ran all fifteen stays fifteen splits (compared_cells, which the
    pages' means read, keeps only the splits every model of the task planned)."""
    cells = "expected_cells"
    if kinds:
        values = ", ".join(f"({quote(m)}, {quote(k)})" for m, k in sorted(kinds.items()))
        cells = (f"(SELECT x.* REPLACE (coalesce(x.model_kind, k.kind) AS model_kind) FROM expected_cells x "
                 f"LEFT JOIN (VALUES {values}) k(model, kind) USING (model))")
    return f"""
        WITH e0 AS (
            SELECT * FROM {cells}
        ), k AS (  -- one kind per model (a file merged from runs before and after kinds were stored has both)
            SELECT model, min(model_kind) AS model_kind FROM e0 GROUP BY model
        ), e1 AS (
            SELECT e0.* EXCLUDE (model_kind), k.model_kind FROM e0 JOIN k USING (model)
        ), e AS MATERIALIZED (
            SELECT e1.*, {FAMILY} AS family FROM e1
        ), ran AS (  -- the models that ran the task: every cell planned there has an outcome (one with cells still
            -- to run, a study in chunks, has not run it yet) and one has a score (one that failed every split has none)
            SELECT {TASK}, model FROM e GROUP BY ALL
            HAVING bool_and(status <> {MISSING}) AND bool_or(status = {OK} AND score IS NOT NULL)
        ), per_family AS (
            SELECT {TASK}, family, count(DISTINCT model) AS n FROM e JOIN ran USING ({TASK}, model) GROUP BY ALL
        ), per_split AS (  -- the models of the family that finished the split (one still to run or failed there
            -- leaves it out of the pick: every model is picked on the same splits)
            SELECT {SPLIT}, family, count(DISTINCT model) AS n FROM e JOIN ran USING ({TASK}, model)
            WHERE e.status = {OK} AND e.score IS NOT NULL GROUP BY ALL
        ), c AS MATERIALIZED (
            SELECT e.dataset, e.split_key, e.sample_size, e.repeat, e.fold, e.model, e.model_kind, e.family, e.score,
                   e.val_score, e.epochs_bound, e.n_train, r.n_valid, s.n = f.n AS shared, e.score_name
            FROM e JOIN ran USING ({TASK}, model) LEFT JOIN (SELECT cell_id, n_valid FROM current_results) r USING (cell_id)
            JOIN per_family f USING ({TASK}, family)
            JOIN per_split s USING ({SPLIT}, family)
            WHERE e.status = {OK} AND e.score IS NOT NULL
        ), cap AS (  -- the repeat cap: the most repeats of its k-fold the plan holds for any dataset of the file
            SELECT coalesce(max(repeat), 0) + 1 AS repeats FROM e
        ), task AS (
            SELECT {TASK}, avg(n_train) AS n_train, avg(n_valid) AS n_valid, min(score_name) AS metric FROM c GROUP BY ALL
        ), m AS (
            SELECT {TASK}, model, min(model_kind) AS model_kind, min(family) AS family,
                   avg(val_score) FILTER (WHERE shared) AS val_mean, avg(val_score) AS own_val_mean
            FROM c GROUP BY ALL
        ), picked AS (  -- no split every model finished (each failed a different fold): each one's own mean
            SELECT m.* EXCLUDE (own_val_mean),
                   row_number() OVER (PARTITION BY {TASK}, family ORDER BY round(val_mean, 12) DESC NULLS LAST,
                                      CASE WHEN val_mean IS NULL THEN round(own_val_mean, 12) END DESC NULLS LAST,
                                      model) = 1 AS family_best
            FROM m
        ), pairs AS (
            {" UNION ALL ".join(
                f"SELECT p.*, 'best ' || b.family AS versus, b.model AS versus_model "
                f"FROM picked p JOIN picked b USING ({TASK}) WHERE b.family_best AND b.family = {quote(fam)} AND p.{cond}"
                for fam, cond in AGAINST)}
        ), split AS (
            SELECT {TASK}, repeat, fold, model, avg(score) AS score, bool_or(epochs_bound) AS bound FROM c GROUP BY ALL
        ), d AS (
            SELECT p.dataset, p.split_key, p.sample_size, p.model, p.versus, count(*) AS n_splits,
                   avg(x.score - y.score) AS diff, stddev_samp(x.score - y.score) AS sd, avg(x.score) AS test_mean,
                   avg(y.score) AS versus_test_mean, bool_or(x.bound) AS bound, bool_or(y.bound) AS versus_bound
            FROM pairs p
            JOIN split x ON x.dataset = p.dataset AND x.split_key = p.split_key AND x.sample_size = p.sample_size
                 AND x.model = p.model
            JOIN split y ON y.dataset = p.dataset AND y.split_key = p.split_key AND y.sample_size = p.sample_size
                 AND y.repeat = x.repeat AND y.fold = x.fold AND y.model = p.versus_model
            GROUP BY ALL
        ), w AS (
            SELECT p.*, t.n_train, t.n_valid, t.metric, g.folds, coalesce(d.n_splits, 0) AS n_splits, d.diff, d.sd,
                   d.test_mean, d.versus_test_mean, coalesce(d.bound, false) AS bound,
                   coalesce(d.versus_bound, false) AS versus_bound, d.sd * sqrt(1::DOUBLE / d.n_splits + 1::DOUBLE / (g.folds - 1)) AS se
            FROM pairs p JOIN task t USING ({TASK}) LEFT JOIN designs g USING (dataset, split_key)
            LEFT JOIN d USING ({TASK}, model, versus)
        ), wc AS (
            SELECT w.*, greatest(w.n_splits, (SELECT repeats FROM cap) * w.folds) AS cap_splits FROM w
        ), q AS (
            SELECT wc.*,
                   CASE WHEN n_splits >= 2 THEN diff - {t_quantile(1 - VERDICT_ALPHA / 2, "n_splits - 1")} * se END
                       AS lo,
                   CASE WHEN n_splits >= 2 THEN diff + {t_quantile(1 - VERDICT_ALPHA / 2, "n_splits - 1")} * se END
                       AS hi,
                   CASE WHEN n_splits >= 2 THEN diff - {t_quantile(1 - VERDICT_ALPHA, "n_splits - 1")} * se END
                       AS eq_lo,
                   CASE WHEN n_splits >= 2 THEN diff + {t_quantile(1 - VERDICT_ALPHA, "n_splits - 1")} * se END
                       AS eq_hi,
                   CASE WHEN n_splits >= 2 THEN {t_quantile(1 - VERDICT_ALPHA / 2, "cap_splits - 1")} * sd
                       * sqrt(1::DOUBLE / cap_splits + 1::DOUBLE / (folds - 1)) END AS detectable_at_cap,
                   CASE WHEN n_splits >= 2 THEN {t_quantile(1 - VERDICT_ALPHA, "cap_splits - 1")} * sd
                       * sqrt(1::DOUBLE / cap_splits + 1::DOUBLE / (folds - 1)) END AS eq_half_at_cap
            FROM wc
        ), v AS (
            SELECT q.*,
               CASE WHEN n_splits = 0 THEN {Verdict.NOT_COMPARED.sql}
                    WHEN n_splits = 1 THEN {Verdict.UNDETERMINED.sql}
                    WHEN eq_lo > -{VERDICT_MARGIN!r}::DOUBLE AND eq_hi < {VERDICT_MARGIN!r}::DOUBLE
                        THEN {Verdict.EQUIVALENT.sql}
                    WHEN lo > 0 THEN CASE WHEN versus_bound THEN {Verdict.NOT_CONVERGED.sql} ELSE {Verdict.AHEAD.sql} END
                    WHEN hi < 0 THEN CASE WHEN bound THEN {Verdict.NOT_CONVERGED.sql} ELSE {Verdict.BEHIND.sql} END
                    ELSE {Verdict.UNDETERMINED.sql} END AS verdict
            FROM q
        )
        SELECT dataset, split_key, sample_size, n_train, model, family, family_best, versus, versus_model, diff, lo,
               hi, {VERDICT_MARGIN!r}::DOUBLE AS margin, n_splits, verdict,
               eq_lo, eq_hi, folds, n_valid, test_mean, versus_test_mean, val_mean, bound AS model_bound, versus_bound,
               sd, hi - diff AS detectable, cap_splits, detectable_at_cap,
               CASE WHEN verdict = {Verdict.UNDETERMINED.sql} AND n_splits >= 2
                    THEN CASE WHEN eq_half_at_cap >= {VERDICT_MARGIN!r}::DOUBLE THEN {Power.UNDERPOWERED.sql}
                              ELSE {Power.INCONCLUSIVE.sql} END END AS power,
               metric
        FROM v
    """
