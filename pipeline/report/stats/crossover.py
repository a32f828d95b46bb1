"""Learning curves against boosting: where a challenger overtakes the best boosting model for good
(the crossover size, with what its verdict rests on), and each curve point's confidence interval.
Pure pandas/numpy/scipy on the ``learning_curves`` view."""

from __future__ import annotations

import warnings
import zlib
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.records import Status
from pipeline.report.stats import pick
from pipeline.report.stats.standing import MARGIN

CROSSOVER_COLUMNS = ["dataset", "split_key", "model", "verdict", "crossover_n", "behind_at", "before", "n_sizes",
                     "ahead_everywhere", "at_size", "at_n", "challenger_at", "incumbent_at", "n_splits", "bound"]
LEVEL = MARGIN  # mean scores this close are level, neither ahead nor behind (the standings' margin)


def crossover(curves: pd.DataFrame, challengers: list[str], incumbents: list[str],
              best_label: str = "best attention") -> pd.DataFrame:
    """Per dataset and challenger: the training size from which it beats the best incumbent for good.

    ``curves`` has the columns of the ``learning_curves`` view. At each size the best incumbent is the
    incumbent (boosting) model with the highest mean validation score (:mod:`pipeline.report.stats.pick`), and
    its mean test score is compared. ``verdict``:

    - ``one size``: the two were compared at one size only: no crossover can be told (none is given);
    - ``never``: the challenger is behind at the largest size compared (``behind_at``);
    - ``level``: the two are level (means within ``LEVEL``) at the largest size: neither ahead nor behind;
    - ``crossover``: ahead at ``crossover_n`` and at every larger size, not ahead at the size just
      before (``behind_at``; ``before`` says whether it was behind or level there);
    - ``ahead``: ahead at every size compared (``crossover_n`` is the smallest).

    A row ``best_label`` compares the best challenger at each size (when several are named, on every dataset
    where any of them has a score: a family's row, whichever of its models ran there).
    ``at_size`` is the size the verdict rests on (the crossover's; else the largest compared), with
    the two models compared there (``challenger_at``, ``incumbent_at``) and ``n_splits``, the fewest
    finished splits of the two there: what a paired test checks. ``bound``: a "never" whose challenger was
    still improving at that size when its epochs, rounds or time ran out (``n_epochs_bound``): behind,
    but not converged.
    """
    rows = []
    if curves.empty or not challengers or not incumbents:
        return pd.DataFrame(columns=CROSSOVER_COLUMNS)
    for (dataset, split_key), g in curves.groupby(["dataset", "split_key"], sort=True):
        wide = g.pivot_table(index="sample_size", columns="model", values="score_mean", aggfunc="mean")
        val = g.pivot_table(index="sample_size", columns="model", values="val_mean", aggfunc="mean")
        n_ok = g.pivot_table(index="sample_size", columns="model", values="n_ok", aggfunc="sum")
        n_bound = (g.pivot_table(index="sample_size", columns="model", values="n_epochs_bound", aggfunc="sum")
                   if "n_epochs_bound" in g else None)
        n = g.groupby("sample_size").n_train.mean()
        n = n[n.index.isin(wide.index)]  # a size planned but not run yet (a study in chunks) has no score
        wide = wide.loc[n.sort_values().index]
        val = val.reindex_like(wide)
        inc_cols = [m for m in incumbents if m in wide]
        inc_name, inc = pick.by_validation(wide, val, inc_cols)
        chal = {m: (pd.Series(m, index=wide.index, dtype=object), wide[m]) for m in challengers if m in wide}
        chal_cols = [c for c in challengers if c in wide]
        if len(challengers) > 1 and chal:  # also where one of them has scores here: the family's row
            chal[best_label] = pick.by_validation(wide, val, chal_cols)
        if inc.isna().all():
            continue
        for m, (names, s) in chal.items():
            both = s.notna() & inc.notna()
            diff = (s - inc)[both]
            sizes = n[diff.index]
            if diff.empty:
                continue
            ahead = (diff > LEVEL).to_numpy()
            level = (diff.abs() <= LEVEL).to_numpy()
            cross: float | None = None
            behind: float | None = None
            before: str | None = None
            if len(diff) < 2:
                verdict, at = "one size", diff.index[-1]
            elif level[-1]:
                verdict, at = "level", diff.index[-1]
            elif not ahead[-1]:
                verdict, at = "never", diff.index[-1]
                behind = float(sizes.iloc[-1])
            else:
                first = len(ahead) - int(np.argmin(ahead[::-1])) if not ahead.all() else 0
                verdict = "ahead" if first == 0 else "crossover"
                cross = float(sizes.iloc[first])
                if first > 0:
                    behind = float(sizes.iloc[first - 1])
                    before = "level" if level[first - 1] else "behind"
                at = diff.index[first]
            who, against = names.loc[at], inc_name.loc[at]
            splits = min(n_ok.loc[at].get(who, 0), n_ok.loc[at].get(against, 0))
            bound = bool(verdict == "never" and n_bound is not None and n_bound.loc[at].get(who, 0) > 0)
            rows.append({"dataset": dataset, "split_key": split_key, "model": m, "verdict": verdict,
                         "crossover_n": cross, "behind_at": behind, "before": before, "n_sizes": len(diff),
                         "ahead_everywhere": verdict == "ahead", "at_size": at, "at_n": float(sizes[at]),
                         "challenger_at": who, "incumbent_at": against, "n_splits": int(splits), "bound": bound})
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
    best is picked by its validation means there, and the crossover size is found
    as :func:`crossover` finds it, on the sizes both sides were compared at (``largest_n``: the largest of
    them). ``cross_low``/``cross_high`` are the 2.5 and 97.5 percentiles of that size, ``inf`` where a
    resample finds the challenger not ahead at the largest size (never; level within ``LEVEL`` there too);
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
