"""What the ``standings`` view costs: every page, ``attnbench answer`` and the overview read it, so its SQL is
part of every report build.

It runs on a shipped reference exported into a results file, and is timed against the view it reads, the
reference measurement: ``SELECT * FROM expected_cells`` (every planned cell with its result). With ``--rev``,
the view as an earlier commit wrote it runs on the same file in the same session, alternating round by round,
so a change to the view is measured before and after under one load.

    python benchmarks/standings.py                          # study-every-dataset, 5 rounds
    python benchmarks/standings.py --rev 9dd4a61 --rounds 7  # and the view as 9dd4a61 wrote it
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_times, table

REPO = Path(__file__).resolve().parents[1]


def view_at(rev: str) -> str:
    """The standings SQL as ``rev`` writes it: its pipeline/data/standings.py, or before that module existed its
    pipeline/data/views.py (loaded beside today's package)."""
    for path in ("pipeline/data/standings.py", "pipeline/data/views.py"):
        shown = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], capture_output=True, text=True)
        if shown.returncode == 0:
            text = shown.stdout
            break
    else:
        raise SystemExit(f"{rev}: no standings view in pipeline/data")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(f"views_{rev}", f.name)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.standings_sql()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="study-every-dataset", help="a shipped reference, a folder or a results file")
    parser.add_argument("--rev", help="also time the view as this commit wrote it")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from pipeline.data import references
    from pipeline.data.standings import standings_sql

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ref.duckdb"
        references.export_file(args.ref, db)
        con = duckdb.connect(str(db), read_only=True)
        rows = {"expected_cells (reference)": "SELECT * FROM expected_cells", "standings (now)": standings_sql()}
        if args.rev:
            rows[f"standings ({args.rev})"] = view_at(args.rev)
        counts = {name: len(con.execute(sql).fetchall()) for name, sql in rows.items()}
        def run(sql: str) -> Callable[[], object]:
            return lambda: con.execute(sql).fetchall()

        best = best_times({name: run(sql) for name, sql in rows.items()}, args.rounds)
        ref = best["expected_cells (reference)"]
        print(f"{args.ref}: best of {args.rounds} rounds, alternating; ratio to the reference read")
        print(table(["query", "rows", "seconds", "× reference"],
                    [[name, counts[name], f"{best[name]:.3f}", f"{best[name] / ref:.2f}"] for name in rows]))
        if args.rev:
            print(f"now ÷ {args.rev}: {best['standings (now)'] / best[f'standings ({args.rev})']:.2f}")


if __name__ == "__main__":
    main()
