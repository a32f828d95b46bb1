"""The answer across datasets in Markdown (issue 82 item 4): the ``across_datasets`` table's fits
(:mod:`pipeline.report.stats.across`) that belong to the data now, per training size and pair, and each dataset's
shrunk probabilities beside its verdict at its largest size. ``attnbench answer`` fits what the table lacks first;
this only reads."""

from __future__ import annotations

import pandas as pd

from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.report.stats import across, hierarchical
from pipeline.report.text import thousands

NAMED = [across.BEST_ATTENTION, across.BEST_NETWORK]


def tables(db: str) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[str, str]]]:
    """The file's standings, the current fits of its across_datasets table, and the (size, pair)s not fitted."""
    store = Store(db, create=False)
    standings = store.query("SELECT * FROM standings ORDER BY ALL", prepare=temporary_views)
    stored = store.read_across()
    return standings, across.current(standings, stored), across.missing(standings, stored)


def _share(x: float) -> str:
    return f"{x:.0%}"


def _three(g: pd.DataFrame, rope: float) -> str:
    r = g[g.rope == rope].iloc[0]
    return f"{_share(r.behind)}–{_share(r.equivalent)}–{_share(r.ahead)}"


DIVERGED = 0.01  # a fit whose divergent transitions pass this share of its draws is said to be rough


def sampler(divergences: int, draws: int) -> str:
    """``ok``, or ``rough: 216 of 4,000 draws diverged`` past :data:`DIVERGED`."""
    return f"rough: {divergences:,} of {draws:,} draws diverged" if divergences > DIVERGED * draws else "ok"


def _size_key(size: str) -> tuple[int, int]:
    return (1, 0) if size == across.LARGEST else (0, int(size))


def markdown(db: str) -> list[str]:
    """The across-datasets block of ``attnbench answer``: empty where the data calls for no fit."""
    standings, now, missing = tables(db)
    if now.empty and not missing:
        return []
    ropes = hierarchical.ROPES
    head = (f"**Across datasets** (the Bayesian hierarchical model of Corani, Benavoli, Demšar, Mangili and Zaffalon, "
            f"2017, sampled with NumPyro's NUTS, seed {hierarchical.SEED}: each dataset's splits correlated by 1/k, its "
            "true difference drawn from a Student t over datasets; on a new dataset of that size, the probability that "
            "the pair's model is behind, equivalent to or ahead of the best gradient-boosting model, within "
            f"±{ropes[0]:g} and the pre-registered ±{ropes[1]:g}; 'largest' is each dataset at its largest size, as the "
            "headline verdicts):")
    draws = hierarchical.SAMPLES * hierarchical.CHAINS
    out = [head, "", f"| model | training rows | datasets | splits | ±{ropes[0]:g}: behind–equivalent–ahead | "
           f"±{ropes[1]:g}: behind–equivalent–ahead | sampler |", "| --- | ---: | ---: | ---: | --- | --- | --- |"]
    new = now[now.dataset.isna()]
    order = NAMED + sorted(set(new.pair) - set(NAMED))
    for pair in order:
        for size, g in sorted(new[new.pair == pair].groupby("sample_size"), key=lambda kv: _size_key(str(kv[0]))):
            label = size if size == across.LARGEST else thousands(int(size))
            out.append(f"| {pair} | {label} | {int(g.n_datasets.iloc[0])} | {int(g.n_splits.iloc[0]):,} | "
                       f"{_three(g, ropes[0])} | {_three(g, ropes[1])} | {sampler(int(g.divergences.iloc[0]), draws)} |")
    rough = int((new.drop_duplicates(["sample_size", "pair"]).divergences > DIVERGED * draws).sum())
    if rough:
        out += ["", f"On {rough} of these fits NUTS diverged on more than {DIVERGED:.0%} of its {draws:,} draws (the "
                "sampler column): the posterior there has a region it could not explore (most often one dataset far "
                "from the rest, such as a fit whose R² fell below −1), so its figures are rough; the others are not."]
    if missing:
        out += ["", f"Not fitted for this data: {len(missing)} of {len(missing) + new.groupby(['sample_size', 'pair']).ngroups} "
                "(size, model)s; `attnbench answer FILE` fits them (about 15 seconds each on one core)."]
    shrunk = now[(now.sample_size == across.LARGEST) & now.dataset.notna() & (now.rope == ropes[0])]
    if len(shrunk):
        out += ["", f"Each dataset at its largest size, shrunk toward the others (±{ropes[0]:g}; the verdict is the "
                "dataset's own, over its splits):", "",
                "| dataset | verdict | behind–equivalent–ahead |", "| --- | --- | --- |"]
        top = standings[standings.family_best & (standings.family == across.ATTENTION) & (standings.versus == across.AGAINST)]
        verdict = top.sort_values("n_train", kind="stable").groupby("dataset").tail(1).set_index("dataset").verdict
        for r in shrunk.sort_values("dataset").itertuples(index=False):
            out.append(f"| {r.dataset} | {verdict.get(r.dataset, '–')} | {_share(r.behind)}–{_share(r.equivalent)}–"
                       f"{_share(r.ahead)} |")
    return out


def refresh(db: str, say: object = None) -> int:
    """Fit what the file's across_datasets table lacks for its data now, and store the whole table. Returns the fits
    it ran (0: the table was current)."""
    store = Store(db, create=False)
    standings = store.query("SELECT * FROM standings ORDER BY ALL", prepare=temporary_views)
    stored = store.read_across()
    todo = across.missing(standings, stored)
    if not todo:
        return 0
    if callable(say):
        say(f"fitting the hierarchical model across datasets for {len(todo)} (size, model)s (about 15 s each)")
    table, ran = across.table(standings, stored)
    store.write_across(table)
    return ran
