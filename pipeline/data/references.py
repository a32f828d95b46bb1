"""Reference results: a study's results that ship with attnbench (``references/<name>/``), or any results
file, that a user's own models are set beside without re-running them (``attnbench run my.yaml --against
study-lite``).

A shipped reference is a folder: ``reference.json`` (its name, the suite and protocol it ran, what a
user needs to know) and chunks ``chunk-NNNN/``, each written once by ``attnbench reference add`` and
never rewritten (a study that grows adds a chunk), each a set of Parquet files, one per table: the
results, trials (with their validation and test predictions where the size allows), the suite's plan,
the constant predictor's scores, the runs (hardware, versions, command line), the datasets' metadata
(never their rows: the data comes from where the suite says) and a digest of every split, so that a
user's splits are checked row for row against the reference's before anything is written.

:func:`load` opens a reference (a shipped name, a folder, or a results file) as an in-memory DuckDB;
:meth:`Reference.check` refuses a suite whose protocol or data differ from it, naming what differs;
:meth:`Reference.copy_into` writes its rows for the user's splits into the user's results file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.data.reference_tables import (
    CELL_TABLES,
    LATEST,
    PLAN_TABLES,
    RESULT_KEY,
    ROW_KEYS,
    SPLIT,
    SPLIT_KEYS,
    TABLES,
    Held,
    export_tables,
    split_digests,
    suite_yaml,
)
from pipeline.errors import AttnbenchError
from pipeline.records import RunStatus, Status


class ReferenceError(AttnbenchError):
    """A reference that cannot be used as asked (not found, or another protocol or other data)."""


ACROSS_FILE = "across_datasets.parquet"  # a reference's across_datasets table, beside its chunks


def shipped_root() -> Path:
    """Where shipped references live: ``$ATTNBENCH_REFERENCES``, else ``references/`` of the checkout."""
    env = os.environ.get("ATTNBENCH_REFERENCES")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "references"


def shipped() -> list[str]:
    root = shipped_root()
    return sorted(p.name for p in root.iterdir() if (p / "reference.json").is_file()) if root.is_dir() else []


# ------------------------------------------------------------------------------------------ loading
@dataclass
class Reference:
    """A reference opened for reading: its tables on an in-memory DuckDB connection (``ref_<table>``)."""

    name: str
    where: str
    suite: str  # the suite whose plan the reference holds
    protocol: dict[str, Any]
    seed: int
    con: Any
    meta: dict[str, Any] = field(default_factory=dict)
    set_aside: set[str] = field(default_factory=set)  # models whose cells ran other code: not compared

    def df(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        return self.con.execute(sql, params or []).df()

    def close(self) -> None:
        self.con.close()

    # ------------------------------------------------------------------------------------ checks
    def adopt_protocol(self, suite: Any) -> Any:
        """The suite with the reference's protocol and seed where it gives none; refused (one line naming
        the key and both values) where it gives another. Sizes, folds, repeats and subset seeds may be
        fewer than the reference's: a subset of its splits."""
        from pipeline.spec import Protocol

        if suite.name == self.suite:
            raise ReferenceError(f"{suite.source_path or suite.name}: the suite is named {suite.name!r}, as the "
                                 f"reference {self.name!r} is; give yours another name (its plan would replace the "
                                 "reference's)")
        mine = suite.protocol
        given = mine.model_fields_set
        theirs = Protocol.model_validate(self.protocol, strict=False)
        update: dict[str, Any] = {}
        where = suite.source_path or suite.name
        for key in SPLIT_KEYS:
            if key in given and getattr(mine, key) != getattr(theirs, key):
                raise ReferenceError(f"{where}: protocol.{key} is {shown(getattr(mine, key))} here and "
                                     f"{shown(getattr(theirs, key))} in the reference {self.name!r}: its splits "
                                     "would differ; leave the key out to take the reference's")
            update[key] = getattr(theirs, key)
        if "sample_sizes" in given:
            extra = [s for s in mine.sample_sizes if s not in theirs.sample_sizes]
            if extra:
                raise ReferenceError(f"{where}: protocol.sample_sizes {extra} are not among the reference "
                                     f"{self.name!r}'s {theirs.sample_sizes}")
        else:
            update["sample_sizes"] = theirs.sample_sizes
        for key in ("max_folds", "max_repeats", "subset_seeds"):
            cap = getattr(theirs, key)
            if key in given and cap is not None and (getattr(mine, key) is None or getattr(mine, key) > cap):
                raise ReferenceError(f"{where}: protocol.{key} is {getattr(mine, key)} here; the reference "
                                     f"{self.name!r} ran {cap}")
            if key not in given:
                update[key] = cap
        if "seed" in suite.model_fields_set and suite.seed != self.seed:
            raise ReferenceError(f"{where}: seed is {suite.seed} here and {self.seed} in the reference {self.name!r}: "
                                 "its splits would differ; leave it out to take the reference's")
        protocol = mine.model_copy(update=update)
        adopted = suite.model_copy(update={"protocol": protocol, "seed": self.seed})
        problem = adopted.entry_sizes_problem()
        if problem:
            raise ReferenceError(f"{where}: {problem} (the reference {self.name!r}'s)")
        return adopted

    def code_versions(self) -> dict[str, list[dict[str, str]]]:
        """Per model of the reference, the versions of attnbench's files its cells ran (each distinct
        record once, in :func:`pipeline.models.versions.comparable` form: files past version 1 or modified;
        a plan from before the record existed is version 1 throughout)."""
        from pipeline.models.versions import comparable

        has = "code_versions" in set(self.df("SELECT * FROM ref_suite_cells LIMIT 0").columns)
        rows = self.df("SELECT DISTINCT model, " + ("code_versions" if has else "NULL AS code_versions") +
                       " FROM ref_suite_cells WHERE variant IS NULL ORDER BY ALL")
        out: dict[str, list[dict[str, str]]] = {}
        for model, stored in rows.itertuples(index=False):
            form = comparable(None if pd.isna(stored) else stored)
            if form not in out.setdefault(model, []):
                out[model].append(form)
        return out

    def code_drift(self) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
        """The reference's models whose code is not this checkout's: model → (the versions it ran, those
        here), each in comparable form. A model this attnbench does not register (a user's own, in a
        results file) is identified by its code's digest in its cell ids instead, and left out."""
        from pipeline.models.registry import get
        from pipeline.models.versions import code_version

        names = dict(self.df("SELECT DISTINCT model, model_name FROM ref_suite_cells WHERE variant IS NULL")
                     .itertuples(index=False))
        variants = set(self.df("SELECT DISTINCT split_part(model, '+', 1) FROM ref_suite_cells "
                               "WHERE variant IS NOT NULL").iloc[:, 0])
        out = {}
        for model, ran in self.code_versions().items():
            try:
                info = get(names.get(model, model))
            except (KeyError, ValueError):
                continue
            here = code_version(info.builder, info.learner, variants=model in variants).key()
            theirs = next((r for r in ran if r != here), None)
            if theirs is not None:
                out[model] = (theirs, here)
        return out

    def git_rev(self) -> str:
        """The attnbench revision the reference's latest run ran ('' where none is recorded)."""
        rev = self.df("SELECT git_rev FROM ref_runs WHERE git_rev IS NOT NULL ORDER BY started_at DESC LIMIT 1")
        return str(rev.git_rev[0]) if len(rev) else ""

    def check(self, prepared: Iterable[Any], splits: set[tuple[Any, ...]]) -> None:
        """Refuse, before anything is written, a dataset the reference does not hold, one with other rows
        (checksum) or other splits (row for row); and a plan with no split in common with it."""
        held = self.df("SELECT dataset, checksum FROM ref_datasets")
        by_name = dict(zip(held.dataset, held.checksum))
        by_sum = dict(zip(held.checksum, held.dataset))
        digests = self.df("SELECT * FROM ref_split_digests")
        for p in prepared:
            name, checksum = p.name, p.dataset.checksum
            if name not in by_name:
                if checksum in by_sum:
                    raise ReferenceError(f"dataset {name!r}: the reference {self.name!r} holds these rows as "
                                         f"{by_sum[checksum]!r}; give the suite entry name: {by_sum[checksum]}")
                raise ReferenceError(f"dataset {name!r} is not in the reference {self.name!r} (it holds "
                                     f"{', '.join(sorted(by_name))})")
            if by_name[name] != checksum:
                raise ReferenceError(f"dataset {name!r}: other rows than the reference {self.name!r}'s (checksum "
                                     f"{checksum} here, {by_name[name]} there): not the same data")
            mine = split_digests(name, p.split_key, p.parts, p.orders)
            theirs = digests[(digests.dataset == name)]
            if theirs.empty:  # a file of `reference export`: its plan, no split rows; the split keys tell
                keys = set(self.df("SELECT DISTINCT split_key FROM ref_suite_cells WHERE dataset = ?", [name]).split_key)
                if p.split_key not in keys:
                    raise ReferenceError(f"dataset {name!r}: split key {p.split_key} here, {', '.join(sorted(keys))} "
                                         f"in the reference {self.name!r} (the protocol, the seed or the splitter's "
                                         "version differs)")
                continue
            if not (theirs.split_key == p.split_key).any():
                raise ReferenceError(f"dataset {name!r}: split key {p.split_key} here, "
                                     f"{', '.join(sorted(set(theirs.split_key)))} in the reference {self.name!r} (the "
                                     "protocol or the splitter's version differs)")
            both = mine.merge(theirs, on=["dataset", "split_key", "repeat", "fold", "seed"], suffixes=("", "_ref"))
            bad = both[both.digest != both.digest_ref]
            if len(bad):
                r = bad.iloc[0]
                raise ReferenceError(f"dataset {name!r}: repeat {r.repeat}, fold {r.fold}, seed {r.seed} holds other "
                                     f"rows here than in the reference {self.name!r} (split digests {r.digest} vs "
                                     f"{r.digest_ref}): not the same split")
        planned = self.df("SELECT DISTINCT dataset, split_key, repeat, fold, sample_size, seed FROM ref_suite_cells")
        theirs_splits = set(planned.itertuples(index=False, name=None))
        if splits and not splits & theirs_splits:
            raise ReferenceError(f"no split of this suite is one the reference {self.name!r} ran (its sizes: "
                                 f"{', '.join(map(str, self.protocol.get('sample_sizes', [])))})")

    def done_cells(self, splits: set[tuple[Any, ...]]) -> pd.DataFrame:
        """cell_id, status and attempts of the reference's results of planned cells on these splits (a user's
        entry equal to a reference model's is the same cell: done; a cell its plan dropped is not the
        reference's any more, and :meth:`copy_into` copies none of it)."""
        self._register_splits(splits)
        return self.df("SELECT r.cell_id, r.status, r.attempts FROM ref_results r JOIN user_splits USING "
                       f"({', '.join(SPLIT)}) WHERE NOT list_contains(?, split_part(r.model, '+', 1)) "
                       "AND r.cell_id IN (SELECT cell_id FROM ref_suite_cells)", [sorted(self.set_aside)])

    def _register_splits(self, splits: set[tuple[Any, ...]]) -> None:
        frame = pd.DataFrame(sorted(splits), columns=SPLIT) if splits else pd.DataFrame(columns=SPLIT)
        frame = frame.astype({"repeat": "int64", "fold": "int64", "seed": "int64", "sample_size": str})
        self.con.register("user_splits", frame)

    # ------------------------------------------------------------------------------------- writes
    def copy_into(self, store: Any, splits: set[tuple[Any, ...]]) -> int:
        """Write the reference's plan, results, trials (with predictions), floor and runs for these splits
        into the user's results file, in one transaction; rows it holds already are kept. Returns the
        cells added."""
        self._register_splits(splits)
        plan = self.df(f"SELECT c.* FROM ref_suite_cells c JOIN user_splits USING ({', '.join(SPLIT)}) "
                       "WHERE NOT list_contains(?, split_part(c.model, '+', 1))", [sorted(self.set_aside)])
        if plan.empty:
            return 0
        self.con.register("plan_ids", pd.DataFrame({"cell_id": plan.cell_id}))
        parts = {"suite_cells": plan}
        for table in CELL_TABLES:
            if self._has(table):  # a results file from before predictions were kept has none
                parts[table] = self.df(f"SELECT t.* FROM ref_{table} t SEMI JOIN plan_ids p USING (cell_id)")
        parts["reference_scores"] = self.df(
            f"SELECT k.* FROM ref_reference_scores k JOIN user_splits USING ({', '.join(SPLIT)})")
        runs = set(plan.run_id) | set(parts["results"].run_id)
        if "trials" in parts:  # a run that finished no cell, its trials resumed by the next
            runs |= set(parts["trials"].run_id)
        parts["runs"] = self.df("SELECT * FROM ref_runs WHERE list_contains(?, run_id)", [sorted(runs)])
        added = 0
        with store.transaction() as con:
            have = set(con.execute("SELECT cell_id FROM results").df().cell_id)
            added = len(set(parts["results"].cell_id) - have)
            for table, frame in parts.items():
                if frame.empty:
                    continue
                if table in CELL_TABLES:  # a cell the user's file holds already keeps its own rows
                    frame = frame[~frame.cell_id.isin(have)]
                con.register("ref_df", frame)
                con.execute(f"INSERT OR IGNORE INTO {table} BY NAME SELECT * FROM ref_df")
                con.unregister("ref_df")
        return added

    def export(self, store: Any) -> int:
        """The whole reference written into a results file (``attnbench reference export``): its datasets'
        metadata and every cell of its plan, as :meth:`copy_into` writes them, so that ``report`` and
        DuckDB read it like a run's file. Returns the cells written."""
        splits = {tuple(r) for r in self.df(f"SELECT DISTINCT {', '.join(SPLIT)} FROM ref_suite_cells")
                  .itertuples(index=False)}
        with store.transaction() as con:
            for table in ("datasets", "features", "dataset_traits"):
                if self._has(table):
                    con.register("ref_df", self.df(f"SELECT * FROM ref_{table}"))
                    con.execute(f"INSERT OR IGNORE INTO {table} BY NAME SELECT * FROM ref_df")
                    con.unregister("ref_df")
        return self.copy_into(store, splits)

    def held(self) -> Held:
        """What its chunks hold, so that a new chunk writes each row once."""
        def ids(sql: str) -> set[str]:
            return set(self.df(sql).iloc[:, 0])

        return Held(ids("SELECT cell_id FROM ref_suite_cells"), ids(f"SELECT {RESULT_KEY} FROM ref_results"),
                    ids("SELECT run_id FROM ref_runs"), ids("SELECT dataset FROM ref_datasets"),
                    self.df(f"SELECT DISTINCT {', '.join(SPLIT)} FROM ref_reference_scores"),
                    ids("SELECT dataset FROM ref_dataset_traits") if self._has("dataset_traits") else set(),
                    ids(f"SELECT run_id FROM ref_runs WHERE status = {RunStatus.RUNNING.sql}"),
                    {t: ids(f"SELECT {k} FROM ref_{t}") for t, k in ROW_KEYS.items() if self._has(t)},
                    self.df("SELECT epoch(max(started_at)) AS t FROM ref_runs").t.iloc[0])

    def trial_prices(self) -> pd.DataFrame:
        """As :meth:`pipeline.data.store.Store.trial_prices`, of the reference's trials: what a time-limited run
        prices a trial from where its own file holds nothing of its entry."""
        if not (self._has("trials") and self._has("results")):
            return pd.DataFrame(columns=["model", "spec_hash", "dataset", "sample_size", "n_train", "seconds",
                                         "n_features"])
        features = "any_value(d.n_features)" if self._has("datasets") else "NULL"
        join = "LEFT JOIN ref_datasets d ON d.dataset = r.dataset " if self._has("datasets") else ""
        return self.df("SELECT r.model, r.spec_hash, r.dataset, CAST(r.sample_size AS VARCHAR) AS sample_size, "
                       f"median(r.n_train) AS n_train, max(t.seconds) AS seconds, {features} AS n_features "
                       f"FROM ref_trials t JOIN ref_results r USING (cell_id) {join}"
                       f"WHERE t.status = {Status.OK.sql} AND t.seconds IS NOT NULL GROUP BY ALL")

    def _has(self, table: str) -> bool:
        return bool(self.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                                     [f"ref_{table}"]).fetchone()[0])


