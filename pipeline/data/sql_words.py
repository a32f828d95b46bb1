"""The SQL words every view and the standings view share: the state words rendered from the enums
(pipeline.records: no view spells one out), what a split and a task group by, and how a row's suites are
listed. Imported by views.py and standings.py, never the other way."""

from __future__ import annotations

from pipeline.records import OUT_OF_BUDGET, SCORED, Status, StopReason, sql_list

# The state words the views compare, rendered from the enums (pipeline.records): no view spells one out.
OK, MISSING = Status.OK.sql, Status.MISSING.sql
SCORED_IN = sql_list(SCORED)  # a trial whose scores count: ('ok', 'stopped')
OK_OR_MISSING = sql_list((Status.OK, Status.MISSING))  # not failed
BUDGET_STOPS = sql_list((*OUT_OF_BUDGET, StopReason.PRUNED))  # stopped while still improving

# A split, and a task: what the views group by.
SPLIT = "dataset, split_key, sample_size, repeat, fold, seed"
TASK = "dataset, split_key, sample_size"
# The suites of a group's rows, each once, sorted: a row's suite may already name several ("a, b": a cell
# two suites plan).
SUITES = "array_to_string(list_sort(list_distinct(flatten(list(string_split({col}, ', '))))), ', ') AS suite"


def quote(word: str) -> str:
    """A word as an SQL string literal."""
    return "'" + word.replace("'", "''") + "'"
