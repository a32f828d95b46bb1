"""Learning curves against boosting: where a challenger overtakes the best boosting model for good
(the crossover size, with the verdict it rests on), and each curve point's confidence interval.

The crossover reads the verdicts of the ``standings`` view, size by size (:mod:`pipeline.report.stats.verdicts`:
ahead or behind only where the corrected interval over splits excludes zero), so that the crossover table,
the per-dataset standings and the overview say one verdict for a pair on a (dataset, size). Its interval
(:func:`crossover_intervals`) resamples folds and finds the crossover of the mean curves again on each
resample. Pure pandas/numpy/scipy."""

from __future__ import annotations

import warnings
import zlib
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.models.kinds import BOOSTING
from pipeline.records import Status, Verdict
from pipeline.report.stats import pick
from pipeline.report.stats.verdicts import MARGIN, from_row, versus

CROSSOVER_COLUMNS = ["dataset", "split_key", "model", "verdict", "crossover_n", "behind_at", "before", "n_sizes",
                     "ahead_everywhere", "at_size", "at_n", "challenger_at", "incumbent_at", "n_splits", "bound",
                     "decision", "n_valid"]
LEVEL = MARGIN  # the bootstrap's mean curves: ahead by more than this (the verdicts' margin)
# The crossover's own words, beside the verdicts at the largest size (equivalent, undetermined, not converged)
ONE_SIZE, NEVER, CROSSOVER, AHEAD_EVERYWHERE = "one size", "never", "crossover", "ahead"