def shown(v: Any) -> str:
    """A protocol value as an error message says it."""
    return json.dumps(v.model_dump(mode="json")) if hasattr(v, "model_dump") else repr(v)


def load(ref: str, option: str = "") -> Reference:
    """A shipped reference by name, a reference folder, or a results file (``.duckdb``); ``option``: the
    command-line option that named it (``--against``), said in its errors."""
    import duckdb

    path = Path(ref)
    if not path.exists() and (shipped_root() / ref / "reference.json").is_file():
        path = shipped_root() / ref
    if path.is_file() and path.suffix == ".duckdb":
        return _from_results_file(path, option)
    if not (path / "reference.json").is_file():
        names = shipped()
        raise ReferenceError(f"{option + ' ' if option else ''}{ref}: no such reference (shipped: {', '.join(names) or 'none'} in "
                             f"{shipped_root()}; or give a results file .duckdb or a reference folder)")
    meta = json.loads((path / "reference.json").read_text())
    con = duckdb.connect()
    chunks = sorted(p for p in path.glob("chunk-*") if p.is_dir())
    if not chunks:
        raise ReferenceError(f"{option + ' ' if option else ''}{ref}: {path} holds no chunk of results")
    for table in TABLES:
        if table in PLAN_TABLES:
            continue
        files = _chunk_files(chunks, table)
        if files and table in LATEST:
            con.execute(f"CREATE TABLE ref_{table} AS SELECT * EXCLUDE (filename) FROM read_parquet(?, union_by_name "
                        f"= true, filename = true) QUALIFY row_number() OVER (PARTITION BY {LATEST[table]} ORDER BY "
                        "filename DESC) = 1", [files])
        elif files:
            con.execute(f"CREATE TABLE ref_{table} AS SELECT * FROM read_parquet(?, union_by_name = true)", [files])
    _current_plan(con, chunks)
    _drop_older_attempts(con)
    return Reference(meta["name"], str(path), meta["suite"], meta["protocol"], int(meta.get("seed", 0)), con, meta)


