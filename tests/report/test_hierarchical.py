"""The answer across datasets (issue 82 item 4): Corani et al.'s hierarchical model, sampled with NumPyro, on
simulated cross-validation whose truth is known (splits correlated by ρ = 1/k, as the model and Nadeau–Bengio
assume), and seeded, so that the same data give the same figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.report.stats import hierarchical

FOLDS = 3
DRAWS = (500, 1000, 1)  # fewer than the answer's: the figures below are far from their thresholds


def simulated(rng: np.random.Generator, deltas: np.ndarray, sd: float, n_splits: int) -> pd.DataFrame:
    rho = 1 / FOLDS
    rows = []
    for i, delta in enumerate(deltas):
        x = delta + sd * (np.sqrt(rho) * rng.standard_normal() + np.sqrt(1 - rho) * rng.standard_normal(n_splits))
        rows.append({"dataset": f"d{i}", "diff": x.mean(), "sd": x.std(ddof=1), "n_splits": n_splits})
    return pd.DataFrame(rows)


def test_a_difference_every_dataset_shares_is_found_for_a_new_dataset():
    rng = np.random.default_rng(0)
    data = simulated(rng, rng.normal(0.03, 0.005, 30), 0.01, 15)
    post = hierarchical.fit(data, FOLDS, draws=DRAWS)
    behind, _, ahead = post.new[0.01]
    assert ahead > 0.9 and behind < 0.02, post.new
    assert post.n_datasets == 30 and post.n_splits == 450
    assert post.delta0[0] == pytest.approx(0.03, abs=0.006)
    assert (post.per_dataset["ahead_0.01"] > 0.8).mean() > 0.9  # each dataset's own, shrunk toward the rest
    assert np.allclose(post.per_dataset[["behind_0.01", "equivalent_0.01", "ahead_0.01"]].sum(axis=1), 1.0)


def test_no_difference_reads_equivalent_and_a_noisy_dataset_is_shrunk_toward_the_rest():
    rng = np.random.default_rng(1)
    data = simulated(rng, np.zeros(24), 0.004, 15)
    # one dataset on three noisy splits whose mean strays: alone it would say little; the others say "near zero"
    data.loc[len(data)] = {"dataset": "noisy", "diff": -0.02, "sd": 0.03, "n_splits": 3}
    post = hierarchical.fit(data, FOLDS, draws=DRAWS)
    _, equivalent, _ = post.new[0.01]
    assert equivalent > 0.8, post.new
    noisy = post.per_dataset.set_index("dataset").loc["noisy"]
    assert noisy["equivalent_0.01"] > 0.5 and noisy["behind_0.01"] < 0.5, noisy


def test_seeded_figures_are_the_same_figures():
    rng = np.random.default_rng(2)
    data = simulated(rng, rng.normal(0.0, 0.01, 12), 0.01, 3)
    a = hierarchical.fit(data, FOLDS, seed=5, draws=DRAWS)
    b = hierarchical.fit(data, FOLDS, seed=5, draws=DRAWS)
    assert a.new == b.new and a.per_dataset.equals(b.per_dataset)
    with pytest.raises(ValueError, match="two datasets or more"):
        hierarchical.fit(data.head(1), FOLDS, draws=DRAWS)
