"""Results from several runs, machines or clusters in one file: ``attnbench merge A B … --db ALL``.

A cell id hashes the dataset, its split key (which hashes the dataset's checksum and the protocol's
folds, validation share and seed), the preprocessing, the split and the model entry (not the suite):
two files' rows with the same cell id are the same cell, whichever suites ran them. One is kept: a finished cell over a failed one,
then the later result; each choice is recorded in ``merge_choices`` with its reason. The inputs are
only ever attached read-only. Everything that can refuse the merge is checked first, on read-only
attachments: the same dataset name with other rows (another checksum) or other splits under one
split key, and one suite whose two files planned different entries for the same cell key. A refused
merge writes nothing; a merge with nothing new (merging the same files again) opens nothing for
writing, so the output stays byte for byte as it was. Every row keeps its run id, and the runs
table keeps each run's host, hardware, versions, command line and suite.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipeline.data.store import Store, backfill
from pipeline.errors import StoreError
from pipeline.records import Status

# The tables a cell's rows live in (everything keyed by its cell id).
CELL_TABLES = ("results", "trials", "predictions", "targets", "attention_maps")
KEY = ["suite", "dataset", "repeat", "fold", "sample_size", "seed", "model"]


@dataclass
class Choice:
    cell_id: str
    label: str
    kept: str  # file
    dropped: str
    why: str


@dataclass
class MergeReport:
    out: Path
    written: bool = False
    cells_added: int = 0
    cells_replaced: int = 0
    cells_already: int = 0
    cells_in_several: int = 0  # the same result (one run's) in more than one input: kept once
    runs_added: int = 0
    datasets_added: int = 0
    suites: list[str] = field(default_factory=list)
    choices: list[Choice] = field(default_factory=list)


def _attach(con: Any, files: list[Path]) -> list[str]:
    aliases = []
    for i, f in enumerate(files):
        alias = f"src{i}"
        con.execute(f"ATTACH '{_sql_path(f)}' AS {alias} (READ_ONLY)")
        aliases.append(alias)
    return aliases


def _sql_path(p: Path) -> str:
    return str(p.resolve()).replace("'", "''")


def _tables(con: Any, alias: str) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_catalog = ?",
                                      [alias]).fetchall()}


def _rank(status: str, kept_predictions: bool, finished: Any) -> tuple[int, int, str]:
    """Which of two results of one cell to keep: finished over failed, then the one whose trials'
    predictions were kept (its ensembles can be built), then the later."""
    return (1 if status == Status.OK else 0, int(kept_predictions), str(finished or ""))


def merge(inputs: list[str | Path], out: str | Path) -> MergeReport:
    """Merge ``inputs`` into ``out`` (created if absent). Raises StoreError, writing nothing, on a conflict."""
    import duckdb

    files = [Path(p) for p in inputs]
    target = Path(out)
    if not files:
        raise StoreError("merge: name at least one results file to merge")
    for f in files:
        if not f.exists():
            raise StoreError(f"{f}: no such results file")
        if target.exists() and f.resolve() == target.resolve():
            raise StoreError(f"{f}: is also the --db the merge writes; a merge never modifies its inputs, so "
                             "give another --db")
        with Store(f, create=False).connect(read_only=True):  # someone else's file, or a newer attnbench's
            pass
    if len({f.resolve() for f in files}) < len(files):
        raise StoreError("merge: a file is named twice")
    sources = [*files, *([target] if target.exists() else [])]
    if target.exists():
        with Store(target, create=False).connect(read_only=True):
            pass
    names = {f"src{i}": str(f) for i, f in enumerate(sources)}
    report = MergeReport(out=target)

    con = duckdb.connect()  # in memory: every file attached read-only, the whole plan worked out here
    try:
        aliases = _attach(con, sources)
        have = {a: _tables(con, a) for a in aliases}
        _check_datasets(con, aliases, names)
        _check_splits(con, aliases, names)
        _check_plans(con, aliases, names, have)
        out_alias = aliases[-1] if target.exists() else None
        keep = _choose(con, aliases, names, report, out_alias)
        todo = _what_is_new(con, aliases, out_alias, keep, have, report)
    finally:
        con.close()
    if not todo:
        return report
    existed = target.exists()
    try:
        _write(files, target, keep, report)
    except BaseException:
        if not existed:  # the transaction rolled back; the file it created for it goes too
            target.unlink(missing_ok=True)
            Path(f"{target}.wal").unlink(missing_ok=True)
        raise
    report.written = True
    return report


def _check_datasets(con: Any, aliases: list[str], names: dict[str, str]) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for a in aliases:
        for name, checksum in con.execute(f"SELECT dataset, checksum FROM {a}.datasets ORDER BY dataset").fetchall():
            if name in seen and seen[name][0] != checksum:
                raise StoreError(f"merge: dataset {name!r} holds other rows in {seen[name][1]} than in {names[a]} "
                                 f"(checksum {seen[name][0][:12]} vs {str(checksum)[:12]}); these are not the same "
                                 "dataset: store one of them under another name")
            seen.setdefault(name, (checksum, names[a]))


def _check_splits(con: Any, aliases: list[str], names: dict[str, str]) -> None:
    """Each fold of a repeat both files hold under one split key must be the same rows in the same roles; a file
    that holds fewer of them (a suite run on one fold, or without the other's more repeats) merges with it."""
    seen: dict[tuple[str, str, int, int], tuple[str, str]] = {}
    for a in aliases:
        rows = con.execute(
            f"SELECT dataset, split_key, repeat, fold, md5(string_agg(concat_ws(':', row_id, role), ',' "
            f"ORDER BY row_id, role)) FROM {a}.splits GROUP BY ALL").fetchall()
        for dataset, key, repeat, fold, digest in rows:
            k = (dataset, key, repeat, fold)
            if k in seen and seen[k][0] != digest:
                raise StoreError(f"merge: dataset {dataset!r} has other splits under key {key} in "
                                 f"{seen[k][1]} than in {names[a]} (repeat {repeat}, fold {fold}); these results "
                                 "are not comparable")
            seen.setdefault(k, (digest, names[a]))


def _check_plans(con: Any, aliases: list[str], names: dict[str, str], have: dict[str, set[str]]) -> None:
    seen: dict[tuple[Any, ...], tuple[str, str]] = {}
    for a in aliases:
        if "suite_cells" not in have[a]:
            continue
        for row in con.execute(f"SELECT {', '.join(KEY)}, cell_id FROM {a}.suite_cells WHERE variant IS NULL").fetchall():
            key, cid = tuple(row[:-1]), row[-1]
            if key in seen and seen[key][0] != cid:
                suite, dataset, repeat, fold, size, _seed, model = key
                raise StoreError(
                    f"merge: suite {suite!r} ran model {model!r} on {dataset!r} (repeat {repeat}, fold {fold}, "
                    f"size {size}) with a different entry or preprocessing in {seen[key][1]} than in {names[a]}; "
                    "both cannot be that suite's current result: re-run one under another suite name")
            seen.setdefault(key, (cid, names[a]))


def _choose(con: Any, aliases: list[str], names: dict[str, str], report: MergeReport,
            out_alias: str | None) -> dict[str, str]:
    """cell id → the alias whose rows are kept."""
    best: dict[str, tuple[tuple[int, int, str], str, str, str]] = {}
    shared: dict[str, str] = {}  # cell id → the run whose same result several inputs hold
    for a in aliases:
        kept = (f"EXISTS (SELECT 1 FROM {a}.predictions p WHERE p.cell_id = r.cell_id)"
                if "predictions" in _tables(con, a) else "false")
        rows = con.execute(f"SELECT cell_id, status, {kept}, finished_at, run_id, suite, dataset, model, sample_size, "
                           f"fold FROM {a}.results r").fetchall()
        for cid, status, has_pred, finished, run_id, suite, dataset, model, size, fold in rows:
            rank = _rank(status, bool(has_pred), finished)
            label = f"{suite}/{dataset}/{model}/n={size}/fold {fold}"
            if cid not in best:
                best[cid] = (rank, a, run_id, status)
                continue
            prev_rank, prev_a, prev_run, prev_status = best[cid]
            if prev_run == run_id and prev_rank == rank:
                if a == out_alias:  # the output holds this very result already: nothing to copy
                    best[cid] = (rank, a, run_id, status)
                else:
                    shared[cid] = run_id
                continue  # the same result, reached by two paths (a file merged before)
            win, lose = ((rank, a, status), (prev_rank, prev_a, prev_status)) if rank > prev_rank else \
                ((prev_rank, prev_a, prev_status), (rank, a, status))
            if win[0][0] > lose[0][0]:
                why = f"{win[2]} over {lose[2]}"
            elif win[0][1] > lose[0][1]:
                why = f"both {win[2]}: the one with its trials' predictions"
            else:
                why = f"both {win[2]}: the later result ({win[0][2][:19]} vs {lose[0][2][:19]})"
            report.choices.append(Choice(cid, label, names[win[1]], names[lose[1]], why))
            if rank > prev_rank:
                best[cid] = (rank, a, run_id, status)
    # counted where that result is the one kept and copied (one the output holds is "already there")
    report.cells_in_several = sum(best[c][2] == run and best[c][1] != out_alias for c, run in shared.items())
    return {cid: v[1] for cid, v in best.items()}


def _what_is_new(con: Any, aliases: list[str], out_alias: str | None, keep: dict[str, str],
                 have: dict[str, set[str]], report: MergeReport) -> bool:
    """Count what the merge adds to the output; False when it adds nothing at all."""
    inputs = [a for a in aliases if a != out_alias]
    in_out: dict[str, tuple[str, Any]] = {}
    if out_alias is not None:
        in_out = {r[0]: (r[1], r[2]) for r in con.execute(f"SELECT cell_id, run_id, finished_at FROM {out_alias}.results").fetchall()}
    for cid, a in keep.items():
        if a == out_alias:
            report.cells_already += 1
        elif cid in in_out:
            report.cells_replaced += 1
        else:
            report.cells_added += 1
    new = report.cells_added + report.cells_replaced
    for a in inputs:
        report.suites += [r[0] for r in con.execute(f"SELECT DISTINCT suite FROM {a}.results").fetchall()
                          if r[0] not in report.suites]
        if out_alias is None:
            new += 1  # a new output file: everything is new
            continue
        for table, key in (("runs", "run_id"), ("datasets", "dataset")):
            n = con.execute(f"SELECT count(*) FROM {a}.{table} WHERE {key} NOT IN (SELECT {key} FROM {out_alias}.{table})"
                            ).fetchone()[0]
            new += n
            if table == "runs":
                report.runs_added += n
            else:
                report.datasets_added += n
        for table, cols in (("suite_cells", "suite, cell_id"),
                            ("reference_scores", "suite, dataset, repeat, fold, sample_size, seed")):
            if table in have[a]:
                new += con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM {a}.{table} EXCEPT "
                                   f"SELECT {cols} FROM {out_alias}.{table})").fetchone()[0]
    if out_alias is None:
        report.runs_added = sum(con.execute(f"SELECT count(*) FROM {a}.runs").fetchone()[0] for a in inputs)
        report.datasets_added = con.execute(
            "SELECT count(DISTINCT dataset) FROM (" + " UNION ALL ".join(f"SELECT dataset FROM {a}.datasets"
                                                                           for a in inputs) + ")").fetchone()[0]
    return new > 0