def export_file(ref: str, db: str | Path) -> int:
    """A reference (a shipped name, a folder, or a results file) written into a new results file with its
    views installed, as ``attnbench reference export`` writes it. Returns the cells written."""
    from pipeline.data.store import Store
    from pipeline.data.views import install

    opened = load(ref)
    try:
        store = Store(db)
        n = opened.export(store)
        install(store)
        across = Path(opened.where) / ACROSS_FILE
        if across.is_file():  # the hierarchical model's fits shipped beside the chunks (`make answers`)
            store.write_across(pd.read_parquet(across))
    finally:
        opened.close()
    return n


def _chunk_files(chunks: list[Path], table: str) -> list[str]:
    """A table's Parquet files in every chunk, in the chunks' order (chunk-NNNN; a table split in parts, in order)."""
    return sorted(str(f) for c in chunks for f in c.glob(f"{table}*.parquet"))


def _current_plan(con: Any, chunks: list[Path]) -> None:
    """``ref_suite_cells``: each cell's latest word among the chunks, planned (its plan row) or not any more
    (``unplanned``: the suite's plan was cut, or an entry changed or removed, since a chunk planned it). A cell
    unplanned and planned again is planned. Chunks from before ``unplanned`` existed only ever planned."""
    def read(table: str) -> str:
        files = _chunk_files(chunks, table)
        return (f"read_parquet({files!r}, union_by_name = true, filename = true)" if files
                else "(SELECT NULL::VARCHAR AS cell_id, NULL::VARCHAR AS filename WHERE false)")

    chunk = "CAST(regexp_extract(filename, 'chunk-([0-9]+)/[^/]*$', 1) AS INTEGER)"  # the file's own folder
    con.execute(f"CREATE TABLE ref_suite_cells AS WITH p AS (SELECT *, {chunk} AS said FROM {read('suite_cells')}), "
                f"u AS (SELECT cell_id, max({chunk}) AS said FROM {read('unplanned')} GROUP BY cell_id) "
                "SELECT p.* EXCLUDE (filename, said) FROM p LEFT JOIN u USING (cell_id) "
                "WHERE u.said IS NULL OR p.said > u.said "
                "QUALIFY row_number() OVER (PARTITION BY cell_id ORDER BY p.said DESC) = 1")


