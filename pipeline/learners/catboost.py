"""CatBoost baseline: ordered target statistics for categoricals, early stopping on validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, Learner, OnStep, on_all_classes, rounds_report


def frame(part: Part, data: FoldData) -> pd.DataFrame:
    cols: dict[str, Any] = {f"n{i}": part.x_num[:, i] for i in range(part.x_num.shape[1])}
    for j in range(len(data.cat_cardinalities)):
        cols[f"c{j}"] = part.x_cat[:, j]
    return pd.DataFrame(cols)


class CatBoostLearner(Learner):
    """``on_step`` is asked after each boosting round with minus the validation loss; False stops
    training there (ASHA's rung cut), keeping the best round so far. CatBoost takes no callbacks in
    its GPU mode, so there a trial runs to its end or to early stopping."""

    name = "catboost"
    kind = "boosting"
    display_name = "CatBoost"
    description = "Oblivious gradient-boosted trees with ordered boosting and native categoricals."
    paper = "https://arxiv.org/abs/1706.09516"
    quick = {"iterations": 3, "early_stopping_rounds": 2}
    defaults = {
        "iterations": 2000,
        "early_stopping_rounds": 50,
        "learning_rate": 0.08,
        "depth": 6,
        "l2_leaf_reg": 3.0,
        "random_strength": 1.0,
        "bagging_temperature": 1.0,
        "one_hot_max_size": 2,
    }
    # After the TabR/TabM papers' CatBoost space (a subset: the rest stays at CatBoost's defaults).
    space = {
        "learning_rate": {"loguniform": [1e-3, 0.3]},
        "depth": {"int": [3, 8]},
        "l2_leaf_reg": {"loguniform": [0.1, 10.0]},
        "bagging_temperature": {"uniform": [0.0, 1.0]},
        "random_strength": {"loguniform": [0.1, 10.0]},
    }

    capabilities = Capabilities(gpu=True, rungs="boosting rounds", budget="iterations", grace=10,
                                libraries=("catboost",))

    on_step: OnStep | None = None
    pruned = False
    timed_out = False

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        import catboost as cb

        self.data, self.pruned = data.without_parts(), False
        self.on_step = None if self.use_gpu else on_step
        d, c = data, self.config
        cat_features = [f"c{j}" for j in range(len(d.cat_cardinalities))]
        params: dict[str, Any] = dict(
            iterations=int(c["iterations"]), early_stopping_rounds=int(c["early_stopping_rounds"]),
            learning_rate=c["learning_rate"], depth=int(c["depth"]), l2_leaf_reg=c["l2_leaf_reg"],
            random_strength=c["random_strength"], bagging_temperature=c["bagging_temperature"],
            one_hot_max_size=int(c["one_hot_max_size"]), thread_count=self.threads, random_seed=self.seed,
            task_type="GPU" if self.use_gpu else "CPU", allow_writing_files=False, verbose=False,
        )
        if d.task_type == "regression":
            self.model = cb.CatBoostRegressor(loss_function="RMSE", **params)
        else:
            self.model = cb.CatBoostClassifier(loss_function="Logloss" if d.n_classes == 2 else "MultiClass", **params)
        train = cb.Pool(frame(d.train, d), d.train.y, cat_features=cat_features)
        valid = cb.Pool(frame(d.valid, d), d.valid.y, cat_features=cat_features)
        self.timed_out = False
        self.start_clock()
        # ASHA's rungs and the time limit after every round; CatBoost takes no callbacks on GPU, where the
        # trial's hard limit is what holds.
        callbacks = None if self.use_gpu else [_RoundCallback(self)]
        self.model.fit(train, eval_set=valid, use_best_model=True, callbacks=callbacks)
        history = self.model.get_evals_result().get("validation", {})
        # Leaf values over all trees (oblivious trees of depth d have 2^d leaves).
        leaves = int(self.model.tree_count_ * 2 ** int(c["depth"]))
        return rounds_report(list(next(iter(history.values()), [])), int(self.model.get_best_iteration() or 0) + 1,
                             int(c["iterations"]), self.pruned, leaves, "cuda" if self.use_gpu else "cpu",
                             timed_out=self.timed_out)

    def predict(self, part: Part) -> np.ndarray:
        x = frame(part, self.data)
        if self.data.task_type == "regression":
            return np.asarray(self.model.predict(x))
        return on_all_classes(self.model.predict_proba(x), self.model.classes_, self.data.n_classes)


class _RoundCallback:
    """CatBoost's callback protocol: ``after_iteration(info)`` returns False to stop. Past the owner's
    ``max_seconds`` it stops (the best round is kept); otherwise it asks ``on_step``, when given."""

    def __init__(self, owner: CatBoostLearner) -> None:
        self.owner = owner

    def after_iteration(self, info: Any) -> bool:
        if self.owner.past_limit():
            self.owner.timed_out = True
            return False
        losses: list[float] = next(iter(info.metrics.get("validation", {}).values()), [])
        if not losses or self.owner.on_step is None:
            return True
        self.owner.pruned = not self.owner.on_step(int(info.iteration), -float(losses[-1]))
        return not self.owner.pruned
