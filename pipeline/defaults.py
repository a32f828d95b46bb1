"""Where the command line reads and writes when it is not told: the results file and the reports folder."""

from __future__ import annotations

DEFAULT_DB = "results.duckdb"
DEFAULT_REPORTS = "reports"


def db_option(db: str) -> str:
    """``--db FILE`` as a command the user is told to run needs it: nothing for the default file."""
    return "" if db == DEFAULT_DB else f" --db {db}"