def model_lines(rows: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """The ``standings`` view's rows of each of ``models`` against the best boosting model, each a line
    (``line``: the model's name)."""
    if rows.empty:
        return rows.assign(line=pd.Series(dtype=object))
    here = rows[rows.model.isin(models) & (rows.versus == versus(BOOSTING))]
    return here.assign(line=here.model)


def family_line(rows: pd.DataFrame, family: str, label: str) -> pd.DataFrame:
    """The rows of ``family``'s best model at each size (picked by validation there) against the best
    boosting model: one line, ``label``."""
    if rows.empty:
        return rows.assign(line=pd.Series(dtype=object))
    here = rows[(rows.family == family) & rows.family_best & (rows.versus == versus(BOOSTING))]
    return here.assign(line=label)


def crossover(lines: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and line (:func:`model_lines`, :func:`family_line`): the training size from which it is
    ahead of the best boosting model for good, from the verdict at each size (sizes with no split in common
    left out). ``verdict``:

    - ``one size``: compared at one size only: no crossover can be told (none is given);
    - ``never``: behind at the largest size compared (``behind_at``);
    - ``not converged``: ahead or behind there, but the one behind was still improving (``bound``);
    - ``equivalent`` / ``undetermined``: the verdict at the largest size, neither ahead nor behind;
    - ``crossover``: ahead at ``crossover_n`` and at every larger size, not ahead at the size just before
      (``behind_at``; ``before`` the verdict there);
    - ``ahead``: ahead at every size compared (``crossover_n`` is the smallest).

    ``at_size`` is the size the verdict rests on (the crossover's; else the largest compared), with the two
    models compared there (``challenger_at``, ``incumbent_at``), ``n_splits`` and ``decision`` (the
    :class:`pipeline.report.stats.verdicts.Decision` there) and ``n_valid``, the validation rows the picks
    were made on there."""
    rows = []
    if lines.empty:
        return pd.DataFrame(columns=CROSSOVER_COLUMNS)
    lines = lines[lines.verdict != Verdict.NOT_COMPARED]
    for (dataset, split_key, line), g in lines.groupby(["dataset", "split_key", "line"], sort=True):
        g = g.sort_values("n_train", kind="stable")
        said = [Verdict(v) for v in g.verdict]
        n = g.n_train.to_numpy(dtype=float)
        cross: float | None = None
        behind: float | None = None
        before: str | None = None
        at = len(g) - 1
        last = said[-1]
        if len(g) < 2:
            verdict = ONE_SIZE
        elif last is Verdict.AHEAD:
            ahead = [v is Verdict.AHEAD for v in said]
            first = len(ahead) - ahead[::-1].index(False) if not all(ahead) else 0
            verdict = AHEAD_EVERYWHERE if first == 0 else CROSSOVER
            cross, at = float(n[first]), first
            if first > 0:
                behind, before = float(n[first - 1]), str(said[first - 1])
        elif last is Verdict.BEHIND:
            verdict, behind = NEVER, float(n[-1])
        else:  # equivalent, undetermined or not converged at the largest size: its own word
            verdict = str(last)
            if last is Verdict.NOT_CONVERGED and float(g["diff"].iloc[-1]) < 0:
                behind = float(n[-1])
        r = g.iloc[at]
        d = from_row(r)
        rows.append({"dataset": dataset, "split_key": split_key, "model": line, "verdict": verdict,
                     "crossover_n": cross, "behind_at": behind, "before": before, "n_sizes": len(g),
                     "ahead_everywhere": verdict == AHEAD_EVERYWHERE, "at_size": r.sample_size,
                     "at_n": float(r.n_train), "challenger_at": r.model, "incumbent_at": r.versus_model,
                     "n_splits": d.n_splits, "bound": d.verdict is Verdict.NOT_CONVERGED, "decision": d,
                     "n_valid": float(r.n_valid) if pd.notna(r.n_valid) else float("nan")})
    return pd.DataFrame(rows, columns=CROSSOVER_COLUMNS)


def curve_intervals(curves: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """``curves`` (the ``learning_curves`` view) with ``score_low``/``score_high``: a Student-t
    confidence interval for the mean over the folds and subset seeds of one dataset and size, clipped
    to the score's range; NaN where fewer than two splits finished (one split has no interval)."""
    out = curves.copy()
    n = out.n_ok.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = stats.t.ppf(0.5 + level / 2, n - 1) * out.score_std / np.sqrt(n)
    half = half.where(n >= 2)
    # Clipped to what the score can be: accuracy within [0, 1], R² at most 1.
    floor = np.where(out.get("metric", pd.Series("accuracy", index=out.index)) == "r2", -np.inf, 0.0)
    out["score_low"] = np.maximum(out.score_mean - half, floor)
    out["score_high"] = np.minimum(out.score_mean + half, 1.0)
    return out


INTERVAL_COLUMNS = ["dataset", "split_key", "model", "n_folds", "cross_low", "cross_high", "p_never", "largest_n", "n_boot"]
N_BOOT = 500


def crossover_intervals(cells: pd.DataFrame, challengers: dict[str, list[str]], incumbents: list[str],
                        n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """A bootstrap interval over folds for each crossover: per dataset and challenger (``challengers``:
    the row's name → the models whose best at each size it is; one model, or several for a "best" row),
    the folds (``repeat``, ``fold``; a fold's subset seeds stay together) are resampled with replacement
    ``n_boot`` times, the curves (test and validation) are averaged over the resampled folds, each side's
    best is picked by its validation means there, and the crossover size is found on the mean curves, on
    the sizes both sides were compared at (``largest_n``: the largest of them): the first size of the last
    run of sizes where the challenger's mean is ahead by more than ``LEVEL``. ``cross_low``/``cross_high``
    are the 2.5 and 97.5 percentiles of that size, ``inf`` where a resample finds the challenger not ahead
    at the largest size (never up to there).
    ``p_never`` the share of such resamples. A resample that drew only folds where one side has no score
    at a compared size (a failed cell) says nothing about that size: it is drawn again, and ``n_boot``
    counts the resamples kept. Fewer than two folds: no interval (NaN), as one fold cannot say how the
    answer moves with the data. Each row draws from a generator of its own (seeded by ``seed`` and its
    dataset, split and model), so that adding a dataset moves no other dataset's interval.

    ``cells`` has the columns of ReportData.cells (one row per cell: status, score, n_train)."""
    rows = []
    for (dataset, split_key), (folds, n_rows, models, grid, vgrid) in fold_grids(cells):
        inc = [models.index(m) for m in incumbents if m in models]
        if not inc:
            continue
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a size a resample has no fold of: NaN
            full, vfull = np.nanmean(grid, axis=0), np.nanmean(vgrid, axis=0)  # size × model: the curves
            best_inc_full = pick.score_by_validation(full[:, inc], vfull[:, inc])
            for name, members in challengers.items():
                idx = [models.index(m) for m in members if m in models]
                if not idx:
                    continue
                chal_full = pick.score_by_validation(full[:, idx], vfull[:, idx])
                compared = ~np.isnan(chal_full) & ~np.isnan(best_inc_full)  # the sizes crossover() compares
                if compared.sum() < 2:
                    continue
                n_folds = len(folds)
                if n_folds < 2:
                    rows.append({"dataset": dataset, "split_key": split_key, "model": name, "n_folds": n_folds,
                                 "cross_low": np.nan, "cross_high": np.nan, "p_never": np.nan,
                                 "largest_n": float(n_rows[compared][-1]), "n_boot": 0})
                    continue
                rng = np.random.default_rng([seed, zlib.crc32(f"{dataset}|{split_key}|{name}".encode())])
                diff = _resampled(grid, vgrid, rng, n_boot, idx, inc)[:, compared]  # kept resamples × compared sizes
                ahead = diff > LEVEL
                sizes_c = n_rows[compared]
                # The crossover: the first size of the final run of sizes where the challenger is ahead.
                last_not_ahead = np.where(~ahead, np.arange(ahead.shape[1]), -1).max(axis=1)
                cross = np.where(ahead[:, -1], sizes_c[np.clip(last_not_ahead + 1, 0, len(sizes_c) - 1)], np.inf)
                low, high = (np.percentile(cross, [2.5, 97.5], method="inverted_cdf") if len(cross)
                             else (np.nan, np.nan))
                rows.append({"dataset": dataset, "split_key": split_key, "model": name, "n_folds": n_folds,
                             "cross_low": float(low), "cross_high": float(high),
                             "p_never": float(np.isinf(cross).mean()) if len(cross) else np.nan,
                             "largest_n": float(sizes_c[-1]), "n_boot": len(cross)})
    return pd.DataFrame(rows, columns=INTERVAL_COLUMNS)


Grids = tuple[list[Any], np.ndarray, list[str], np.ndarray, np.ndarray]


def fold_grids(cells: pd.DataFrame) -> list[tuple[tuple[str, str], Grids]]:
    """Per (dataset, split_key) of the finished cells: its folds ((repeat, fold) pairs), the training rows
    of its sizes in ascending order, its models, and the fold × size × model grids of test scores and of
    validation scores (each the mean over a fold's subset seeds; NaN where a cell has no score)."""
    ok = cells[(cells.status == Status.OK.value) & cells.score.notna()]
    out = []
    for key, g in ok.groupby(["dataset", "split_key"], sort=True):
        order = g.groupby("sample_size").n_train.mean().sort_values()
        sizes, n_rows = list(order.index), order.to_numpy(dtype=float)
        folds = sorted(set(zip(g["repeat"], g["fold"])))
        fold_of = {f: i for i, f in enumerate(folds)}
        models = sorted(set(g.model))
        grid = np.full((len(folds), len(sizes), len(models)), np.nan)
        vgrid = grid.copy()
        means = g.groupby(["repeat", "fold", "sample_size", "model"])[["score", "val_score"]].mean().reset_index()
        at = ([fold_of[f] for f in zip(means["repeat"], means["fold"])],
              means.sample_size.map({s: i for i, s in enumerate(sizes)}).to_numpy(),
              means.model.map({m: i for i, m in enumerate(models)}).to_numpy())
        grid[at], vgrid[at] = means.score.to_numpy(dtype=float), means.val_score.to_numpy(dtype=float)
        out.append((key, (folds, n_rows, models, grid, vgrid)))
    return out


def _resampled(grid: np.ndarray, vgrid: np.ndarray, rng: np.random.Generator, n_boot: int, chal: list[int],
               inc: list[int]) -> np.ndarray:
    """Best challenger − best incumbent (each picked by the resample's validation means) per resample of
    the folds and per size (resamples × sizes), for
    ``n_boot`` resamples in which both sides have a score at every size where the full data has both; a
    resample that lacks one (it drew only folds where a cell failed) is drawn again, for up to ten rounds."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        full = np.nanmean(grid, axis=0)
        need = ~np.isnan(np.nanmax(full[:, chal], axis=-1)) & ~np.isnan(np.nanmax(full[:, inc], axis=-1))
        kept: list[np.ndarray] = []
        for _ in range(10):
            drawn = rng.integers(0, grid.shape[0], size=(n_boot, grid.shape[0]))
            boot, vboot = np.nanmean(grid[drawn], axis=1), np.nanmean(vgrid[drawn], axis=1)  # n_boot × size × model
            diff = (pick.score_by_validation(boot[..., chal], vboot[..., chal])
                    - pick.score_by_validation(boot[..., inc], vboot[..., inc]))
            kept.extend(diff[~np.isnan(diff[:, need]).any(axis=1)])
            if len(kept) >= n_boot:
                break
    return np.array(kept[:n_boot]).reshape(-1, grid.shape[1])


def interval_text(low: float, high: float, largest: float) -> str:
    """A crossover interval in words: sizes in rows, ``never up to N rows`` for an end that is never."""
    if np.isnan(low):
        return "one fold: no interval"

    def end(x: float) -> str:
        return f"never up to {largest:,.0f} rows" if np.isinf(x) else f"{x:,.0f}"

    if low == high:
        return f"[{end(low)}]"
    return f"[{end(low)}, {end(high)}]"


def ill_behaved(curves: pd.DataFrame) -> pd.DataFrame:
    """Learning curves that fall as the training set grows (LCDB 1.1 finds about 15% of curves ill-behaved):
    per dataset and model, the sizes where the mean score is below that of a smaller size with the two 95%
    intervals apart (``curve_intervals``; a size with one split has no interval and is never flagged).
    Columns: dataset, split_key, model, at_n (the larger size), from_n (the smaller), drop (mean difference)."""
    out = []
    cols = ["dataset", "split_key", "model", "at_n", "from_n", "drop"]
    if curves.empty or "score_low" not in curves:
        return pd.DataFrame(columns=cols)
    for (dataset, split_key, model), g in curves.groupby(["dataset", "split_key", "model"], sort=True):
        g = g.sort_values("n_train")
        lows, highs, means, ns = (g[c].to_numpy(dtype=float) for c in ("score_low", "score_high", "score_mean", "n_train"))
        for j in range(1, len(g)):
            earlier = [i for i in range(j) if lows[i] > highs[j]]  # a smaller size clearly above this one
            if earlier:
                i = max(earlier, key=lambda k: means[k])
                out.append({"dataset": dataset, "split_key": split_key, "model": model, "at_n": ns[j], "from_n": ns[i],
                            "drop": means[i] - means[j]})
    return pd.DataFrame(out, columns=cols)
