"""Extremely randomized trees (scikit-learn): split thresholds drawn at random, no bootstrap by
default. AMLB and TabArena run it beside the random forest.

The same Learner as the random forest (:mod:`pipeline.learners.random_forest`: no rungs, trees grown
in batches under the time limit, categorical codes, native missing values) with scikit-learn's
``ExtraTrees`` estimators, 250 trees, and the same search space.
"""

from __future__ import annotations

from typing import Any

from pipeline.learners.random_forest import RandomForestLearner

INFO = {
    "name": "extra_trees",
    "display_name": "Extra trees",
    "kind": "trees",
    "class": "ExtraTreesLearner",
    "description": "Extremely randomized trees (scikit-learn); categorical codes, native missing values.",
    "quick": {"n_estimators": 4},
    "gpu": False,
    "paper": "https://doi.org/10.1007/s10994-006-6226-1",
    "protocol": "no ASHA rungs (a forest has no rounds to stop early).",
    "defaults": {
        "n_estimators": 250,
        "max_depth": None,
        "max_features": "auto",  # scikit-learn's default for the task: sqrt (classification), 1.0 (regression)
        "min_samples_split": 2,
        "min_samples_leaf": 1,
        "bootstrap": False,
        "min_impurity_decrease": 0.0,
        "one_hot_max": 0,  # categorical codes as numbers (AMLB's and AutoGluon's forests); N: one-hot up to N levels
    },
    "space": {
        "max_depth": {"choice": [None, 2, 3, 4]},
        "max_features": {"choice": ["sqrt", "log2", 1.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]},
        "min_samples_split": {"choice": [2, 3]},
        "min_samples_leaf": {"logint": [2, 50]},
        "bootstrap": {"choice": [True, False]},
        "min_impurity_decrease": {"choice": [0.0, 0.01, 0.02, 0.05]},
    },
}


class ExtraTreesLearner(RandomForestLearner):
    """The random forest's Learner with scikit-learn's extra-trees estimators."""

    def estimator(self, regression: bool, **params: Any) -> Any:
        from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor

        return (ExtraTreesRegressor if regression else ExtraTreesClassifier)(**params)
