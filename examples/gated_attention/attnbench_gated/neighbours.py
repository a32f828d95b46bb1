"""A Learner of one's own: k nearest neighbours (scikit-learn), for anything that is not a torch module.

A Learner declares its model with class attributes (kind, defaults, search space, capabilities) and
implements ``fit`` (train on ``data.train``; ``data.valid`` is there for early stopping) and
``predict`` (class probabilities N × n_classes, or values in the target's units). Import heavy
libraries inside ``fit``: attnbench imports this module to validate a suite.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, Learner, OnStep, on_all_classes


class NeighboursLearner(Learner):
    """k nearest neighbours on the standardised numerics and one-hot categoricals."""

    kind = "neighbours"  # a kind of our own: the report shows it as its own family
    capabilities = Capabilities(libraries=("sklearn",))  # CPU only, no rungs, no DDP
    defaults: ClassVar[Mapping[str, Any]] = {"n_neighbors": 15, "weights": "distance"}
    space: ClassVar[Mapping[str, Any]] = {"n_neighbors": {"logint": [3, 64]},
                                          "weights": {"choice": ["uniform", "distance"]}}

    def _x(self, part: Part) -> np.ndarray:
        onehot = [np.eye(card, dtype=np.float32)[part.x_cat[:, j]] for j, card in enumerate(self.cards)]
        return np.hstack([part.x_num_filled(), *onehot]) if onehot else part.x_num_filled()

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

        self.cards, self.n_classes = data.cat_cardinalities, data.n_classes
        k = max(1, min(int(self.config["n_neighbors"]), len(data.train)))
        cls: Any = KNeighborsRegressor if data.task_type == "regression" else KNeighborsClassifier
        self.model = cls(n_neighbors=k, weights=self.config["weights"], n_jobs=self.threads)
        self.model.fit(self._x(data.train), data.train.y)
        return FitReport(iterations=1, best_iteration=1, stop_reason="fit", n_params=int(self._x(data.train).size),
                         device="cpu")

    def predict(self, part: Part) -> np.ndarray:
        x = self._x(part)
        if self.n_classes:
            return on_all_classes(self.model.predict_proba(x), self.model.classes_, self.n_classes)
        return np.asarray(self.model.predict(x), dtype=np.float64)
