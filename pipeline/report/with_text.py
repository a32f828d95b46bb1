"""Your data beside a reference (``attnbench answer REF --with FILE``, issue 84 item 4): each of your datasets'
verdicts at its sizes beside the reference's at the nearest of its sizes, and the by-size lines over the
reference's datasets and yours together.

Both sides are read the same way (:func:`pipeline.report.answer_text.pairs`: the ``standings`` view's best
attention network against the best gradient-boosting model, each picked by validation, on the splits both
finished). Your sizes are binned to the reference's nearest size on a log scale (your 19,200 rows sit with its
24,576 rather than its 12,288), and the table says where each went. A dataset the reference holds too is the
reference's, not yours: it is not counted twice.
"""

from __future__ import annotations

import math

import pandas as pd

from pipeline.records import COMPARED_VERDICTS
from pipeline.report.answer_text import ORDER, pairs
from pipeline.report.stats.claims import mean_interval
from pipeline.report.text import signed, thousands


def nearest(n_train: float, sizes: list[int]) -> int:
    """The reference size nearest ``n_train`` training rows on a log scale."""
    return min(sizes, key=lambda s: (abs(math.log(s) - math.log(max(n_train, 1))), s))


def markdown(ref_db: str, mine_db: str, ref: str, mine: str) -> str:
    theirs, yours = pairs(ref_db), pairs(mine_db)
    yours = yours[~yours.dataset.isin(set(theirs.dataset))]
    if yours.empty:
        return (f"{mine} holds no dataset of its own with an attention network beside a gradient-boosting model on "
                f"the same splits (its datasets that {ref} holds too are {ref}'s); run an attention entry and a "
                "boosting entry on your data first (docs/YOUR-DATA.md).\n")
    sized = theirs[theirs.sample_size != "all"]
    sizes = sorted({int(s) for s in sized.sample_size})
    yours = yours.assign(bin=[nearest(n, sizes) for n in yours.n_train])
    out = [f"## Your data beside {ref}", "",
           f"{len(set(yours.dataset))} dataset{'s' if yours.dataset.nunique() != 1 else ''} of {mine}, each size beside "
           f"{ref}'s datasets at the nearest of its training sizes (on a log scale). Difference: attention − boosting "
           "test score (the metric: each side's standings), mean over splits, Nadeau–Bengio corrected 95% interval.", "",
           "| your dataset | rows | training rows | metric | attention | boosting | difference [95% CI] | splits | "
           f"verdict | {ref} at | its verdicts there | its mean [95% CI over datasets] |",
           "| --- | ---: | ---: | --- | --- | --- | --- | ---: | --- | ---: | --- | --- |"]
    at = {s: _counts(sized[sized.sample_size.astype(int) == s]) for s in sizes}
    for r in yours.sort_values(["dataset", "n_train"]).itertuples(index=False):
        c = at[int(r.bin)]
        out.append(f"| {r.dataset} | {int(r.n_rows):,} | {thousands(r.n_train)} | {r.metric} | {r.model} | "
                   f"{r.versus_model} | "
                   f"{signed(r.diff)} [{signed(r.lo)}, {signed(r.hi)}] | {int(r.n_splits)} | {r.verdict} | "
                   f"{int(r.bin):,} | {_words(c)} | {_mean(c)} |")
    theirs_on, yours_on = set(sized.metric.dropna()), set(yours.metric.dropna())
    alike = yours[yours.metric.isin(theirs_on)]
    if len(alike) < len(yours):
        out += ["", f"Your verdicts on {', '.join(sorted(yours_on - theirs_on))} stand beside {ref}'s on "
                f"{', '.join(sorted(theirs_on))} above, and stay out of the lines below: a mean over datasets reads one "
                "metric."]
    both = pd.concat([sized.assign(bin=sized.sample_size.astype(int), yours=False), alike.assign(yours=True)])
    out += ["", f"By training size, {ref}'s datasets and yours together (yours at the size they were binned to):", "",
            "| training rows | datasets (yours) | ahead | equivalent | behind | undetermined | not converged | "
            "mean difference [95% CI over datasets] |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for size, g in sorted(both.groupby("bin"), key=lambda kv: int(kv[0])):
        c = _counts(g)
        out.append(f"| {int(size):,} | {c['datasets']} ({int(g.yours.sum())}) | "
                   + " | ".join(str(c[v.value]) for v in ORDER) + f" | {_mean(c)} |")
    return "\n".join(out) + "\n"


def _counts(g: pd.DataFrame) -> dict:
    counts = g.verdict.value_counts()
    compared = g[g.verdict.isin([v.value for v in COMPARED_VERDICTS])]
    mean, lo, hi = mean_interval(compared["diff"].to_numpy(dtype=float))
    return {"datasets": len(g), "n": len(compared), **{v.value: int(counts.get(v.value, 0)) for v in ORDER},
            "mean": mean, "lo": lo, "hi": hi}


def _words(c: dict) -> str:
    said = [f"{v.value} {c[v.value]}" for v in ORDER if c[v.value]]
    return ", ".join(said) or "none"


def _mean(c: dict) -> str:
    if not c["n"] or pd.isna(c["mean"]):
        return "–"
    return f"{signed(c['mean'])} [{signed(c['lo'])}, {signed(c['hi'])}]" + ("" if c["n"] > 1 else " (one dataset)")

