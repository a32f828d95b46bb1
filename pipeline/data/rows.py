"""A record as a row of the results file: each stored field's SQL value (``sql_value``: NaN and infinities NULL,
numpy scalars their numbers, dicts and lists JSON) and the inserts the store's writes make of them."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pipeline.records import RunRecord, sql_columns, stored


def insert_records(con: Any, table: str, cls: type, records: list[Any]) -> None:
    """Insert or replace records of ``cls`` (their stored fields) as one statement over an Arrow table of
    the columns' own types: ``executemany`` ran a statement per row, about 3 ms each, the most of a commit."""
    import pyarrow as pa

    arrow = {"VARCHAR": pa.string(), "JSON": pa.string(), "INTEGER": pa.int64(), "BIGINT": pa.int64(),
             "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us")}
    rows = [stored(r) for r in records]
    columns = {}
    for name, sql in sql_columns(cls):
        values = [sql_value(row[name]) for row in rows]
        if arrow[sql] == pa.string():  # a state is its word (str() of a State member is its value)
            values = [v if v is None or type(v) is str else str(v) for v in values]
        columns[name] = pa.array(values, type=arrow[sql])
    con.register("records_arrow", pa.table(columns))
    try:
        con.execute(f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) SELECT * FROM records_arrow")
    finally:
        con.unregister("records_arrow")


def put_run(con: Any, run: RunRecord | dict[str, Any]) -> None:
    """Insert or replace a run's row (a dict's keys are the columns it gives)."""
    run = run if isinstance(run, dict) else stored(run)
    cols = list(run)
    con.execute(f"INSERT OR REPLACE INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [sql_value(run[c]) for c in cols])


def clean(v: Any) -> Any:
    """NaN and infinities become null: JSON has no spelling for them (a diverged curve has them). A record
    (a compressed variant's) is stored as its fields."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return clean(dataclasses.asdict(v))
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [clean(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, str | bytes):
        v = v.item()
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    return v


def sql_value(v: Any) -> Any:
    if isinstance(v, dict | list):
        return json.dumps(clean(v), default=_default, allow_nan=False)
    if hasattr(v, "item") and not isinstance(v, str | bytes):  # numpy scalars
        return v.item()
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):  # → NULL
        return None
    return v


def _default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)
