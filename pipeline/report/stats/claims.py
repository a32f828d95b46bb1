"""The design notes' claims, tested on whatever a results file holds: a verdict with its evidence.

Each claim gets an effect with a 95% interval, the number of comparisons behind it and the cells they
come from; the verdict is *supported* when the interval lies on the claim's side, *contradicted* when
it lies on the other side, and *not enough data* when there are too few comparisons or the interval
straddles no effect. Ablations are found from the selected configurations: two cells of the same
model on the same split whose configurations differ in one switch only form a pair. The switches are
the models' own (:class:`pipeline.models.registry.Switch`, declared in their INFO's ``ablations``):
``se`` (squeeze-and-excitation), ``cross`` (cross- rather than self-attention) and ``warmup``; this
module names no model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.models.kinds import ATTENTION, BOOSTING
from pipeline.models.registry import switches, with_switch
from pipeline.records import Status
from pipeline.report.stats import pick, standing
from pipeline.report.stats.aggregate import SPLIT, wilson
from pipeline.report.stats.verdicts import MARGIN, Tally, Verdict

REFERENCE_ROWS = 10_000  # below this many training rows tree ensembles are often reported to win
MIN_PAIRS = 3  # fewer comparisons than this: not enough data, whatever the interval says
SUPPORTED, CONTRADICTED, THIN = "supported", "contradicted", "not enough data"


@dataclass
class Claim:
    key: str
    statement: str
    measure: str  # what the effect is
    share: bool = False  # the effect is a share (shown as a percentage; no effect = 50%)
    verdict: str = THIN
    effect: float = float("nan")
    low: float = float("nan")
    high: float = float("nan")
    n: int = 0
    coverage: str = ""
    why: str = ""  # one sentence on the verdict
    cells: list[str] = field(default_factory=list)
    above: Claim | None = None  # claim 1's second half (at or above REFERENCE_ROWS), with its own verdict


def decide(low: float, high: float, n: int, *, null: float = 0.0, min_n: int = MIN_PAIRS) -> str:
    """Supported when the interval lies above ``null``, contradicted when below, else not enough data."""
    if n < min_n or not np.isfinite(low) or not np.isfinite(high):
        return THIN
    if low > null:
        return SUPPORTED
    if high < null:
        return CONTRADICTED
    return THIN


def mean_interval(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t interval; NaN bounds for fewer than two values."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - half, m + half


# ------------------------------------------------------------------------------------------ pairs
def _config(v: Any) -> dict[str, Any]:
    if isinstance(v, dict):
        return v
    try:
        return json.loads(v) if isinstance(v, str) else {}
    except ValueError:
        return {}


def switch_state(switch: str) -> Callable[[str, dict[str, Any]], bool | None]:
    """Whether a cell's configuration has the switch on (True) or off (False), from its model's
    declaration; None where its model has no such switch, or has it only with other switches on
    (``needs``) and one of them is off."""
    def state(model_name: str, config: dict[str, Any]) -> bool | None:
        declared = switches(model_name)
        if switch not in declared or not all(declared[n].on(config) for n in declared[switch].needs):
            return None
        return declared[switch].on(config)

    return state


def ablation_pairs(cells: pd.DataFrame, switch: str) -> pd.DataFrame:
    """Cells of one model on one split, with the switch on and off (:func:`switch_state`). One row per
    pair: the on and off scores, fit seconds, peak memory and cell ids; several 'on' or 'off' entries on a
    split are averaged."""
    cols = ["on_score", "off_score", "on_seconds", "off_seconds", "on_mb", "off_mb", "cells", "model_name", "dataset"]
    ok = cells[cells.status == Status.OK].copy()
    if ok.empty:
        return pd.DataFrame(columns=cols)
    state = switch_state(switch)
    ok["on"] = [state(m, _config(c)) for m, c in zip(ok.model_name, ok.best_config)]
    ok = ok[ok.on.notna()].astype({"on": bool})
    # Each side of each (split, model) at once, in one grouping: a group at a time took seconds on a study.
    keys = [*SPLIT, "model_name"]
    on, off = (ok[ok.on == side].groupby(keys, sort=True, dropna=False).agg(
        score=("score", "mean"), seconds=("fit_seconds", "mean"), mb=("peak_cpu_mb", "mean"), cells=("cell_id", list))
        for side in (True, False))
    both = on.merge(off, how="inner", left_index=True, right_index=True, suffixes=("_on", "_off"))
    if both.empty:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame({
        "on_score": both.score_on.to_numpy(), "off_score": both.score_off.to_numpy(),
        "on_seconds": both.seconds_on.to_numpy(), "off_seconds": both.seconds_off.to_numpy(),
        "on_mb": both.mb_on.to_numpy(), "off_mb": both.mb_off.to_numpy(),
        "cells": [a + b for a, b in zip(both.cells_on, both.cells_off)],
        "model_name": both.index.get_level_values("model_name"), "dataset": both.index.get_level_values("dataset")},
        columns=cols)


def _paired_claim(claim: Claim, pairs: pd.DataFrame, diff: pd.Series, what: str) -> Claim:
    """The effect over datasets: each dataset's paired differences averaged (its folds, sizes and models share
    its rows, so they are one unit, never several), then the mean over datasets and its 95% t-interval (the
    datasets are independent). ``claim.n`` counts datasets."""
    per = diff.groupby(pairs.dataset.to_numpy()).mean() if len(diff) else diff
    m, lo, hi = mean_interval(per.to_numpy())
    claim.effect, claim.low, claim.high, claim.n = m, lo, hi, len(per)
    claim.verdict = decide(lo, hi, len(per))
    claim.cells = [c for cs in pairs.cells for c in cs]
    claim.coverage = (f"{len(diff)} paired cells on {len(per)} dataset{'s' if len(per) != 1 else ''} "
                      f"({', '.join(sorted(set(pairs.model_name)))}), averaged per dataset" if len(diff)
                      else "no pair of cells with the switch on and off")
    claim.why = _why(claim, f"datasets with {what}")
    return claim


def _why(c: Claim, what: str, fix: str = "add the ablation as a second, labelled entry of the model") -> str:
    if c.n == 0:
        return f"No {what} in these results: {fix}."
    if c.n < MIN_PAIRS:
        return f"Only {c.n} {what}: too few to decide."
    if c.verdict == THIN:
        return f"The 95% interval [{c.low:+.3f}, {c.high:+.3f}] includes no effect."
    return f"The 95% interval [{c.low:+.3f}, {c.high:+.3f}] lies {'above' if c.verdict == SUPPORTED else 'below'} zero."


# ----------------------------------------------------------------------------------------- claims
def claim_sample_size(standings: pd.DataFrame) -> Claim:
    """Claim 1, in two halves with a verdict each, from the verdicts of the ``standings`` view (each side's
    best picked by validation score on each (dataset, size), :mod:`pipeline.report.stats.pick`; its verdict
    the corrected interval's over splits, :mod:`pipeline.report.stats.verdicts`). Below REFERENCE_ROWS: of the
    (dataset, size) points whose verdict is decided (the best boosting model ahead of the best attention
    model, behind it, or equivalent within ±``MARGIN``), the share boosting was ahead on, an equivalent one
    counting half (supported above 50%); undetermined points (the folds cannot tell) and not converged ones
    (the one behind still improving when its epochs, rounds or time ran out) count neither way, and the half
    says how many it left out. At or above, per dataset (:mod:`pipeline.report.stats.standing`): at each
    dataset's largest size at or above REFERENCE_ROWS, the verdict of the best attention model; the effect
    is the mean over datasets with a difference (not converged ones left out) of (best attention − best
    boosting) with its 95% interval over datasets. Attention caught up (supported) when that interval lies
    above −``MARGIN``, did not (contradicted) when it lies below, not enough data otherwise. The claim is
    supported when both halves are, contradicted when either is, and not enough data otherwise; its
    ``above`` holds the second half."""
    c = Claim("sample_size", f"Gradient boosting wins below about {REFERENCE_ROWS:,} training rows; attention models "
              "catch up above.", f"below {REFERENCE_ROWS:,} training rows, of the (dataset, size) points whose verdict "
              "is decided, the share where the best boosting model is ahead of the best attention model (equivalent "
              f"within ±{MARGIN}: ½; undetermined points left out; 50% = an even match)", share=True)
    up = Claim("sample_size_above", f"At or above {REFERENCE_ROWS:,} training rows attention models catch up.",
               f"mean over datasets of (best attention − best boosting) score at each dataset's largest size at or "
               f"above {REFERENCE_ROWS:,} rows; equivalent within ±{MARGIN}")
    c.above = up
    rows = standing.best_rows(standings, ATTENTION, BOOSTING)
    if rows.empty:
        c.coverage, c.why = "needs an attention and a boosting model", "No comparison in these results."
        up.coverage, up.why = c.coverage, c.why
        return c
    below = rows[rows.n_train < REFERENCE_ROWS]
    t = Tally.of(Verdict(v).reversed() for v in below.verdict)  # boosting's verdicts against attention
    won, tied, lost = t[Verdict.AHEAD], t[Verdict.EQUIVALENT], t[Verdict.BEHIND]
    n = won + tied + lost
    wins = won + 0.5 * tied  # an equivalent point is half a win in the rate, never a win in words
    low, high = wilson(wins, n)
    c.effect, c.low, c.high, c.n = (wins / n if n else float("nan")), low, high, n
    c.coverage = (f"{n} decided points of {t.n} on {below.dataset.nunique()} datasets"
                  + (f", {below.n_train.min():,.0f}-{below.n_train.max():,.0f} rows" if len(below) else ""))
    left = [f"{t[v]} {v}" for v in (Verdict.UNDETERMINED, Verdict.NOT_CONVERGED) if t[v]]
    if left:
        c.coverage += f"; {', '.join(left)}, left out"
    if t.n == 0:
        c.why = f"No dataset was run below {REFERENCE_ROWS:,} training rows with both kinds of model."
    else:
        c.why = f"Below {REFERENCE_ROWS:,} rows boosting was {t.text('points')}."
        if n >= MIN_PAIRS:
            c.why += (f" Counting an equivalent point as half a win, boosting won {c.effect:.0%} of the {n} points "
                      f"decided (95% interval {low:.0%}-{high:.0%})")
        else:
            c.why += f" Only {n} were decided"
    c.verdict = decide(c.low, c.high, c.n, null=0.5)
    if c.n >= MIN_PAIRS:
        c.why += {SUPPORTED: ": above an even match, supported.", CONTRADICTED: ": below an even match, contradicted.",
                  THIN: ": an even match (50%) is inside the interval, so the data cannot tell."}[c.verdict]
    elif n:
        c.why += "."
    said = pick.small_validation(below.n_valid, "points")
    if said:
        c.why += f" Each side's best was {said}."
    _caught_up(up, standings)
    halves = (c.verdict, up.verdict)
    verdict = CONTRADICTED if CONTRADICTED in halves else SUPPORTED if halves == (SUPPORTED, SUPPORTED) else THIN
    c.why = f"{c.why} {up.why}"
    c.coverage = f"below {REFERENCE_ROWS:,} rows: {c.coverage}; at or above: {up.coverage}"
    c.measure = f"{c.measure}; at or above, the {up.measure}"
    c.verdict = verdict
    return c


def _caught_up(up: Claim, standings: pd.DataFrame) -> None:
    """Claim 1's second half from the per-dataset standings at or above REFERENCE_ROWS: effect, interval,
    verdict, coverage and why."""
    table = standing.standings(standings, ATTENTION, at_least=REFERENCE_ROWS)
    o = standing.overall(table)
    n = o["compared"]
    up.effect, up.low, up.high, up.n = o["mean"], o["low"], o["high"], n
    rows = table.at_n[table.standing.isin(standing.COMPARED)] if len(table) else table.at_n
    span = f", {rows.min():,.0f}-{rows.max():,.0f} rows" if n else ""
    up.coverage = f"{n} datasets{span}"
    left = [f"{o[k]} {w}" for k, w in (("not_converged", Verdict.NOT_CONVERGED), ("not_compared", "without a fold in common"))
            if o[k]]
    if left:
        up.coverage += f"; {', '.join(left)}, left out"
    counts = f"attention was {o['tally'].text()}"
    # Caught up: on average no further behind than the margin, with confidence; not: further behind.
    up.verdict = decide(up.low, up.high, n, null=-MARGIN)
    if not len(table):
        up.why = f"No dataset was run at or above {REFERENCE_ROWS:,} training rows with both kinds of model."
    elif n < MIN_PAIRS:
        up.why = f"At or above {REFERENCE_ROWS:,} rows {counts}: too few datasets."
    else:
        left_out = " (those not converged left out)" if o["not_converged"] else ""
        up.why = (f"At or above {REFERENCE_ROWS:,} rows {counts}. The mean difference over the {n} datasets compared"
                  f"{left_out} is {up.effect:+.3f} (95% interval {up.low:+.3f} to {up.high:+.3f})")
        up.why += {SUPPORTED: f": no further behind than the −{MARGIN} margin, so attention caught up.",
                   CONTRADICTED: f": further behind than the −{MARGIN} margin, so boosting still leads there.",
                   THIN: f": it holds shortfalls both within and beyond the −{MARGIN} margin, so whether attention "
                         "caught up is undetermined."}[up.verdict]
    said = pick.small_validation(table.n_valid)
    if said:
        up.why += f" Each side's best was {said}."


def claim_cross_cost(cells: pd.DataFrame) -> Claim:
    c = Claim("cross_cost", "Cross-attention between categorical and numeric tokens costs less time and memory than "
              "self-attention over all tokens (O(k·n) against O((k+n)²)).",
              "mean over datasets of log(self-attention time ÷ cross-attention time), paired cells averaged per dataset "
              "(> 0: cross is cheaper)")
    pairs = ablation_pairs(cells, "cross")
    ratio = np.log(pairs.off_seconds.astype(float) / pairs.on_seconds.astype(float))
    models = ", ".join(with_switch("cross")) or "any model"
    return _paired_claim(c, pairs, ratio, f"paired cells of {models} with attention: cross and self")


def claim_se(cells: pd.DataFrame) -> Claim:
    c = Claim("se", "Squeeze-and-excitation improves accuracy (the cross-attention model, the CBAM CNN).",
              "mean over datasets of the test-score gain of SE on over SE off, paired cells averaged per dataset")
    pairs = ablation_pairs(cells, "se")
    return _paired_claim(c, pairs, pairs.on_score - pairs.off_score, "paired cells with SE on and off")


def claim_warmup(cells: pd.DataFrame) -> Claim:
    c = Claim("warmup", "Warmup is critical for training transformers on tabular data.",
              "mean over datasets of the test-score gain of the default warmup over warmup_frac 0, paired cells "
              "averaged per dataset")
    pairs = ablation_pairs(cells, "warmup")
    return _paired_claim(c, pairs, pairs.on_score - pairs.off_score, "paired cells with and without warmup")


def claim_attention_maps(attention: pd.DataFrame, cells: pd.DataFrame, datasets: pd.DataFrame,
                         learned: float = 0.8) -> Claim:
    """On synthetic interaction tasks, a model that learned the task (test accuracy ≥ ``learned``): the
    attention its features give the informative ones, as a multiple of uniform."""
    c = Claim("attention_maps", "Attention maps show which features interact.",
              "mean over synthetic interaction tasks of the log2 of the attention each informative feature gives "
              "its informative partner, as a multiple of uniform, in maps of models that learned the task (averaged "
              "per task; > 0: they look at the right pair)")
    synth = datasets[datasets.source.astype(str).str.startswith("synthetic:")
                     & ~datasets.source.astype(str).str.startswith("synthetic:additive")]
    if synth.empty or attention.empty:
        c.coverage, c.why = "no synthetic interaction task with attention maps", (
            "No synthetic interaction task in these results (a suite entry 'synthetic: interaction').")
        return c
    ok = cells[(cells.status == Status.OK)].set_index("cell_id")
    values, used, where, skipped = [], [], [], 0
    for r in attention[attention.dataset.isin(synth.dataset)].itertuples(index=False):
        feats = json.loads(r.features) if isinstance(r.features, str) else list(r.features)
        mat = np.asarray(json.loads(r.map) if isinstance(r.map, str) else r.map, dtype=float)
        signal = [i for i, f in enumerate(feats) if str(f).startswith("signal_")]
        if len(signal) < 2 or mat.shape != (len(feats), len(feats)) or r.cell_id not in ok.index:
            continue
        if ok.loc[r.cell_id, "score"] < learned:
            skipped += 1
            continue
        focus = partner_focus(mat, signal)
        if focus is None:
            continue
        values.append(focus)
        used.append(r.cell_id)
        where.append(r.dataset)
    # The maps of one task (its folds, sizes, models) are one unit: averaged per task, the mean over tasks.
    per = pd.Series(values, dtype=float).groupby(np.asarray(where, dtype=object)).mean() if values else pd.Series(dtype=float)
    m, lo, hi = mean_interval(per.to_numpy())
    c.effect, c.low, c.high, c.n, c.cells = m, lo, hi, len(per), used
    c.verdict = decide(lo, hi, len(per))
    c.coverage = (f"{len(values)} maps on {len(per)} task{'s' if len(per) != 1 else ''} of models that learned the "
                  f"task, averaged per task; {skipped} more did not learn it (accuracy < {learned})")
    c.why = _why(c, "synthetic interaction tasks with maps of models that learned them",
                 f"none of its attention models reached accuracy {learned} on one" if skipped else
                 "an attention model run on a synthetic interaction task gives them")
    return c


def partner_focus(mat: np.ndarray, signal: list[int]) -> float | None:
    """log2 of the attention each informative feature gives its informative partner(s), as a multiple
    of what uniform attention over the keys it attends to would give, averaged over the informative
    rows that attend at all (a cross-attention map's numeric rows are empty; its keys are the numeric
    columns). None when no informative row attends to an informative partner."""
    out = []
    for r in signal:
        row = np.asarray(mat[r], dtype=float)
        total = row.sum()
        keys = np.flatnonzero(row > 0)
        partners = [c for c in signal if c != r and c in set(keys)]
        if total <= 0 or not partners:
            continue
        share = row[partners].sum() / total
        out.append(np.log2(max(share, 1e-12) / (len(partners) / len(keys))))
    return float(np.mean(out)) if out else None


def verdicts(standings: pd.DataFrame, cells: pd.DataFrame, attention: pd.DataFrame, datasets: pd.DataFrame
             ) -> list[Claim]:
    """The five claims in the design notes' order. ``standings``: the ``standings`` view (claim 1's verdicts);
    ``cells``: the cells with score, status, split keys, model_name, best_config, fit_seconds, peak_cpu_mb and
    cell_id; ``attention`` with cell_id."""
    return [claim_sample_size(standings), *tested_on_cells(cells, attention, datasets)]


def tested_on_cells(cells: pd.DataFrame, attention: pd.DataFrame, datasets: pd.DataFrame) -> list[Claim]:
    """Claims 2-5, those :func:`verdicts` decides from cells and attention maps (claim 1: from the standings)."""
    return [claim_cross_cost(cells), claim_se(cells), claim_warmup(cells), claim_attention_maps(attention, cells, datasets)]


def effect_text(c: Claim) -> str:
    if c.above is not None:
        return f"below: {_effect(c)}; at or above: {_effect(c.above)}"
    return _effect(c)


def _effect(c: Claim) -> str:
    if not c.n:
        return "—"
    if c.share:
        return f"{c.effect:.0%} [{c.low:.0%}, {c.high:.0%}]"
    if np.isnan(c.low) or np.isnan(c.high):  # one comparison: an effect, and no interval to give
        return f"{c.effect:+.3f} (no interval from {c.n})"
    return f"{c.effect:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"
