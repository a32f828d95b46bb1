"""What writing the report costs: `attnbench report` on a shipped reference exported into a results file.

Each build runs in a process of its own (a fresh import, as the command has), which prints the seconds
`write_report` took. The reference measurement, in the same session: reading the same file into the
report's frames (`ReportData.load`, every view the pages read), so the ratio says how much the pages add to
what reading costs. With ``--rev``, the report as an earlier commit wrote it is built from the same file in
the same session, from a worktree of that commit, alternating round by round with today's.

    python benchmarks/report.py                        # study-every-dataset, 3 rounds
    python benchmarks/report.py --rev 9dd4a61 --rounds 3  # and the report as 9dd4a61 wrote it
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table

REPO = Path(__file__).resolve().parents[1]

BUILD = """
import sys, time
from pipeline.report.pages import write_report
t0 = time.perf_counter()
write_report(sys.argv[1], sys.argv[2])
print(time.perf_counter() - t0)
"""
READ = """
import sys, time
from pipeline.report.data import ReportData
t0 = time.perf_counter()
ReportData.load(sys.argv[1])
print(time.perf_counter() - t0)
"""


def timed(code: str, root: Path, db: Path, out: Path) -> float:
    """Seconds the snippet reports, run from ``root`` (its ``pipeline`` first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", code, str(db), str(out)], cwd=root, env=env, capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(f"{root}: exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1]}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="study-every-dataset", help="a shipped reference, a folder or a results file")
    parser.add_argument("--rev", help="also build the report as this commit wrote it")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from pipeline.data import references

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ref.duckdb"
        references.export_file(args.ref, db)
        contenders = {"read the views (reference)": (READ, REPO), "report (now)": (BUILD, REPO)}
        if args.rev:
            tree = Path(tmp) / "rev"
            added = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), args.rev],
                                   capture_output=True, text=True)
            if added.returncode:
                raise SystemExit(f"--rev {args.rev}: {added.stderr.strip()}")
            contenders[f"report ({args.rev})"] = (BUILD, tree)
        best = dict.fromkeys(contenders, float("inf"))
        try:
            for r in range(args.rounds):
                for i, (name, (code, root)) in enumerate(contenders.items()):
                    # a folder per build: each writes its pages and its copy of plotly.js
                    best[name] = min(best[name], timed(code, root, db, Path(tmp) / f"out-{r}-{i}"))
        finally:
            if args.rev:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)
                subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)
        ref = best["read the views (reference)"]
        print(f"{args.ref}: best of {args.rounds} rounds, alternating, each in a fresh process; ratio to the reading")
        print(table(["step", "seconds", "× reference"], [[n, f"{s:.2f}", f"{s / ref:.2f}"] for n, s in best.items()]))
        if args.rev:
            print(f"now ÷ {args.rev}: {best['report (now)'] / best[f'report ({args.rev})']:.2f}")


if __name__ == "__main__":
    main()
