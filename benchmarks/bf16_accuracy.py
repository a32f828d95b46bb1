"""Does training in bf16 change what a torch model scores? suites/bf16-check.yaml runs FT-Transformer, the
MLP and TabM twice on the same splits, at ``amp: off`` (fp32) and ``amp: bf16``; this prints, per model,
the paired difference bf16 − fp32 of the test score (accuracy, or R² for regression):

- its mean over the 12 datasets (each dataset's mean over its sizes and subset seeds), with a 95 %
  Student-t interval over datasets (the datasets are the independent units; seeds within one are not);
- per dataset, the mean difference against that dataset's split-to-split spread (the standard deviation
  of the fp32 scores over its three subset seeds, averaged over sizes): a dataset is flagged when bf16 is
  worse by more than the spread;
- the fit time of bf16 against fp32 (median ratio), and the cells that stopped at a budget in one
  precision and not the other (a confounded pair).

    python benchmarks/bf16_accuracy.py --run          # run the suite (resumes), then the figures
    python benchmarks/bf16_accuracy.py --db FILE      # the figures of what a run (or chunks of it) finished
    timeout -s INT 2h attnbench run suites/bf16-check.yaml --db FILE --no-report   # a chunk of at most 2 h

The goal the `amp: auto` choice rests on: each model's mean difference within ±0.002 with its interval
printed, and no dataset worse by more than its spread; a model that misses it trains in fp32 under
``auto`` (pipeline/train/precision.py) and docs/PERFORMANCE.md says why.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "suites" / "bf16-check.yaml"
GOAL = 0.002


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", default="bf16-check.duckdb")
    p.add_argument("--run", action="store_true", help="run (or resume) the suite first")
    p.add_argument("--num-cpus", type=int, default=None)
    return p.parse_args(argv)


def cells(db: str) -> pd.DataFrame:
    from pipeline.data.store import Store
    from pipeline.data.views import temporary_views

    return Store(db, create=False).query(
        "SELECT s.dataset, s.sample_size, s.seed, s.model, s.status, s.score, s.fit_seconds, s.stop_reason, "
        "s.epochs, r.precision FROM scores s JOIN current_results r USING (cell_id) WHERE s.suite LIKE '%bf16-check%'",
        prepare=temporary_views)


def paired(c: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, dataset, size, seed) with both precisions' score, fit time and stop reason."""
    c = c.assign(family=c.model.str.rsplit("-", n=1).str[0], amp=c.model.str.rsplit("-", n=1).str[1])
    wide = c.pivot_table(index=["family", "dataset", "sample_size", "seed"], columns="amp",
                         values=["score", "fit_seconds"], aggfunc="first")
    wide.columns = [f"{v}_{a}" for v, a in wide.columns]
    stops = c.pivot_table(index=["family", "dataset", "sample_size", "seed"], columns="amp", values="stop_reason",
                          aggfunc="first")
    wide = wide.join(stops.add_prefix("stop_")).reset_index()
    return wide.dropna(subset=["score_fp32", "score_bf16"]).assign(diff=lambda d: d.score_bf16 - d.score_fp32)


def interval(values: pd.Series, level: float = 0.95) -> tuple[float, float, float]:
    n = len(values)
    m = float(values.mean())
    if n < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return m, m - half, m + half


def report(p: pd.DataFrame) -> list[str]:
    out = []
    for family, g in p.groupby("family", sort=True):
        per_ds = g.groupby("dataset")["diff"].mean()
        m, lo, hi = interval(per_ds)
        spread = g.groupby(["dataset", "sample_size"]).score_fp32.std().groupby("dataset").mean()
        worse = per_ds[per_ds < -spread.reindex(per_ds.index)]
        ratio = (g.fit_seconds_bf16 / g.fit_seconds_fp32).median()
        budget = ("max_epochs", "time_limit")
        confounded = g[(g.stop_fp32.isin(budget)) != (g.stop_bf16.isin(budget))]
        verdict = ("too few datasets for an interval: cannot say whether it meets" if len(per_ds) < 2 else
                   "meets" if lo >= -GOAL and hi <= GOAL and worse.empty else
                   "mean within, interval wider than" if abs(m) <= GOAL and worse.empty else "misses")
        out.append(f"{family}: bf16 − fp32 = {m:+.4f} [{lo:+.4f}, {hi:+.4f}] (95% t-interval over "
                   f"{len(per_ds)} datasets, {len(g)} paired cells); {verdict} the ±{GOAL} goal; "
                   f"datasets worse by more than their split-to-split spread: "
                   f"{', '.join(f'{d} ({v:+.4f} vs {spread[d]:.4f})' for d, v in worse.items()) or 'none'}; "
                   f"fit time bf16/fp32 median {ratio:.2f}; pairs where one precision ran out of budget and the "
                   f"other did not: {len(confounded)}")
        for ds, v in per_ds.items():
            out.append(f"    {ds:24s} {v:+.4f}  (fp32 spread {spread.get(ds, math.nan):.4f})")
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.run:
        cmd = [sys.executable, "-m", "pipeline.cli", "run", str(SUITE), "--db", args.db, "--no-report",
               "--allow-failures"] + (["--num-cpus", str(args.num_cpus)] if args.num_cpus else [])
        code = subprocess.run(cmd).returncode
        if code not in (0, 3):  # 3: some cell failed (the figures leave it out and say how many finished)
            print(f"bf16_accuracy: the run ended with exit code {code} ({'interrupted: run again to resume' if code == 130 else 'see above'}); the figures below are of the cells it finished")
    c = cells(args.db)
    ok = c[c.status == "ok"]
    print(f"{args.db}: {len(ok)} of {len(c)} cells finished ok; precisions recorded: "
          f"{', '.join(sorted(ok.precision.dropna().unique()))}")
    for line in report(paired(ok)):
        print(line)


if __name__ == "__main__":
    main()
