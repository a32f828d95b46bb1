"""Extremely randomized trees (scikit-learn): split thresholds drawn at random, no bootstrap by
default. AMLB and TabArena run it beside the random forest.

The same Learner as the random forest (:mod:`pipeline.learners.random_forest`: no rungs, trees grown
in batches under the time limit, categorical codes, native missing values) with scikit-learn's
``ExtraTrees`` estimators, 250 trees, and the same search space.
"""

from __future__ import annotations

from typing import Any

from pipeline.learners.random_forest import RandomForestLearner


class ExtraTreesLearner(RandomForestLearner):
    """The random forest's Learner with scikit-learn's extra-trees estimators: its kind, capabilities,
    protocol, quick fit and search space are the forest's; no bootstrap by default."""

    name = "extra_trees"
    display_name = "Extra trees"
    description = "Extremely randomized trees (scikit-learn); categorical codes, native missing values."
    paper = "https://doi.org/10.1007/s10994-006-6226-1"
    defaults = {**RandomForestLearner.defaults, "bootstrap": False}

    def estimator(self, regression: bool, **params: Any) -> Any:
        from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor

        return (ExtraTreesRegressor if regression else ExtraTreesClassifier)(**params)
