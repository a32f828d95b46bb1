"""Writing reference results: a results file's cells that a reference does not hold yet, as its next
chunk of Parquet files (``attnbench reference add``), kept small enough to ship (predictions optional,
learning curves thinned, wide attention maps left out). Reading them is :mod:`pipeline.data.references`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data import characteristics
from pipeline.data.reference_tables import SPLIT_KEYS, TABLES, Held, export_tables, one, suite_yaml
from pipeline.data.references import ReferenceError, load, shipped_root, shown
from pipeline.records import Status

MAX_FILE_MB = 4.5  # no file of a chunk above this: git keeps them whole, and the project keeps files < 5 MB
# A shipped trial's learning curve keeps at most this many points (add_chunk's curve_points): a boosting
# library's curve has a point per round (CatBoost's 2,000), most of a study's trials table otherwise.
CURVE_POINTS = 128
# A shipped chunk's curves and attention maps keep this many significant digits (add_chunk's digits): a
# float's 17 digits of noise are most of their bytes, and a heat map or a curve shows none of them.
DIGITS = 4
# A shipped attention map is kept for a dataset of at most this many features (add_chunk's map_features):
# a map is (features + 1)² numbers, and one dataset of 359 features made 3.5 of a chunk's 3.6 MB.
MAP_FEATURES = 64

@dataclass
class Added:
    folder: Path
    chunk: str
    cells: int
    files: list[tuple[str, float]]  # (file, MB)
    predictions: bool
    curve_points: int | None = None  # the most points a trial's learning curve kept (None: all)
    map_features: int | None = None  # attention maps kept for datasets of at most this many features (None: all)
    maps_left_out: int = 0
    traits: int = 0  # datasets whose characteristics from their rows this chunk ships
    digits: int | None = None  # significant digits the curves and maps kept (None: all)
    ended: list[str] | None = None  # runs an earlier chunk holds as running, shipped again now that they have ended
    searching: int = 0  # trials of searches whose cell has not finished yet (a run that finished no cell ships these)
    meta_changes: list[str] = field(default_factory=list)  # what this chunk changed in reference.json
    cost: dict[str, Any] = field(default_factory=dict)  # chunk_cost: what its trials cost, per training size
    unplanned: int = 0  # cells an earlier chunk planned that the suite plans no more (its plan cut, an entry changed)


def chunk_cost(con: Any, table: str = "out") -> dict[str, Any]:
    """What a chunk's cells cost, as their trials measured it (``trials.seconds``, the same figure for every
    model): trial-hours in all, and per training size its cells, those not ``ok`` by status, and their
    trials' hours; trials of a search whose cell has not finished yet are ``searching``."""
    sizes: dict[str, Any] = {}
    for size, status, n in con.execute(
            f"SELECT sample_size, status, count(*) FROM {table}_results GROUP BY sample_size, status "
            "ORDER BY try_cast(sample_size AS INTEGER) NULLS LAST, sample_size, status").fetchall():
        entry = sizes.setdefault(size, {"cells": 0, "not_ok": {}, "trial_hours": 0.0})
        entry["cells"] += n
        if status != Status.OK:
            entry["not_ok"][status] = n
    searching = total = 0.0
    for size, seconds in con.execute(
            f"SELECT r.sample_size, coalesce(sum(t.seconds), 0)::DOUBLE FROM {table}_trials t "
            f"LEFT JOIN {table}_results r USING (cell_id) GROUP BY ALL").fetchall():
        total += seconds
        if size is None:
            searching = seconds
        else:
            sizes[size]["trial_hours"] = round(seconds / 3600, 4)
    return {"trial_hours": round(total / 3600, 4), "searching_trial_hours": round(searching / 3600, 4), "sizes": sizes}


def thin_curve(curve: list[dict[str, Any]], points: int, best: int | None = None) -> list[dict[str, Any]]:
    """At most ``points`` of a learning curve: evenly spaced by position, the first and the last among
    them, and the point the trial kept (its ``best`` epoch or round; without one, the lowest validation
    loss). Each point keeps its own epoch or iteration number."""
    if len(curve) <= points:
        return curve
    spaced = points - 1 if points >= 3 else points  # room for the kept point
    keep = set(np.linspace(0, len(curve) - 1, max(1, spaced)).round().astype(int).tolist())
    if points >= 3:
        at = [i for i, c in enumerate(curve) if best is not None and c.get("epoch", c.get("iteration")) == best]
        losses = [(float(c["val_loss"]), i) for i, c in enumerate(curve) if isinstance(c.get("val_loss"), (int, float))]
        if at or losses:
            keep.add(at[0] if at else min(losses)[1])
    return [curve[i] for i in sorted(keep)]


