"""The DuckDB results file: creating and upgrading it (tables in schema.py), the driver's writes, and
read-only access for everyone else.

The driver is the only writer, and it holds the file only for the length of one transaction: DuckDB
lets no other process open a file that one holds read-write, so short writes are what keep
``attnbench query``, ``duckdb results.duckdb`` and the report usable while a run goes on. Readers
retry briefly when they meet a write in progress.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.data.rows import clean, insert_records, put_run
from pipeline.data.schema import (
    ADDED_COLUMNS,
    APP,
    PLAN_COLUMNS,
    REFERENCE_COLUMNS,
    SCHEMA,
    SCHEMA_VERSION,
    backfill,
    record_table,
    record_tables,
    shape,
)
from pipeline.errors import StoreError
from pipeline.predictions import put_predictions
from pipeline.records import RunRecord, RunStatus, Status, sql_columns

# The on-disk format new results files are written in: the one the DuckDB CLI 1.5 line (`pip install
# duckdb-cli`, `duckdb -readonly results.duckdb`) reads, rather than the Python package's newest.
STORAGE_VERSION = "v1.5.0"

# What a reader's SQL may not do: touch any file but the results file (COPY … TO, read_csv, glob,
# ATTACH, EXPORT), install or load extensions, or change these settings back.
SEAL = ("SET enable_external_access = false", "SET autoinstall_known_extensions = false",
        "SET autoload_known_extensions = false", "SET allow_community_extensions = false",
        "SET lock_configuration = true")


# One connection to a results file at a time in this process, held from open to close. DuckDB's Python
# client shares one database instance between a process's connections to a file and registers its
# pandas and Arrow scans on an instance only after handing it out: a thread that opened the file while
# another was opening it could find `pandas_scan` missing (the commit thread's `register` did, beside the
# driver loading a split). Serialised, each open finds the instance whole (tests/test_store_threads.py).
_OPEN = threading.RLock()


def _seal(con: Any) -> None:
    for statement in SEAL:
        con.execute(statement)


def _is_access_error(err: Exception) -> bool:
    text = str(err).lower()
    return any(w in text for w in ("permission denied", "operation not permitted", "read-only file system"))


def _is_lock_error(err: Exception) -> bool:
    return "lock" in str(err).lower() and ("conflicting" in str(err).lower() or "could not set" in str(err).lower())


ACROSS_TABLE = "across_datasets"  # the hierarchical model's fits across datasets (written by `attnbench answer`)


class Store:
    """One DuckDB results file. Every method opens, works and closes: nothing stays locked.

    Nothing is created when a Store is made: the file and its tables come with the first write, so a
    command refused before it writes leaves no file behind. Reading a file that is not there is an error
    (``exists`` says whether it is); ``create=False`` makes that error come at once.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        self._checked = False
        self._initialised = False
        self.upgraded: str | None = None  # what opening an older attnbench's file changed in it, in words
        if not create and not self.path.exists():
            raise StoreError(f"{self.path}: no results database here yet; run `attnbench run` first")

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def init(self) -> Store:
        """Create the file and its tables now (they otherwise come with the first write)."""
        with self.connect():
            pass
        return self

    def check_writable(self) -> None:
        """Refuse now, writing nothing, what a later write would refuse: someone else's or a newer
        attnbench's file, a file or folder the file system will not let us write."""
        if self.exists:
            with self.connect(init=False):  # opened for writing and closed: the file is left as it was
                return
        folder = self.path.parent.resolve()
        while not folder.exists():
            folder = folder.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise StoreError(f"{self.path}: the file system does not let attnbench write the results file here "
                             f"({folder} is not a folder it can write); give a --db it can write")

    # --------------------------------------------------------------------------------- connections
    @contextlib.contextmanager
    def connect(self, read_only: bool = False, wait_s: float = 30.0,
                prepare: Callable[[Any], None] | None = None, init: bool = True) -> Iterator[Any]:
        """A connection to the file. A read-only one is sealed (see ``SEAL``) after ``prepare(con)``
        has run on it (the report's temporary views, say): it reads this file and nothing else."""
        if read_only and not self.path.exists():
            raise StoreError(f"{self.path}: no results database here yet; run `attnbench run` first")
        if not read_only and not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with _OPEN, self._open(read_only, wait_s, prepare, init) as con:
            yield con

    @contextlib.contextmanager
    def _open(self, read_only: bool, wait_s: float, prepare: Callable[[Any], None] | None,
              init: bool) -> Iterator[Any]:
        import duckdb

        deadline = time.monotonic() + wait_s
        delay = 0.05
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only,
                                     config={"storage_compatibility_version": STORAGE_VERSION})
                break
            except duckdb.Error as err:
                if _is_lock_error(err) and time.monotonic() < deadline:
                    time.sleep(delay)
                    delay = min(delay * 2, 1.0)
                    continue
                if _is_lock_error(err):
                    raise StoreError(
                        f"{self.path}: another process holds the database ({err}). Wait for it, or copy the "
                        "file and query the copy for a consistent snapshot."
                    ) from None
                if _is_access_error(err):
                    mode = "read" if read_only else "write"
                    raise StoreError(
                        f"{self.path}: the file system does not let attnbench {mode} this file "
                        f"({str(err).splitlines()[0]}); give a --db it can {mode}"
                        + ("" if read_only else " (attnbench query only reads)")) from None
                raise StoreError(f"{self.path}: not a DuckDB database we can open ({err})") from None
        try:
            if not self._checked:  # someone else's DuckDB file is refused, for reading too
                self._check(con)
                self._checked = bool(self._has_meta(con))  # once a file is ours, it stays ours
            if not read_only and init and not self._initialised:  # the tables, on the first write
                self._init(con)
                self._initialised = True
            if read_only and prepare is not None and self._has_meta(con):
                # What reads the views (the report, `attnbench answer`, `attnbench query`) sums on one
                # thread: DuckDB's parallel float sums and deviations differ in their last digits from one
                # read to the next, and the same file must read the same, to the last digit (a report's
                # figures, a verdict's interval); on 6,000 cells the report's reading takes 0.3 s longer.
                # Reading a dataset's rows (ingest) keeps every thread.
                con.execute("SET threads = 1")
                prepare(con)
            if read_only:
                _seal(con)
            yield con
        finally:
            con.close()

    @staticmethod
    def _has_meta(con: Any) -> bool:
        return bool(con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'attnbench_meta'"
        ).fetchone()[0])

    def _check(self, con: Any) -> None:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if not tables:
            return
        if "attnbench_meta" not in tables:
            raise StoreError(
                f"{self.path}: this DuckDB file was not written by attnbench (tables: {', '.join(sorted(tables)[:8])}); "
                "choose another --db path"
            )
        meta = dict(con.execute("SELECT key, value FROM attnbench_meta").fetchall())
        version = int(meta.get("schema_version", "0"))
        if meta.get("app") != APP:
            raise StoreError(f"{self.path}: not an attnbench results file")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by a newer attnbench (schema {version}, this one reads {SCHEMA_VERSION}); "
                "upgrade attnbench"
            )

    def _init(self, con: Any) -> None:
        """Create or upgrade the tables. A file already in this version's shape is not written at all:
        opening it leaves it byte for byte as it was. (The views are the report's: it installs them.)"""
        now = shape()
        older = None
        if self._has_meta(con):
            meta = dict(con.execute("SELECT key, value FROM attnbench_meta").fetchall())
            if meta.get("schema_version") == str(SCHEMA_VERSION) and meta.get("shape") == now:
                return
            older = (meta.get("schema_version", "?"), _columns(con))
        con.execute("BEGIN")
        con.execute(SCHEMA)
        for table, col, typ in ADDED_COLUMNS:  # a file from an earlier version gains the new columns
            con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {col} {typ}")
        for name, cls, key in record_tables():
            con.execute(record_table(name, cls, key))
            for col, typ in sql_columns(cls):
                con.execute(f"ALTER TABLE {name} ADD COLUMN IF NOT EXISTS {col} {typ}")
        backfill(con)
        con.execute("INSERT OR IGNORE INTO attnbench_meta VALUES ('app', ?), ('schema_version', ?)",
                    [APP, str(SCHEMA_VERSION)])
        con.execute("UPDATE attnbench_meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])
        con.execute("COMMIT")
        con.execute("INSERT OR REPLACE INTO attnbench_meta VALUES ('shape', ?)", [now])
        if older is not None:
            self.upgraded = _upgrade_words(older[0], older[1], _columns(con))

    def result_keys(self, suite: str) -> pd.DataFrame:
        """The key and id of each finished result of ``suite`` (none without a file): which of a plan's cells
        ran before under another id (their entry or its code changed since)."""
        if not self.exists:
            return pd.DataFrame(columns=["dataset", "repeat", "fold", "sample_size", "seed", "model", "cell_id"])
        return self.read("SELECT dataset, repeat, fold, sample_size, seed, model, cell_id FROM results "
                         f"WHERE suite = ? AND status = {Status.OK.sql} AND variant IS NULL", [suite])

    # --------------------------------------------------------------------------------------- reads
    def meta(self, con: Any, key: str) -> str | None:
        row = con.execute("SELECT value FROM attnbench_meta WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def query(self, sql: str, params: list[Any] | None = None,
              prepare: Callable[[Any], None] | None = None) -> pd.DataFrame:
        """Read-only SQL over the file, sealed (see ``SEAL``): it reads this file, nothing else.
        ``prepare`` runs first (the report's views, made for this connection)."""
        with self.connect(read_only=True, prepare=prepare) as con:
            res = con.execute(sql, params or [])
            return res.df() if res is not None and res.description else pd.DataFrame()

    def read(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """A read of the tables alone (no views): the driver's own reads. They open the file as its
        writes do, because DuckDB refuses a read-only connection in a process that has a writing one
        open (the engine commits on a writer thread while the driver reads the next fold)."""
        with self.connect() as con:
            return con.execute(sql, params or []).df()

    def has_dataset(self, name: str, checksum: str | None = None) -> bool:
        if not self.exists:
            return False
        df = self.query("SELECT checksum FROM datasets WHERE dataset = ?", [name])
        return len(df) > 0 and (checksum is None or df.checksum.iloc[0] == checksum)

    def done_cells(self) -> pd.DataFrame:
        """cell_id, status and attempts of every result (none when there is no file yet)."""
        if not self.exists:
            return pd.DataFrame(columns=["cell_id", "status", "attempts"])
        return self.query("SELECT cell_id, status, attempts FROM results")

    def suite_counts(self, suite: str) -> dict[str, int]:
        """The suite's planned cells (its last run's ``suite_cells``, compressed variants apart) by
        outcome: ok, failed (a result with another status) and missing (no result)."""
        df = self.read(f"SELECT count(*) FILTER (WHERE r.status = {Status.OK.sql}) AS ok, "
                       f"count(*) FILTER (WHERE r.status <> {Status.OK.sql}) AS failed, "
                       "count(*) FILTER (WHERE r.status IS NULL) AS missing "
                       "FROM suite_cells c LEFT JOIN results r USING (cell_id) WHERE c.suite = ? AND c.variant IS NULL",
                       [suite])
        return {k: int(df[k].iloc[0]) for k in ("ok", "failed", "missing")}

    def fold_rows(self, dataset: str, split_key: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Every fold's split roles and every training order of one dataset, in one read (see ``read``)."""
        with self.connect() as con:
            parts = con.execute("SELECT repeat, fold, row_id, role FROM splits WHERE dataset = ? AND split_key = ?",
                                [dataset, split_key]).df()
            orders = con.execute("SELECT repeat, fold, seed, row_id FROM train_order WHERE dataset = ? AND "
                                 "split_key = ? ORDER BY repeat, fold, seed, rank", [dataset, split_key]).df()
        return parts, orders

    def longest_trials(self) -> dict[tuple[str, str, str, str], float]:
        """The longest finished (ok) trial's wall seconds per (model, spec hash, dataset, sample size)."""
        df = self.read(f"SELECT r.model, r.spec_hash, r.dataset, r.sample_size, max(t.seconds) AS s FROM trials t "
                       f"JOIN results r USING (cell_id) WHERE t.status = {Status.OK.sql} AND t.seconds IS NOT NULL "
                       "GROUP BY ALL")
        return {(str(r.model), str(r.spec_hash), str(r.dataset), str(r.sample_size)): float(r.s)
                for r in df.itertuples(index=False)}

    def trial_prices(self) -> pd.DataFrame:
        """Per (model, spec hash, dataset, sample size): the longest finished (ok) trial's wall seconds and the
        cells' training rows, the rows :mod:`pipeline.pricing` prices a trial from (none without a file)."""
        if not self.exists:
            return pd.DataFrame(columns=["model", "spec_hash", "dataset", "sample_size", "n_train", "seconds",
                                         "n_features"])
        return self.read("SELECT r.model, r.spec_hash, r.dataset, CAST(r.sample_size AS VARCHAR) AS sample_size, "
                         "median(r.n_train) AS n_train, max(t.seconds) AS seconds, any_value(d.n_features) AS n_features "
                         "FROM trials t JOIN results r USING (cell_id) LEFT JOIN datasets d ON d.dataset = r.dataset "
                         f"WHERE t.status = {Status.OK.sql} AND t.seconds IS NOT NULL GROUP BY ALL")

    def committed_trials(self, cells: dict[str, int]) -> dict[str, list[Any]]:
        """The trials already committed for each cell's current attempt (``cell_id → attempt``): a
        resumed search goes on from them."""
        from pipeline.records import TrialRecord, VariantRecord

        if not cells:
            return {}
        df = self.read("SELECT * FROM trials WHERE cell_id IN (SELECT unnest(?))", [list(cells)])
        out: dict[str, list[Any]] = {}
        json_cols = [c for c, t in sql_columns(TrialRecord) if t == "JSON"]
        for row in df.to_dict("records"):
            if row.get("cell_attempt") != cells[row["cell_id"]]:
                continue
            row = {k: (None if _missing(v) else v) for k, v in row.items()}
            for c in json_cols:
                row[c] = json.loads(row[c]) if isinstance(row[c], str) else row[c]
            row["variants"] = VariantRecord.from_stored(row.get("variants")) or None
            for c in ("started_at", "finished_at"):
                row[c] = row[c].to_pydatetime() if hasattr(row[c], "to_pydatetime") else row[c]
            known = {c for c, _ in sql_columns(TrialRecord)}
            out.setdefault(row["cell_id"], []).append(TrialRecord(**{k: v for k, v in row.items() if k in known}))
        return out

    # -------------------------------------------------------------------------------------- writes
    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """A write connection inside one transaction: committed at the end, rolled back on any error."""
        with self.connect() as con:
            con.execute("BEGIN")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def write_across(self, frame: pd.DataFrame) -> None:
        """The ``across_datasets`` table (pipeline/report/stats/across.py: the hierarchical model's fits, each
        keyed by a digest of the data it read), replaced whole in one transaction."""
        with self.transaction() as con:
            con.register("across_df", frame)
            con.execute(f"CREATE OR REPLACE TABLE {ACROSS_TABLE} AS SELECT * FROM across_df")
            con.unregister("across_df")

    def read_across(self) -> pd.DataFrame | None:
        """The ``across_datasets`` table as stored, or None where the file has none."""
        with self.connect(read_only=True) as con:
            has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                              [ACROSS_TABLE]).fetchone()[0]
            return con.execute(f"SELECT * FROM {ACROSS_TABLE}").df() if has else None

    def write_dataset(self, meta: dict[str, Any], features: pd.DataFrame, frame: pd.DataFrame,
                      splits: pd.DataFrame, orders: pd.DataFrame, split_key: str) -> None:
        """The dataset's rows, feature types and splits, in one transaction."""
        table = meta["data_table"]
        with self.transaction() as con:
            con.execute("DELETE FROM datasets WHERE dataset = ?", [meta["dataset"]])
            con.execute("DELETE FROM features WHERE dataset = ?", [meta["dataset"]])
            con.execute("DELETE FROM dataset_traits WHERE dataset = ?", [meta["dataset"]])  # of the rows replaced
            cols = list(meta)
            con.execute(f"INSERT INTO datasets ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        [meta[c] for c in cols])
            con.register("features_df", features)
            con.execute("INSERT INTO features BY NAME SELECT dataset, position, name, kind, n_missing, n_levels, "
                        "high_cardinality FROM features_df")
            con.register("frame_df", frame)
            con.execute(f'CREATE OR REPLACE TABLE "{table}" AS SELECT * FROM frame_df')
            self._write_splits(con, meta["dataset"], split_key, splits, orders)

    def write_splits(self, dataset: str, split_key: str, splits: pd.DataFrame, orders: pd.DataFrame) -> None:
        with self.transaction() as con:
            self._write_splits(con, dataset, split_key, splits, orders)

    @staticmethod
    def _write_splits(con: Any, dataset: str, split_key: str, splits: pd.DataFrame, orders: pd.DataFrame) -> None:
        con.execute("DELETE FROM splits WHERE dataset = ? AND split_key = ?", [dataset, split_key])
        con.execute("DELETE FROM train_order WHERE dataset = ? AND split_key = ?", [dataset, split_key])
        s = splits.assign(dataset=dataset, split_key=split_key)[["dataset", "split_key", "repeat", "fold", "row_id", "role"]]
        o = orders.assign(dataset=dataset, split_key=split_key)[
            ["dataset", "split_key", "repeat", "fold", "seed", "row_id", "rank"]]
        con.register("s_df", s)
        con.register("o_df", o)
        con.execute("INSERT INTO splits SELECT * FROM s_df")
        con.execute("INSERT INTO train_order SELECT * FROM o_df")

    def commit(self, trials: list[Any], cells: list[tuple[Any, dict[str, Any] | None]],
               run: RunRecord | None = None) -> None:
        """Finished trials, finished cells (result and attention map) and the run's row, in one
        transaction: a cell is done once this commits. A re-run cell's older attempt's trials go."""
        from pipeline.records import CellResult, TrialRecord

        with self.transaction() as con:
            if trials:
                insert_records(con, "trials", TrialRecord, trials)
                put_predictions(con, trials)
            if cells:
                # Set-based, one statement per table for the whole batch: a statement per cell scanned
                # the trials table once per cell (quadratic in a run's cells; benchmarks/scale.py).
                con.register("done_df", pd.DataFrame({"cell_id": [r.cell_id for r, _ in cells],
                                                      "attempts": [r.attempts for r, _ in cells]}))
                con.execute("DELETE FROM trials USING done_df WHERE trials.cell_id = done_df.cell_id "
                            "AND coalesce(trials.cell_attempt, 0) < done_df.attempts")
                con.execute("DELETE FROM predictions WHERE cell_id IN (SELECT cell_id FROM done_df) AND trial_id NOT IN "
                            "(SELECT trial_id FROM trials WHERE cell_id IN (SELECT cell_id FROM done_df))")
                insert_records(con, "results", CellResult, [res for res, _ in cells])
                con.execute("DELETE FROM attention_maps WHERE cell_id IN (SELECT cell_id FROM done_df)")
                maps = [[res.cell_id, res.dataset, res.model, json.dumps(a["features"]), json.dumps(clean(a["map"]))]
                        for res, a in cells if a is not None]
                if maps:
                    con.executemany("INSERT INTO attention_maps VALUES (?, ?, ?, ?, ?)", maps)
                con.unregister("done_df")
            if run:
                put_run(con, run)

    def adopt(self, ids: dict[str, tuple[str, str]]) -> None:
        """Give cells their new ids (old id → (new id, split key)) in every table that holds a cell's
        rows, their compressed variants (``<id>+<method>``) included, in one transaction."""
        m = pd.DataFrame([(old, new, key) for old, (new, key) in ids.items()], columns=["old", "new", "split_key"])
        with self.transaction() as con:
            con.register("adopt_df", m)
            renamed = ("m.new || substr({t}.cell_id, length(m.old) + 1)")
            match = "({t}.cell_id = m.old OR {t}.cell_id LIKE m.old || '+%')"
            con.execute(f"UPDATE results SET cell_id = {renamed.format(t='results')}, split_key = m.split_key "
                        f"FROM adopt_df m WHERE {match.format(t='results')}")
            for table in ("trials", "predictions", "targets", "attention_maps"):
                con.execute(f"UPDATE {table} SET cell_id = {renamed.format(t=table)} FROM adopt_df m "
                            f"WHERE {match.format(t=table)}")
            con.unregister("adopt_df")

    def write_plan(self, suite: str, cells: pd.DataFrame, reference: pd.DataFrame, run: RunRecord) -> None:
        """A run's plan, in one transaction: the suite's cells (``PLAN_COLUMNS``; they replace what the
        suite's previous run planned, whose results not planned now become history), the constant
        predictor's score on each of its splits (``REFERENCE_COLUMNS``), and the run's row."""
        with self.transaction() as con:
            con.execute("DELETE FROM suite_cells WHERE suite = ?", [suite])
            con.execute("DELETE FROM reference_scores WHERE suite = ?", [suite])
            con.register("plan_df", cells[PLAN_COLUMNS])
            con.execute(f"INSERT INTO suite_cells ({', '.join(PLAN_COLUMNS)}) SELECT * FROM plan_df")
            con.register("reference_df", reference[REFERENCE_COLUMNS])
            con.execute(f"INSERT INTO reference_scores ({', '.join(REFERENCE_COLUMNS)}) SELECT * FROM reference_df")
            put_run(con, run)

    def upsert_run(self, run: RunRecord | dict[str, Any]) -> None:
        with self.connect() as con:
            put_run(con, run)

    def close_dead_runs(self, run_id: str) -> pd.DataFrame:
        """Mark 'killed' every run but ``run_id`` still 'running': ``run_id`` holds the run lock, so they ended
        without writing their end (SIGKILL, a lost machine). Each finishes at its last committed result or trial
        (its start if none); its counts are those its last commit wrote. Returns the runs closed."""
        with self.transaction() as con:
            return con.execute(
                f"UPDATE runs SET status = {RunStatus.KILLED.sql}, finished_at = coalesce((SELECT max(f) FROM (SELECT finished_at "
                "AS f FROM results r WHERE r.run_id = runs.run_id UNION ALL SELECT finished_at FROM trials t WHERE "
                f"t.run_id = runs.run_id)), started_at) WHERE status = {RunStatus.RUNNING.sql} AND run_id <> ? "
                "RETURNING run_id, started_at, finished_at, n_done, n_failed", [run_id]).df()


def _missing(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # lists and dicts
        return False


def _columns(con: Any) -> dict[str, set[str]]:
    """The file's tables (not a dataset's rows) and their columns."""
    rows = con.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main' "
                       "AND NOT internal AND table_name IN (SELECT table_name FROM duckdb_tables() WHERE "
                       "schema_name = 'main') AND table_name NOT LIKE 'data\\_%' ESCAPE '\\'").fetchall()
    out: dict[str, set[str]] = {}
    for table, column in rows:
        out.setdefault(str(table), set()).add(str(column))
    return out


def _upgrade_words(was: str, before: dict[str, set[str]], after: dict[str, set[str]]) -> str:
    """One line: what upgrading a file of schema ``was`` to this version added."""
    tables = sorted(set(after) - set(before))
    columns = sorted(f"{t}.{c}" for t in set(after) & set(before) for c in after[t] - before[t])
    added = ([f"table{'s' if len(tables) > 1 else ''} {', '.join(tables)}"] if tables else []) + (
        [f"column{'s' if len(columns) > 1 else ''} {', '.join(columns)}"] if columns else [])
    return (f"written by an older attnbench (schema {was}), upgraded to schema {SCHEMA_VERSION}: "
            + ("; ".join(added) + " added" if added else "no table or column added") + ", every result kept")
