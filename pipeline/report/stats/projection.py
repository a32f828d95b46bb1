"""Projected crossovers beyond the largest size run (issue 36 item 3), and how far such projections can
be trusted on the same results.

A learning curve is fitted as the power law ``score(n) = a − b·n^(−c)`` (c > 0; LCDB's pow3), by least
squares on the mean score at each size, for ``c`` on a grid (``a`` and ``b`` are then linear). Where the
best attention model is behind the best boosting model at the largest size both ran (each side's best
picked by its validation score there, :mod:`pipeline.report.stats.pick`), the two models' fitted curves are
followed up to ``REACH`` × that size; the
projected crossover is the first n where attention's is above. Its interval comes from the folds,
resampled with replacement and fitted again, as the crossover's own interval does.

The check printed beside it: on every curve with at least four sizes, a fit on all but the largest size
predicts the largest; the error of that prediction, and whether the sign of the attention − boosting gap
there came out right, say how much such an extrapolation is worth on this study's own data.
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pandas as pd

from pipeline.report.stats import pick
from pipeline.report.stats.crossover import fold_grids
from pipeline.report.stats.standing import MARGIN

EXPONENTS = np.geomspace(0.02, 3.0, 64)  # the power law's c, searched on this grid
REACH = 10.0  # how far beyond the largest size a crossover is projected, as a multiple of it
MIN_SIZES = 3  # the fewest sizes a curve is fitted on (three: as many as the law's parameters; the
# held-out check, which needs one more, says what such fits are worth)
N_BOOT = 200
PROJECTION_COLUMNS = ["dataset", "split_key", "model", "largest_n", "gap", "projected_n", "low", "high", "p_none",
                      "n_boot", "n_folds", "n_sizes"]
CHECK_COLUMNS = ["dataset", "split_key", "model", "from_n", "to_n", "predicted", "observed", "error", "observed_from",
                 "val_to", "val_from"]


def fit_power(n: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """(a, β, c) of ``y ≈ a + β·n^(−c)`` by least squares, the best ``c`` of ``EXPONENTS``; None for fewer
    than ``MIN_SIZES`` finite points. (β = −b: negative for a curve that rises with n.)"""
    keep = np.isfinite(y)
    n, y = np.asarray(n, dtype=float)[keep], np.asarray(y, dtype=float)[keep]
    if len(n) < MIN_SIZES:
        return None
    u = n[None, :] ** -EXPONENTS[:, None]  # exponents × points
    du, dy = u - u.mean(axis=1, keepdims=True), y - y.mean()
    var = (du ** 2).sum(axis=1)
    beta = np.where(var > 0, (du * dy).sum(axis=1) / np.where(var > 0, var, 1.0), 0.0)
    a = y.mean() - beta * u.mean(axis=1)
    sse = ((y[None, :] - a[:, None] - beta[:, None] * u) ** 2).sum(axis=1)
    i = int(np.argmin(sse))
    return float(a[i]), float(beta[i]), float(EXPONENTS[i])


def predict(params: tuple[float, float, float], n: np.ndarray | float) -> np.ndarray:
    """The fitted curve at ``n``, capped at 1 (no accuracy or R² exceeds it)."""
    a, beta, c = params
    return np.minimum(a + beta * np.asarray(n, dtype=float) ** -c, 1.0)


def _fit_curve(curves: np.ndarray, vcurves: np.ndarray, n_rows: np.ndarray, members: list[int],
               at: np.ndarray) -> np.ndarray | None:
    """The fitted curve at each n of ``at`` of the member picked by validation at the largest size among
    those whose curve can be fitted (``MIN_SIZES`` means or more; ``curves``, ``vcurves``: size × model test
    and validation means)."""
    members = [m for m in members if np.isfinite(curves[:, m]).sum() >= MIN_SIZES]
    if not members:
        return None
    m = members[int(pick.index_by_validation(curves[-1, members], vcurves[-1, members]))]
    fit = fit_power(n_rows, curves[:, m])
    return None if fit is None else predict(fit, at)


def _project(curves: np.ndarray, vcurves: np.ndarray, n_rows: np.ndarray, chal: list[int], inc: list[int],
             at: np.ndarray) -> float:
    """The first n of ``at`` (``at[0]``: the largest size) where the challenger's fitted curve is above the
    incumbent's (inf: none). NaN where a side cannot be fitted, or where the fits do not have the
    challenger behind at the largest size as the means do: a crossover there would be the fit's error,
    not a projection. ``curves``/``vcurves``: size × model test/validation means at ``n_rows``; only models
    with a mean at the largest size take part (one that stopped short of it would project from a curve
    the others outgrew), and of those the one with the best validation mean there."""
    chal = [m for m in chal if not np.isnan(curves[-1, m])]
    inc = [m for m in inc if not np.isnan(curves[-1, m])]
    a, b = _fit_curve(curves, vcurves, n_rows, chal, at), _fit_curve(curves, vcurves, n_rows, inc, at)
    if a is None or b is None or not a[0] < b[0]:
        return float("nan")
    ahead = a > b
    return float(at[int(np.argmax(ahead))]) if ahead.any() else float("inf")


def projected_crossovers(cells: pd.DataFrame, challengers: dict[str, list[str]], incumbents: list[str],
                         n_boot: int = N_BOOT, seed: int = 0, reach: float = REACH) -> pd.DataFrame:
    """Per dataset and challenger (name → member models) that is behind the best incumbent (by more than
    ``MARGIN``: level is not behind) at the largest size both have scores at, with at least ``MIN_SIZES`` such sizes: ``projected_n``, the first size up to
    ``reach`` × ``largest_n`` where the fitted challenger curve passes the fitted incumbent one (``inf``:
    none within reach; NaN where the fits have the challenger level or ahead at ``largest_n``, against the
    means); ``low``/``high`` the 2.5 and 97.5 percentiles over the ``n_boot`` resamples of the folds that
    could be projected (``inf`` ends: none within reach), ``p_none`` the share of them with none; ``gap``
    the observed challenger − incumbent mean at ``largest_n``. One fold: no interval (NaN). ``cells`` as
    :func:`pipeline.report.stats.crossover.crossover_intervals` takes them."""
    rows = []
    for (dataset, split_key), (folds, n_rows, models, grid, vgrid) in fold_grids(cells):
        inc = [models.index(m) for m in incumbents if m in models]
        if not inc:
            continue
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a size without a score: NaN
            full, vfull = np.nanmean(grid, axis=0), np.nanmean(vgrid, axis=0)
            for name, names in challengers.items():
                idx = [models.index(m) for m in names if m in models]
                if not idx:
                    continue
                compared = ~np.isnan(np.nanmax(full[:, idx], axis=1)) & ~np.isnan(np.nanmax(full[:, inc], axis=1))
                if compared.sum() < MIN_SIZES:
                    continue
                largest = float(n_rows[compared][-1])
                last = int(np.flatnonzero(compared)[-1])
                # each side's models that can be projected: a mean at the largest size and enough sizes to fit
                fit_c, fit_i = ([m for m in side if not np.isnan(full[last, m])
                                 and np.isfinite(full[compared, m]).sum() >= MIN_SIZES] for side in (idx, inc))
                if not fit_c or not fit_i:
                    continue
                gap = float(pick.score_by_validation(full[last, fit_c], vfull[last, fit_c])
                            - pick.score_by_validation(full[last, fit_i], vfull[last, fit_i]))
                if gap >= -MARGIN:  # level or ahead at the largest size: nothing to project
                    continue
                sub, vsub = grid[:, compared], vgrid[:, compared]
                n_c = n_rows[compared]
                at = np.geomspace(largest, reach * largest, 200)  # at[0]: the largest size, where the fits
                # must agree with the means that the challenger is behind
                point = _project(np.nanmean(sub, axis=0), np.nanmean(vsub, axis=0), n_c, fit_c, fit_i, at)
                low = high = p_none = float("nan")
                kept = 0
                if len(folds) >= 2:
                    rng = np.random.default_rng([seed, zlib.crc32(f"{dataset}|{split_key}|{name}".encode())])
                    picks = rng.integers(0, len(folds), size=(n_boot, len(folds)))
                    boot = np.array([_project(np.nanmean(sub[p], axis=0), np.nanmean(vsub[p], axis=0), n_c, fit_c,
                                              fit_i, at) for p in picks])
                    boot = boot[~np.isnan(boot)]
                    kept = len(boot)
                    if kept:
                        low, high = (float(v) for v in np.percentile(boot, [2.5, 97.5], method="inverted_cdf"))
                        p_none = float(np.isinf(boot).mean())
                rows.append({"dataset": dataset, "split_key": split_key, "model": name, "largest_n": largest,
                             "gap": gap, "projected_n": point, "low": low, "high": high, "p_none": p_none,
                             "n_boot": kept, "n_folds": len(folds), "n_sizes": int(compared.sum())})
    return pd.DataFrame(rows, columns=PROJECTION_COLUMNS)


def holdout_check(cells: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Each of ``models``' learning curves with at least ``MIN_SIZES`` + 1 sizes, fitted on all but its
    largest size (``from_n``: the largest size fitted) and extrapolated to it (``to_n``): the predicted and
    observed mean scores, ``error`` = predicted − observed, and ``observed_from``, the mean at ``from_n``
    (what carrying the largest fitted size forward would predict); ``val_to``/``val_from``, the mean validation
    scores at those sizes (what picks each kind's best there)."""
    rows = []
    for (dataset, split_key), (_, n_rows, names, grid, vgrid) in fold_grids(cells):
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            full, vfull = np.nanmean(grid, axis=0), np.nanmean(vgrid, axis=0)
        for m in models:
            if m not in names:
                continue
            y = full[:, names.index(m)]
            have = np.flatnonzero(~np.isnan(y))
            if len(have) < MIN_SIZES + 1:
                continue
            fit = fit_power(n_rows[have[:-1]], y[have[:-1]])
            if fit is None:
                continue
            to = float(n_rows[have[-1]])
            pred = float(predict(fit, to))
            rows.append({"dataset": dataset, "split_key": split_key, "model": m, "from_n": float(n_rows[have[-2]]),
                         "to_n": to, "predicted": pred, "observed": float(y[have[-1]]), "error": pred - float(y[have[-1]]),
                         "observed_from": float(y[have[-2]]), "val_to": float(vfull[have[-1], names.index(m)]),
                         "val_from": float(vfull[have[-2], names.index(m)])})
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def sign_check(check: pd.DataFrame, attention: list[str], boosting: list[str]) -> tuple[int, int, int]:
    """On the held-out largest size: of the datasets where both kinds were extrapolated to one size, on how
    many the predicted sign of (best attention − best boosting) matched the observed one (within
    ``MARGIN``: level, a sign of its own), and on how many the sign at the size before, carried forward, did (the
    baseline a fit must beat); returns (right, right by carrying forward, datasets). Each kind's best is
    the model with the best validation mean: at the held-out size for the observed sign, at the largest
    fitted size for the predicted and carried-forward ones (what a projection would have known)."""
    right = carried = total = 0
    # models held out at the same size, fitted up to the same size: each side picked among comparable curves
    for _, g in check.groupby(["dataset", "split_key", "to_n", "from_n"]):
        a, b = g[g.model.isin(attention)], g[g.model.isin(boosting)]
        if a.empty or b.empty:
            continue
        total += 1
        observed = _sign(a, b, "observed", "val_to")
        # the projection picks each side at its largest fitted size, as carrying forward does
        right += int(_sign(a, b, "predicted", "val_from") == observed)
        carried += int(_sign(a, b, "observed_from", "val_from") == observed)
    return right, carried, total


def _sign(a: pd.DataFrame, b: pd.DataFrame, value: str, val: str) -> int:
    """The sign of (best of ``a`` − best of ``b``) in column ``value``, each picked by column ``val``; 0 when
    the two are within ``MARGIN`` (level)."""
    gap = (float(pick.score_by_validation(a[value].to_numpy(), a[val].to_numpy()))
           - float(pick.score_by_validation(b[value].to_numpy(), b[val].to_numpy())))
    return 0 if abs(gap) <= MARGIN else int(np.sign(gap))