def _thin_curves(con: Any, table: str, points: int) -> None:
    """Every curve of ``table`` longer than ``points`` thinned (:func:`thin_curve`), in one update."""
    rows = con.execute(f"SELECT trial_id, curve, best_epoch FROM {table} WHERE curve IS NOT NULL").fetchall()
    thinned = []
    for trial_id, text, best in rows:
        curve = json.loads(text) if isinstance(text, str) else text
        if len(curve) > points:
            thinned.append((trial_id, json.dumps(thin_curve(curve, points, best))))
    if thinned:
        con.register("thinned_curves", pd.DataFrame(thinned, columns=["trial_id", "curve"]))
        con.execute(f"UPDATE {table} SET curve = t.curve::JSON FROM thinned_curves t WHERE {table}.trial_id = t.trial_id")
        con.unregister("thinned_curves")


def significant(value: Any, digits: int) -> Any:
    """``value`` (a number, or lists and dicts of them, as JSON holds them) with every float rounded to
    ``digits`` significant digits; integers, strings and None as they are."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if np.isfinite(value) else value
    if isinstance(value, list):
        return [significant(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: significant(v, digits) for k, v in value.items()}
    return value


def _round_json(con: Any, table: str, key: str, column: str, digits: int) -> None:
    """Every float inside the JSON ``column`` of ``table`` rounded to ``digits`` significant digits."""
    rows = con.execute(f"SELECT {key}, {column} FROM {table} WHERE {column} IS NOT NULL").fetchall()
    if not rows:
        return
    rounded = [(k, json.dumps(significant(json.loads(v) if isinstance(v, str) else v, digits))) for k, v in rows]
    con.register("rounded_df", pd.DataFrame(rounded, columns=["k", "v"]))
    con.execute(f"UPDATE {table} SET {column} = r.v::JSON FROM rounded_df r WHERE {table}.{key} = r.k")
    con.unregister("rounded_df")


def add_chunk(db: str | Path, name: str, *, suite: str | None = None, root: Path | None = None,
              predictions: bool = True, note: str = "", curve_points: int | None = CURVE_POINTS,
              map_features: int | None = MAP_FEATURES, digits: int | None = DIGITS) -> Added:
    """Write the cells of ``db`` that the reference ``name`` does not hold yet as its next chunk
    (``<root>/<name>/chunk-NNNN``); the first chunk also writes ``reference.json``, each later one its
    description as the suite's latest run gives it. Earlier chunks are never touched.
    ``predictions=False`` leaves the trials' predictions out (their size); ``curve_points`` thins each
    trial's learning curve to that many points (:func:`thin_curve`; None keeps them whole);
    ``map_features`` leaves out the attention maps of datasets with more features (None keeps them all);
    ``digits`` rounds the curves' and maps' numbers to that many significant digits (None keeps them
    whole; results and scores are never rounded). The results file keeps everything."""
    import duckdb

    from pipeline.data.store import Store

    folder = (root or shipped_root()) / name
    Store(db, create=False).query("SELECT 1")
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{Path(db).resolve()!s}' AS src (READ_ONLY)")
        suites = [r[0] for r in con.execute("SELECT DISTINCT suite FROM src.suite_cells ORDER BY 1").fetchall()]
        suite = suite or (suites[0] if len(suites) == 1 else None)
        if suite is None or suite not in suites:
            raise ReferenceError(f"{db}: name the suite to add (--suite; the file plans {', '.join(suites)})")
        meta_path = folder / "reference.json"
        held = Held()
        if meta_path.is_file():
            meta = json.loads(meta_path.read_text())
            if meta["suite"] != suite:
                raise ReferenceError(f"{folder}: the reference holds suite {meta['suite']!r}, not {suite!r}")
            old = load(str(folder))
            held = old.held()
            old.close()
        spec = suite_yaml(con, suite)
        meta, meta_changes = _meta(meta_path, name, suite, spec)
        export_tables(con, "src", suite, "out", held)
        _add_traits(con, suite, held)
        n = one(con, "SELECT count(*) FROM out_results")
        traits = one(con, "SELECT count(*) FROM out_dataset_traits")
        # A chunk of characteristics alone: a reference from before they were shipped; of ended runs alone: a
        # run shipped while running, closed since (its cells were shipped with it); of trials alone: a run that
        # ended within a search, finished no cell, and should still say what it cost; of the plan alone: a
        # plan cut (cells unplanned) or grown (plan rows) before any of its new cells ran.
        ended = sorted({r[0] for r in con.execute("SELECT run_id FROM out_runs").fetchall()} & held.open_runs)
        searching = one(con, "SELECT count(*) FROM out_trials WHERE cell_id NOT IN (SELECT cell_id FROM out_results)")
        unplanned = one(con, "SELECT count(*) FROM out_unplanned")
        planned = one(con, "SELECT count(*) FROM out_suite_cells")
        _refuse_an_older_plan(con, db, folder, suite, held, int(planned), int(unplanned))
        if not n and not traits and not ended and not searching and not unplanned and not planned:
            raise ReferenceError(f"{db}: nothing new for {folder}: no finished cell, committed trial or plan change of suite "
                                 f"{suite!r} that it does not hold already")
        if not predictions:
            for table in ("predictions", "targets"):
                con.execute(f"DELETE FROM out_{table}")
        if curve_points:
            _thin_curves(con, "out_trials", curve_points)
        maps_left_out = 0
        if map_features:
            maps_left_out = one(con, "SELECT count(*) FROM out_attention_maps WHERE json_array_length(features::JSON) > ?",
                                 [map_features])
            con.execute("DELETE FROM out_attention_maps WHERE json_array_length(features::JSON) > ?", [map_features])
        if digits:
            _round_json(con, "out_trials", "trial_id", "curve", digits)
            _round_json(con, "out_attention_maps", "cell_id", "map", digits)
        chunk = f"chunk-{len(list(folder.glob('chunk-*'))) + 1:04d}"
        out = folder / chunk
        out.mkdir(parents=True, exist_ok=False)
        files = []
        for table in TABLES:
            files += _write_parquet(con, f"out_{table}", out, table)
        cost = con.execute("SELECT min(started_at), max(finished_at), sum(epoch(finished_at - started_at)) "
                           "FROM out_runs").fetchall()[0]
        hw = [json.loads(h) for (h,) in con.execute("SELECT DISTINCT hardware FROM out_runs").fetchall() if h]
        spent = chunk_cost(con)
        (out / "chunk.json").write_text(json.dumps({
            "chunk": chunk, "cells": int(n), "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "runs": [r[0] for r in con.execute("SELECT run_id FROM out_runs ORDER BY started_at").fetchall()],
            "run_seconds": cost[2], "first_started": str(cost[0]) if cost[0] else None,
            "last_finished": str(cost[1]) if cost[1] else None, "hardware": hw,
            "predictions": predictions, "curve_points": curve_points, "map_features": map_features,
            "maps_left_out": maps_left_out, "digits": digits, "ended_runs": ended, "searching_trials": int(searching),
            "cost": spent, "unplanned": int(unplanned), "note": note}, indent=2) + "\n")
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
        return Added(folder, chunk, int(n), files, predictions, curve_points, map_features, maps_left_out, int(traits),
                     digits, ended, int(searching), meta_changes, spent, int(unplanned))
    finally:
        con.close()


def _refuse_an_older_plan(con: Any, db: str | Path, folder: Path, suite: str, held: Held, planned: int,
                          unplanned: int) -> None:
    """A file whose plan of the suite is older than the reference's (its latest run of the suite started before
    the latest run the reference holds) changes no plan: its chunk would plan again the cells a later cut
    dropped, or drop those a later run planned. Only a plan as new as the reference's is its next word."""
    if not (planned or unplanned) or held.plan_started is None or pd.isna(held.plan_started):
        return
    started = one(con, "SELECT epoch(max(started_at)) FROM src.runs WHERE suite = ?", [suite])
    if started is None or started >= held.plan_started:
        return
    at = datetime.fromtimestamp(started, timezone.utc).strftime("%Y-%m-%d %H:%M")
    ref_at = datetime.fromtimestamp(held.plan_started, timezone.utc).strftime("%Y-%m-%d %H:%M")
    raise ReferenceError(
        f"{db}: its plan of suite {suite!r} (its latest run, started {at}) is older than {folder}'s (a run started "
        f"{ref_at}): it would plan {_cells(planned)} the reference does not and drop {_cells(unplanned)} it does; run the "
        "suite as it is now into this file first (it runs only what is missing), then add it")


