"""How close an undetermined verdict came (issue 82 item 2), checked on simulated splits whose truth is known.

Splits of repeated k-fold cross-validation are simulated as Nadeau and Bengio model them: every two differences
correlate by ρ = n_test/n = 1/k (they share training rows), d_j = δ + σ(√ρ·z₀ + √(1 − ρ)·z_j). Under that model
``detectable`` is exactly the half-width a difference must pass to be told from zero, and ``power`` says rightly
whether repeats to the cap could show a true zero equivalent."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from pipeline.records import Power, Verdict
from pipeline.report.stats.verdicts import MARGIN, decide, detectable, power

FOLDS, CAP = 3, 15  # the study's design: 3-fold, repeated to 5 repeats at the cap


def splits(rng: np.random.Generator, n_sets: int, n_splits: int, delta: float, sd: float) -> np.ndarray:
    rho = 1 / FOLDS
    shared = rng.standard_normal((n_sets, 1))
    own = rng.standard_normal((n_sets, n_splits))
    return delta + sd * (np.sqrt(rho) * shared + np.sqrt(1 - rho) * own)


def test_a_zero_difference_passes_its_detectable_half_width_one_time_in_twenty():
    rng = np.random.default_rng(0)
    d = splits(rng, 20_000, 3, 0.0, 0.02)
    half = np.array([detectable(float(x.std(ddof=1)), 3, FOLDS) for x in d])
    past = np.mean(np.abs(d.mean(axis=1)) > half)
    assert 0.044 < past < 0.056, past  # 95%: exact under the model (a t with J − 1 degrees of freedom)


def test_a_difference_well_past_the_detectable_half_width_is_told_apart():
    rng = np.random.default_rng(1)
    sd = 0.02
    typical = detectable(sd * np.sqrt(1 - 1 / FOLDS), 3, FOLDS)  # the half-width at the spread splits show
    d = splits(rng, 4_000, 3, 3 * typical, sd)
    found = np.mean([decide(x, folds=FOLDS).verdict is Verdict.AHEAD for x in d])
    assert found > 0.6, found
    # ... and a difference well under it is not
    d = splits(rng, 4_000, 3, typical / 4, sd)
    assert np.mean([decide(x, folds=FOLDS).verdict is Verdict.AHEAD for x in d]) < 0.15


def test_underpowered_and_inconclusive_are_what_repeats_to_the_cap_can_do():
    # the spread (of the differences over splits) at which a true zero is just shown equivalent at the cap
    edge = optimize.brentq(lambda s: detectable(s, CAP, FOLDS, 1 - 0.1) - MARGIN, 1e-6, 1.0)
    assert power(edge * 1.01, FOLDS, CAP) is Power.UNDERPOWERED
    assert power(edge * 0.99, FOLDS, CAP) is Power.INCONCLUSIVE
    rng = np.random.default_rng(2)
    within = np.sqrt(1 - 1 / FOLDS)  # the spread splits show is σ√(1 − ρ)
    for sd_shown, expected, rate in ((edge / 2, Power.INCONCLUSIVE, (0.8, 1.0)), (edge * 2, Power.UNDERPOWERED, (0.0, 0.01))):
        assert power(sd_shown, FOLDS, CAP) is expected
        d = splits(rng, 4_000, CAP, 0.0, sd_shown / within)  # a true zero, repeated to the cap
        equivalent = np.mean([decide(x, folds=FOLDS).verdict is Verdict.EQUIVALENT for x in d])
        assert rate[0] <= equivalent <= rate[1], (expected, equivalent)


def test_no_interval_no_figure():
    assert np.isnan(detectable(0.01, 1, FOLDS)) and np.isnan(detectable(float("nan"), 3, FOLDS))
    assert detectable(0.01, 3, FOLDS) == pytest.approx(4.302652729911275 * 0.01 * np.sqrt(1 / 3 + 1 / 2))
