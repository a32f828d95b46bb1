"""The ``across_datasets`` table (issue 82 item 4): per training size and pair, what Corani et al.'s hierarchical
model (:mod:`hierarchical`) says of a new dataset, and of each dataset shrunk toward the others, read from the
``standings`` view's rows. ``attnbench answer`` writes it into a results file (and ``make answers`` beside a shipped
reference); the answer and the overview read it, and only where each row's ``digest`` is that of the data it was
fitted on now: a table fitted before a chunk landed is refitted, never read.

The pairs, each against the best gradient-boosting model on each task (picked by validation): the best attention
network, the best other network, and each attention entry on its own; per numeric training size, and at each
dataset's largest size (``sample_size`` 'largest': the headline verdicts' own rows). A (size, pair) needs
:data:`MIN_DATASETS` datasets: a population of fewer says little of a new one.

One row per (sample_size, pair, dataset, rope): ``dataset`` NULL is a new dataset's; ``behind``, ``equivalent``,
``ahead`` the probabilities at ±``rope``; ``n_datasets`` and ``n_splits`` what the fit read; ``divergences`` NUTS's;
``digest`` of the fit's input, its seed, draws and this module's method.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd

from pipeline.models.kinds import ATTENTION, BOOSTING, NETWORK
from pipeline.report.stats import hierarchical
from pipeline.report.stats.verdicts import versus

MIN_DATASETS = 5
LARGEST = "largest"
BEST_ATTENTION, BEST_NETWORK = f"best {ATTENTION}", f"best {NETWORK}"
AGAINST = versus(BOOSTING)
METHOD = "corani2017-numpyro-nuts-v1"
COLUMNS = ["sample_size", "pair", "versus", "dataset", "rope", "behind", "equivalent", "ahead", "n_datasets",
           "n_splits", "divergences", "digest"]
INPUT = ["dataset", "diff", "sd", "n_splits", "folds"]


def inputs(standings: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """Every (size, pair) the table fits, with its per-dataset input (:data:`INPUT`, one row per dataset), in order:
    sizes ascending, then 'largest'; the two best pairs, then each attention entry."""
    s = standings[(standings.versus == AGAINST) & (standings.n_splits > 0)]
    best = {BEST_ATTENTION: s[s.family_best & (s.family == ATTENTION)],
            BEST_NETWORK: s[s.family_best & (s.family == NETWORK)]}
    entries = {m: g for m, g in s[s.family == ATTENTION].groupby("model")}
    out = []
    sizes = sorted({str(z) for z in s.sample_size if str(z).isdigit()}, key=int)
    for size in sizes:
        for pair, rows in {**best, **entries}.items():
            here = rows[rows.sample_size.astype(str) == size]
            if here.dataset.nunique() >= MIN_DATASETS:
                out.append((size, pair, _frame(here)))
    top = best[BEST_ATTENTION].sort_values("n_train", kind="stable").groupby("dataset").tail(1)
    if top.dataset.nunique() >= MIN_DATASETS:
        out.append((LARGEST, BEST_ATTENTION, _frame(top)))
    return out


def _frame(rows: pd.DataFrame) -> pd.DataFrame:
    one = rows.sort_values(["dataset", "split_key"]).drop_duplicates("dataset")
    return one[INPUT].reset_index(drop=True)


def digest(frame: pd.DataFrame) -> str:
    """What a fit read, with how it sampled: its rows (to 12 digits), seed, draws, ropes and method."""
    rows = [[str(r.dataset), round(float(r.diff), 12), None if pd.isna(r.sd) else round(float(r.sd), 12),
             int(r.n_splits), int(r.folds)] for r in frame.itertuples(index=False)]
    blob = json.dumps([rows, hierarchical.SEED, [hierarchical.WARMUP, hierarchical.SAMPLES, hierarchical.CHAINS],
                       list(hierarchical.ROPES), METHOD])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def fitted(size: str, pair: str, frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """The table's rows for one (size, pair): a new dataset's and each dataset's, at each rope."""
    post = hierarchical.fit(frame, frame.folds.to_numpy(dtype=float))
    rows = []
    for rope in hierarchical.ROPES:
        behind, equivalent, ahead = post.new[rope]
        rows.append({"dataset": None, "rope": rope, "behind": behind, "equivalent": equivalent, "ahead": ahead})
        for r in post.per_dataset.to_dict("records"):
            rows.append({"dataset": r["dataset"], "rope": rope, "behind": r[f"behind_{rope:g}"],
                         "equivalent": r[f"equivalent_{rope:g}"], "ahead": r[f"ahead_{rope:g}"]})
    out = pd.DataFrame(rows)
    out = out.assign(sample_size=size, pair=pair, versus=AGAINST, n_datasets=post.n_datasets, n_splits=post.n_splits,
                     divergences=post.divergences, digest=key)
    return out[COLUMNS]


def table(standings: pd.DataFrame, cached: pd.DataFrame | None = None) -> tuple[pd.DataFrame, int]:
    """The whole table for ``standings``, reusing ``cached``'s rows of a (size, pair) whose digest is the same
    (an earlier fit of the same data, seed and method), fitting the rest. Returns it and how many fits it ran."""
    parts, ran = [], 0
    for size, pair, frame in inputs(standings):
        key = digest(frame)
        old = (cached[(cached.sample_size == size) & (cached.pair == pair) & (cached.digest == key)]
               if cached is not None and len(cached) else pd.DataFrame())
        if len(old):
            parts.append(old[COLUMNS])
        else:
            parts.append(fitted(size, pair, frame, key))
            ran += 1
    return (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)), ran


def current(standings: pd.DataFrame, stored: pd.DataFrame | None) -> pd.DataFrame:
    """``stored``'s rows that belong to the data now (each (size, pair) whose digest matches its input today);
    empty where none does. What the answer and the pages read: never a fit of other data."""
    if stored is None or stored.empty:
        return pd.DataFrame(columns=COLUMNS)
    keys = {(size, pair, digest(frame)) for size, pair, frame in inputs(standings)}
    ok = [(z, p, k) in keys for z, p, k in zip(stored.sample_size, stored.pair, stored.digest, strict=True)]
    return stored[ok].reset_index(drop=True)


def missing(standings: pd.DataFrame, stored: pd.DataFrame | None) -> list[tuple[str, str]]:
    """The (size, pair)s the data calls for that ``stored`` has no current fit of."""
    have = current(standings, stored)
    done = set(zip(have.sample_size, have.pair))
    return [(z, p) for z, p, _ in inputs(standings) if (z, p) not in done]