def _cells(n: int) -> str:
    return f"{n:,} cell{'' if n == 1 else 's'}"


def _meta(path: Path, name: str, suite: str, spec: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``reference.json`` as the chunks, this one included, hold the suite, and what changed in it. It is
    the one file a chunk rewrites: a suite that grew (more folds, repeats, subset seeds or sizes, a new
    description) says so, and ``--against`` takes the caps of all the chunks together (a later run with
    fewer narrows nothing). A change to what makes a cell (seed, folds, repeats, validation share,
    preprocessing) is refused: the chunks would hold two studies under one name. A run that recorded
    no suite text (an old file) leaves the file as it was."""
    from pipeline.spec import Protocol

    meta = {"name": name, "suite": suite, "seed": int(spec.get("seed", 0)), "protocol": spec.get("protocol", {}),
            "description": spec.get("description", ""), "how": f"attnbench run YOUR_SUITE.yaml --against {name}"}
    if not path.is_file():
        return meta, []
    old = json.loads(path.read_text())
    if not spec:
        return old, []
    was, now = (Protocol.model_validate(m["protocol"], strict=False) for m in (old, meta))
    for key in SPLIT_KEYS:
        if getattr(was, key) != getattr(now, key):
            raise ReferenceError(f"{path.parent}: protocol.{key} is {shown(getattr(now, key))} in suite {suite!r}'s "
                                 f"latest run and {shown(getattr(was, key))} in the reference's chunks: its cells "
                                 "differ")
    if old.get("seed", 0) != meta["seed"]:
        raise ReferenceError(f"{path.parent}: seed is {meta['seed']} in suite {suite!r}'s latest run and "
                             f"{old.get('seed', 0)} in the reference's chunks: its cells differ")
    caps: dict[str, Any] = {k: None if None in (getattr(was, k), getattr(now, k)) else max(getattr(was, k), getattr(now, k))
                            for k in ("max_folds", "max_repeats")}
    caps["subset_seeds"] = max(was.subset_seeds, now.subset_seeds)
    caps["sample_sizes"] = sorted({*was.sample_sizes, *now.sample_sizes}, key=lambda s: (s == "all", s if s != "all" else 0))
    protocol = now.model_copy(update=caps).model_dump(mode="json")
    out = {**old, "protocol": protocol, "description": meta["description"] or old.get("description", "")}
    before = was.model_dump(mode="json")
    changed = [f"protocol.{k} {before[k]!r} → {protocol[k]!r}" for k in caps if before[k] != protocol[k]]
    changed += ["its description"] if out["description"] != old.get("description") else []
    return out, changed


def _add_traits(con: Any, suite: str, held: Held) -> None:
    """The characteristics of each planned dataset's rows that the reference does not hold yet, computed
    here where the rows are: a reference ships no rows, and its report would otherwise not know them."""
    planned = [r[0] for r in con.execute("SELECT DISTINCT dataset FROM src.suite_cells WHERE suite = ? ORDER BY 1",
                                         [suite]).fetchall()]
    frame = characteristics.from_rows(con, [d for d in planned if d not in held.traits], catalog="src")
    frame = frame[frame[list(characteristics.FROM_ROWS)].notna().any(axis=1)]  # all NaN: it failed (logged); retried
    if len(frame):  # the rows win over what the file's own table says (as in the report)
        con.register("traits_df", frame)
        con.execute("DELETE FROM out_dataset_traits WHERE dataset IN (SELECT dataset FROM traits_df)")
        con.execute("INSERT INTO out_dataset_traits BY NAME SELECT * FROM traits_df")
        con.unregister("traits_df")


def _write_parquet(con: Any, table: str, out: Path, name: str) -> list[tuple[str, float]]:
    """The table as one Parquet file, or several when one would pass ``MAX_FILE_MB``."""
    n = one(con, f"SELECT count(*) FROM {table}")
    path = out / f"{name}.parquet"
    con.execute(f"COPY (SELECT * FROM {table}) TO '{path}' (FORMAT parquet, COMPRESSION zstd)")
    size = path.stat().st_size / 2**20
    if size <= MAX_FILE_MB or n < 2:
        return [(path.name, size)]
    path.unlink()
    pieces = int(np.ceil(size / MAX_FILE_MB)) + 1
    step = int(np.ceil(n / pieces))
    files = []
    for i in range(pieces):
        p = out / f"{name}-{i:02d}.parquet"
        con.execute(f"COPY (SELECT * FROM {table} LIMIT {step} OFFSET {i * step}) TO '{p}' "
                    "(FORMAT parquet, COMPRESSION zstd)")
        files.append((p.name, p.stat().st_size / 2**20))
    return files
