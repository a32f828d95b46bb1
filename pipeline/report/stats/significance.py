"""Which differences on one dataset are real: each model against the best over the splits both
finished (paired two-sided Wilcoxon signed-rank, Holm-corrected across the models), and a crossover's
two models at the size it rests on. Says "too few splits" where no difference could reach α.
Pure pandas/numpy/scipy on rows of the ``expected_cells`` view."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.records import Status
from pipeline.report.stats.aggregate import TASK

ALPHA = 0.05
# The two-sided exact Wilcoxon signed-rank test's smallest p-value with n pairs is 2 / 2^n: below 6
# pairs it cannot reach 0.05, whatever the scores; Holm multiplies the smallest of m p-values by m.
MIN_SPLITS = 6


def needed_splits(m: int, alpha: float = ALPHA) -> int:
    """The fewest pairs with which the smallest of ``m`` Holm-adjusted Wilcoxon p-values can be below α."""
    n = 1
    while max(m, 1) * 2.0 ** (1 - n) >= alpha:
        n += 1
    return n


def wilcoxon_p(diff: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences (zero differences dropped; exact
    for small samples without ties); 1.0 when every difference is zero."""
    d = np.asarray(diff, dtype=float)
    if not np.any(np.abs(d) > 1e-12):
        return 1.0
    return float(stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def holm(p: list[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (same order as given)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def by_split(cells: pd.DataFrame) -> pd.DataFrame:
    """One task's finished scores, a row per split and a column per model."""
    ok = cells[cells.status == Status.OK]
    return ok.pivot_table(index=["repeat", "fold", "seed"], columns="model", values="score", aggfunc="mean")


def paired(cells: pd.DataFrame, a: str, b: str, wide: pd.DataFrame | None = None) -> pd.DataFrame:
    """Scores of models ``a`` and ``b`` on the splits where both finished (one task's ``expected_cells``;
    ``wide``: its :func:`by_split`, where the caller pairs many models of one task)."""
    wide = by_split(cells) if wide is None else wide
    if a not in wide or b not in wide:
        return pd.DataFrame(columns=[a, b])
    return wide[[a, b]].dropna()


def significance(cells: pd.DataFrame) -> pd.DataFrame:
    """Per task and model: is it significantly worse than the task's best model (highest mean)?

    A paired two-sided Wilcoxon signed-rank test over the splits both finished, Holm-corrected across
    the task's other models, at ``ALPHA``. ``verdict``: 'best' (the highest mean, ties included),
    'not worse' (p_holm ≥ α), 'worse', 'too few splits' (fewer pairs than ``needed``: with that many
    models no difference could reach α), or 'no score'. ``cells``: rows of the ``expected_cells`` view.
    """
    cols = [*TASK, "model", "verdict", "best", "n_pairs", "needed", "p", "p_holm"]
    rows = []
    if cells.empty:
        return pd.DataFrame(columns=cols)
    for task, g in cells.groupby(TASK, sort=True):
        m = g[g.status == Status.OK].groupby("model").score.mean().dropna()
        models = sorted(g.model.unique())
        if m.empty:
            rows += [{**dict(zip(TASK, task)), "model": x, "verdict": "no score", "best": None, "n_pairs": 0,
                      "needed": None, "p": np.nan, "p_holm": np.nan} for x in models]
            continue
        top = m.max()
        bests = sorted(m.index[m >= top - 1e-12])
        best = bests[0]
        needed = needed_splits(len(m) - len(bests))
        tested, pvals, wide = [], [], by_split(g)
        # :func:`paired` on arrays: the best's column against each model's, on the splits both finished
        scores = {c: wide[c].to_numpy(dtype=float) for c in wide.columns}
        none = np.full(len(wide), np.nan)
        top_scores = scores.get(best, none)
        for x in models:
            row = {**dict(zip(TASK, task)), "model": x, "best": ", ".join(bests), "needed": needed, "p": np.nan,
                   "p_holm": np.nan}
            both = ~np.isnan(top_scores) & ~np.isnan(scores.get(x, none))
            if x in bests:
                rows.append({**row, "verdict": "best", "n_pairs": int(both.sum())})
                continue
            if x not in m.index:
                rows.append({**row, "verdict": "no score", "n_pairs": 0})
                continue
            row["n_pairs"] = int(both.sum())
            if row["n_pairs"] < needed:
                rows.append({**row, "verdict": "too few splits"})
                continue
            row["p"] = wilcoxon_p(top_scores[both] - scores.get(x, none)[both])
            tested.append(len(rows))
            pvals.append(row["p"])
            rows.append(row)
        for i, q in zip(tested, holm(pvals)):
            rows[i]["p_holm"] = q
            rows[i]["verdict"] = "not worse" if q >= ALPHA else "worse"
    return pd.DataFrame(rows, columns=cols)


def paired_verdict(cells: pd.DataFrame, a: str, b: str) -> str:
    """``a`` against ``b`` on one task, in words: significant, within noise, or too few splits."""
    pair = paired(cells, a, b)
    if len(pair) < MIN_SPLITS:
        return f"too few splits to test ({len(pair)}; a Wilcoxon test needs {MIN_SPLITS})"
    p = wilcoxon_p((pair[a] - pair[b]).to_numpy())
    word = "significant" if p < ALPHA else "within noise"
    return f"{word} (Wilcoxon p = {p:.2g}, {len(pair)} splits)"
