"""Per-dataset significance on hand-made splits whose p-values are known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pipeline.report.stats import significance as sig

NAN = float("nan")


def test_wilcoxon_p_value_known_by_hand():
    # Six positive differences with distinct ranks: the exact two-sided p is 2 × (1 / 2^6) = 0.03125.
    assert sig.wilcoxon_p(np.array([0.01, 0.02, 0.03, 0.04, 0.05, 0.06])) == pytest.approx(0.03125)
    # One sign flipped on the smallest rank: W- = 1, P(W ≤ 1) = 2 / 64, two-sided 0.0625.
    assert sig.wilcoxon_p(np.array([-0.01, 0.02, 0.03, 0.04, 0.05, 0.06])) == pytest.approx(0.0625)
    assert sig.wilcoxon_p(np.zeros(8)) == 1.0


def test_splits_needed_grow_with_the_models_holm_corrects_for():
    # m · 2 / 2^n < 0.05: one model needs 6 pairs (2/64 = 0.031), two need 7 (2 · 2/128), four need 8.
    assert [sig.needed_splits(m) for m in (1, 2, 3, 4, 6, 7)] == [6, 7, 7, 8, 8, 9]


def test_holm_step_down_by_hand():
    assert sig.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert sig.holm([0.5]) == [0.5]


def split_cells(scores: dict[str, list[float]], dataset: str = "d", size: str = "all") -> pd.DataFrame:
    rows = []
    for model, values in scores.items():
        for fold, v in enumerate(values):
            rows.append({"split_key": "k", "dataset": dataset, "sample_size": size, "repeat": 0, "fold": fold, "seed": 0,
                         "model": model, "status": "ok" if not math.isnan(v) else "error", "score": v})
    return pd.DataFrame(rows)


def test_significance_marks_models_not_worse_than_the_best():
    best = [0.90, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97]
    cells = split_cells({
        "a": best,
        "b": [x - 0.05 - 0.001 * i for i, x in enumerate(best)],  # behind on all 8 splits: p = 2/256
        "c": [x + (0.002 if i % 2 else -0.003) for i, x in enumerate(best)],  # within noise of a
    })
    got = sig.significance(cells).set_index("model")
    assert got.loc["a", "verdict"] == "best"
    assert got.loc["b", "p"] == pytest.approx(2 / 256) and got.loc["b", "verdict"] == "worse"
    assert got.loc["b", "p_holm"] == pytest.approx(2 * 2 / 256)  # the smaller of two p-values, times 2
    assert got.loc["c", "verdict"] == "not worse" and got.loc["c", "p_holm"] >= 0.05


def test_significance_says_when_there_are_too_few_splits_and_ties_are_both_best():
    got = sig.significance(split_cells({"a": [0.9, 0.8, 0.7], "b": [0.5, 0.4, 0.3]})).set_index("model")
    assert got.loc["b", "verdict"] == "too few splits" and got.loc["b", "n_pairs"] == 3 and math.isnan(got.loc["b", "p"])
    # Six splits are enough for one comparison, not for two after Holm's correction.
    six = [0.9, 0.91, 0.92, 0.93, 0.94, 0.95]
    one = sig.significance(split_cells({"a": six, "b": [x - 0.1 for x in six]})).set_index("model")
    assert one.loc["b", "verdict"] == "worse" and one.loc["b", "p"] == pytest.approx(0.03125)
    two = sig.significance(split_cells({"a": six, "b": [x - 0.1 for x in six], "c": [x - 0.2 for x in six]}))
    assert set(two.verdict) == {"best", "too few splits"} and set(two.needed.dropna()) == {7}
    tie = sig.significance(split_cells({"a": [0.9] * 6, "b": [0.9] * 6, "c": [0.1] * 6})).set_index("model")
    assert tie.loc["a", "verdict"] == tie.loc["b", "verdict"] == "best" and tie.loc["a", "best"] == "a, b"
    # A failed split is not a pair: 6 splits, one failed, leaves 5 pairs, too few.
    one_failed = sig.significance(split_cells({"a": [0.9] * 6, "b": [0.5] * 5 + [NAN]})).set_index("model")
    assert one_failed.loc["b", "verdict"] == "too few splits" and one_failed.loc["b", "n_pairs"] == 5


def test_paired_verdict_in_words():
    cells = split_cells({"x": [0.9, 0.91, 0.92, 0.93, 0.94, 0.95], "y": [0.8, 0.8, 0.8, 0.8, 0.8, 0.8]})
    assert sig.paired_verdict(cells, "x", "y") == "significant (Wilcoxon p = 0.031, 6 splits)"
    near = split_cells({"x": [0.9, 0.8, 0.9, 0.8, 0.9, 0.8], "y": [0.85] * 6})
    assert sig.paired_verdict(near, "x", "y").startswith("within noise (Wilcoxon p = ")
    assert sig.paired_verdict(cells.head(8), "x", "y") == "too few splits to test (2; a Wilcoxon test needs 6)"
