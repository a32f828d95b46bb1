"""Synthetic tasks whose structure is known: which features carry the label, and how they combine.

Each generator is seeded and returns the features (informative ones named ``signal_*``, the rest
``noise_*``, columns in a seeded shuffled order so that position says nothing) and a binary label.
Every informative feature has the same distribution in both classes, except in the additive control,
so a model that looks at one feature at a time cannot beat chance on the interaction tasks.

- ``interaction``: two numeric features, label = sign(x_a) xor sign(x_b).
- ``num_cat_interaction``: one numeric and one categorical feature (4 levels), label = sign(x) xor
  (level in {L0, L1}).
- ``additive``: the control: label = 1[x_a + x_b > 0], learnable one feature at a time.

``noise_*`` numeric features are standard normal; ``noise_cat_*`` categorical features have 4 uniform
levels. ``INFORMATIVE[kind]`` lists the ``signal_*`` names, which the claims page checks attention
against.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KINDS = ("interaction", "num_cat_interaction", "additive")
LEVELS = ["L0", "L1", "L2", "L3"]
INFORMATIVE = {
    "interaction": ["signal_a", "signal_b"],
    "num_cat_interaction": ["signal_a", "signal_cat"],
    "additive": ["signal_a", "signal_b"],
}
DESCRIPTION = {
    "interaction": "label = sign(signal_a) xor sign(signal_b); each alone is independent of the label",
    "num_cat_interaction": "label = sign(signal_a) xor (signal_cat in {L0, L1}); each alone is independent "
                           "of the label",
    "additive": "label = 1[signal_a + signal_b > 0]: the additive control, learnable one feature at a time",
}


def generate(kind: str, n_rows: int, n_noise: int, n_cat_noise: int, seed: int) -> tuple[pd.DataFrame, pd.Series]:
    """Features (numeric float, categorical as pandas 'category') and the label ('0'/'1' category)."""
    if kind not in KINDS:
        raise ValueError(f"unknown synthetic task {kind!r}; one of {', '.join(KINDS)}")
    rng = np.random.default_rng(seed)
    cols: dict[str, object] = {}
    a = rng.standard_normal(n_rows)
    if kind == "num_cat_interaction":
        codes = rng.integers(0, len(LEVELS), n_rows)
        cols["signal_a"] = a
        cols["signal_cat"] = pd.Categorical(np.asarray(LEVELS)[codes], categories=LEVELS)
        label = (a > 0) ^ (codes < 2)
    else:
        b = rng.standard_normal(n_rows)
        cols["signal_a"], cols["signal_b"] = a, b
        label = ((a > 0) ^ (b > 0)) if kind == "interaction" else (a + b > 0)
    for i in range(n_noise):
        cols[f"noise_{i}"] = rng.standard_normal(n_rows)
    for i in range(n_cat_noise):
        cols[f"noise_cat_{i}"] = pd.Categorical(np.asarray(LEVELS)[rng.integers(0, len(LEVELS), n_rows)],
                                                categories=LEVELS)
    order = rng.permutation(len(cols))
    names = list(cols)
    frame = pd.DataFrame({names[i]: cols[names[i]] for i in order})
    y = pd.Series(np.where(label, "1", "0"), name="label").astype("category")
    return frame, y