def _drop_older_attempts(con: Any) -> None:
    """A re-run cell's trials of its older attempts, and their predictions, as the results file dropped
    them when the new attempt's result committed (``Store.put``)."""
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if not {"ref_results", "ref_trials"} <= have:
        return
    con.execute("DELETE FROM ref_trials USING ref_results r WHERE ref_trials.cell_id = r.cell_id "
                "AND coalesce(ref_trials.cell_attempt, 0) < coalesce(r.attempts, 0)")
    if "ref_predictions" in have:
        con.execute("DELETE FROM ref_predictions p WHERE p.cell_id IN (SELECT cell_id FROM ref_results) AND NOT EXISTS "
                    "(SELECT 1 FROM ref_trials t WHERE t.cell_id = p.cell_id AND t.trial_id = p.trial_id)")


def _from_results_file(path: Path, option: str = "") -> Reference:
    """A results file as a reference: its one suite's plan (a file of several suites names none)."""
    import duckdb

    from pipeline.data.store import Store

    Store(path, create=False).query("SELECT 1")  # someone else's file, or a newer attnbench's, is refused
    con = duckdb.connect()
    con.execute(f"ATTACH '{path.resolve()!s}' AS src (READ_ONLY)")
    suites = [r[0] for r in con.execute("SELECT DISTINCT suite FROM src.suite_cells ORDER BY 1").fetchall()]
    if len(suites) != 1:
        raise ReferenceError(f"{option + ' ' if option else ''}{path}: it holds the plans of {len(suites)} suites "
                             f"({', '.join(suites) or 'none'}); a reference is one suite's results")
    export_tables(con, "src", suites[0], "ref")
    spec = suite_yaml(con, suites[0])
    con.execute("DETACH src")
    return Reference(suites[0], str(path), suites[0], spec.get("protocol", {}), int(spec.get("seed", 0)), con)
