"""``attnbench query``: read-only SQL over the results file, printed as a table or written to a file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.data.store import Store
from pipeline.errors import AttnbenchError


def run_query(db: str | Path, sql: str, *, out: str | None = None, max_rows: int = 200) -> pd.DataFrame:
    import duckdb

    store = Store(db, create=False)
    try:
        df = store.query(sql)
    except duckdb.Error as err:
        raise AttnbenchError(f"query failed: {str(err).splitlines()[0]}") from None
    if out:
        path = Path(out)
        if path.suffix == ".parquet":
            df.to_parquet(path, index=False)
        elif path.suffix == ".csv":
            df.to_csv(path, index=False)
        else:
            raise AttnbenchError(f"--out {out}: use a .csv or .parquet file")
        print(f"{len(df)} rows → {path}")
        return df
    with pd.option_context("display.max_rows", max_rows, "display.max_columns", 50, "display.width", 200,
                           "display.max_colwidth", 60):
        print(df.to_string(index=False, max_rows=max_rows) if len(df) else "(no rows)")
    if len(df) > max_rows:
        print(f"... {len(df)} rows in all (--max-rows to see more, --out to save)")
    return df
