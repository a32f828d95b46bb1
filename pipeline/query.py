"""``attnbench query``: read-only SQL over the results file, printed as a table or written to a file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.errors import AttnbenchError


def run_query(db: str | Path, sql: str, *, out: str | None = None, max_rows: int = 200) -> pd.DataFrame:
    """Run one read-only statement over the results file. The connection is sealed: the SQL reads this
    file's tables and views and nothing else (no other file, no extension, no setting changed)."""
    import duckdb

    if not sql.strip():
        raise AttnbenchError('query: the SQL is empty; e.g. attnbench query "SELECT * FROM leaderboard"')
    if max_rows < 1:
        raise AttnbenchError(f"--max-rows {max_rows}: give a positive number of rows to print")
    path = Path(out) if out else None
    if path is not None:
        if path.suffix not in (".csv", ".parquet"):
            raise AttnbenchError(f"--out {out}: use a .csv or .parquet file")
        if not path.parent.is_dir():
            raise AttnbenchError(f"--out {out}: the directory {path.parent} does not exist")
    store = Store(db, create=False)
    try:
        df = store.query(sql, prepare=temporary_views)
    except duckdb.PermissionException as err:
        raise AttnbenchError(f"query refused: attnbench query reads the results file only, no other file, "
                             f"extension or setting ({str(err).splitlines()[0]})") from None
    except duckdb.Error as err:
        raise AttnbenchError(f"query failed: {_with_hints(str(err))}") from None
    if path is not None:
        try:
            if path.suffix == ".parquet":
                df.to_parquet(path, index=False)
            else:
                df.to_csv(path, index=False)
        except OSError as err:
            raise AttnbenchError(f"--out {out}: cannot write there ({err.strerror or err})") from None
        print(f"{len(df)} rows → {path}")
        return df
    with pd.option_context("display.max_rows", max_rows, "display.max_columns", 50, "display.width", 200,
                           "display.max_colwidth", 60):
        print(df.to_string(index=False, max_rows=max_rows) if len(df) else "(no rows)")
    if len(df) > max_rows:
        print(f"... {len(df)} rows in all (--max-rows to see more, --out to save)")
    return df


def _with_hints(text: str) -> str:
    """DuckDB's message on one line: its first line, and its hints ("Did you mean ...", "Candidate
    bindings: ...") after it; the SQL echo with its pointer is left out."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    hints = [line for line in lines[1:] if line.startswith(("Did you mean", "Candidate"))]
    return " ".join(lines[:1] + hints)
