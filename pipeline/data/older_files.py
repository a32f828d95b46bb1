"""A results file written before schema 6, read as it is (a read-only connection cannot upgrade it): temporary
views named like its tables add the columns it lacks, so that this version's views read it."""

from __future__ import annotations

from typing import Any


def shadow_older_tables(con: Any) -> bool:
    """A file written before schema 6, read without upgrading it (read-only): temporary views named
    like its tables add the columns it lacks, filled as the upgrade would fill them
    (:func:`pipeline.data.schema.split_key_backfill`), so that this version's views read it. Whether it
    made any."""
    db = con.execute("SELECT current_database()").fetchone()[0]
    have: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns "
                                     "WHERE table_catalog = ? AND table_schema = 'main'", [db]).fetchall():
        have.setdefault(table, set()).add(column)
    if "suite_cells" not in have or "results" not in have:
        return False
    shadowed = False
    one = (f"(SELECT dataset, any_value(split_key) AS split_key FROM \"{db}\".main.train_order GROUP BY dataset "
           "HAVING count(DISTINCT split_key) = 1)")
    added = {"model_kind": "NULL::VARCHAR AS model_kind",
             "split_key": "coalesce(one.split_key, 'suite:' || t.suite) AS split_key",
             "model_code": "NULL::JSON AS model_code", "code_versions": "NULL::VARCHAR AS code_versions",
             "metric": "NULL::VARCHAR AS metric"}
    versions = (f"(SELECT c.suite, c.model, any_value(r.spec_hash) AS spec_hash FROM \"{db}\".main.suite_cells c "
                f"JOIN \"{db}\".main.results r USING (cell_id) GROUP BY ALL)")
    for table, cols in (("suite_cells", ["model_kind", "split_key", "model_version", "code_versions", "metric"]),
                        ("reference_scores", ["split_key"]), ("results", ["split_key"]), ("runs", ["model_code"])):
        lacking = [c for c in cols if c not in have.get(table, {c})]
        if not lacking:
            continue
        exprs = [added[c] for c in lacking if c != "model_version"]
        joins = f" LEFT JOIN {one} one USING (dataset)" if "split_key" in lacking else ""
        if "model_version" in lacking:
            exprs.append("coalesce(v.spec_hash, 'suite:' || t.suite) AS model_version")
            joins += f" LEFT JOIN {versions} v USING (suite, model)"
        con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS SELECT t.*, {', '.join(exprs)} "
                    f"FROM \"{db}\".main.{table} t{joins}")
        shadowed = True
    return shadowed