def _write(files: list[Path], target: Path, keep: dict[str, str], report: MergeReport) -> None:
    """Copy into the output in one transaction: what ``keep`` chose, and every plan, run, dataset and
    split the output lacks."""
    store = Store(target)
    with store.connect() as con:  # creates or upgrades the output's tables
        aliases = _attach(con, files)
        out_tables = _tables(con, con.execute("SELECT current_database()").fetchone()[0])
        con.execute("BEGIN")
        try:
            for a in aliases:
                src = _tables(con, a)
                chosen = [cid for cid, who in keep.items() if who == a]
                if chosen:
                    con.execute("CREATE OR REPLACE TEMP TABLE chosen (cell_id VARCHAR)")
                    con.executemany("INSERT INTO chosen VALUES (?)", [[c] for c in chosen])
                    for table in CELL_TABLES:
                        con.execute(f"DELETE FROM {table} WHERE cell_id IN (SELECT cell_id FROM chosen)")
                        if table in src:
                            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {a}.{table} "
                                        "WHERE cell_id IN (SELECT cell_id FROM chosen)")
                for table, key in (("runs", "run_id"), ("datasets", "dataset")):
                    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {a}.{table} "
                                f"WHERE {key} NOT IN (SELECT {key} FROM {table})")
                con.execute(f"INSERT INTO features BY NAME SELECT * FROM {a}.features "
                            "WHERE dataset NOT IN (SELECT DISTINCT dataset FROM features)")
                if "dataset_traits" in src:  # a reference's shipped characteristics (a file from before has none)
                    con.execute(f"INSERT OR IGNORE INTO dataset_traits BY NAME SELECT * FROM {a}.dataset_traits")
                for table in ("splits", "train_order"):
                    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {a}.{table} s WHERE NOT EXISTS "
                                f"(SELECT 1 FROM {table} o WHERE o.dataset = s.dataset AND o.split_key = s.split_key)")
                for table in ("suite_cells", "reference_scores"):
                    if table in src:
                        con.execute(f"INSERT OR IGNORE INTO {table} BY NAME SELECT * FROM {a}.{table}")
                for (data_table,) in con.execute(f"SELECT DISTINCT data_table FROM {a}.datasets").fetchall():
                    if data_table and data_table in src and data_table not in out_tables:
                        con.execute(f"CREATE TABLE {data_table} AS SELECT * FROM {a}.{data_table}")
                        out_tables.add(data_table)
            backfill(con)  # rows of files from before schema 6 (their split keys, model versions)
            now = datetime.now(timezone.utc).replace(tzinfo=None)
            if report.choices:
                con.executemany("INSERT INTO merge_choices VALUES (?, ?, ?, ?, ?, ?)",
                                [[now, c.cell_id, c.label, c.kept, c.dropped, c.why] for c in report.choices])
            con.execute("INSERT INTO merges VALUES (?, ?, ?, ?, ?)", [
                now, json.dumps([str(f.resolve()) for f in files]), report.cells_added, report.cells_replaced,
                len(report.choices)])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        for a in aliases:
            con.execute(f"DETACH {a}")
    from pipeline.data.views import install

    install(store)
