"""XGBoost baseline: native categorical support, early stopping on the validation part."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, Learner, OnStep, on_all_classes, rounds_report


def frame(part: Part, data: FoldData) -> pd.DataFrame:
    """Numeric columns as floats (NaN = missing) and categorical codes as pandas categories."""
    cols: dict[str, Any] = {f"n{i}": part.x_num[:, i] for i in range(part.x_num.shape[1])}
    for j, card in enumerate(data.cat_cardinalities):
        # At least one category: a column with no level in the fold's training rows (every value
        # missing) is a valid, empty categorical, not a zero-length one XGBoost cannot take.
        categories = list(range(1, max(card, 2)))
        # Code k is category k (its position k - 1); code 0, missing or unseen, is pandas' missing code -1.
        # (From the values, -1 would be a value outside the categories, which pandas deprecates.)
        position = part.x_cat[:, j].astype(np.int64) - 1
        position[(position < 0) | (position >= len(categories))] = -1
        cols[f"c{j}"] = pd.Categorical.from_codes(position, categories=categories)
    return pd.DataFrame(cols)


class XGBoostLearner(Learner):
    """``on_step`` is asked after each boosting round with minus the validation loss; False stops
    training there (ASHA's rung cut), keeping the best round so far, as early stopping does."""

    name = "xgboost"
    kind = "boosting"
    display_name = "XGBoost"
    description = "Gradient-boosted trees (histogram method), native categorical splits, early stopping."
    paper = "https://arxiv.org/abs/1603.02754"
    quick = {"n_estimators": 3, "early_stopping_rounds": 2}
    defaults = {
        "n_estimators": 2000,
        "early_stopping_rounds": 50,
        "learning_rate": 0.1,
        "max_depth": 6,
        "min_child_weight": 1.0,
        "subsample": 1.0,
        "colsample_bytree": 1.0,
        "reg_lambda": 1.0,
        "reg_alpha": 1e-8,
        "gamma": 1e-8,
    }
    # The space of Grinsztajn et al. (2022) for XGBoost, with early stopping in place of n_estimators.
    space = {
        "learning_rate": {"loguniform": [1e-3, 0.7]},
        "max_depth": {"int": [1, 11]},
        "min_child_weight": {"loguniform": [1.0, 100.0]},
        "subsample": {"uniform": [0.5, 1.0]},
        "colsample_bytree": {"uniform": [0.5, 1.0]},
        "reg_lambda": {"loguniform": [1.0, 4.0]},
        "reg_alpha": {"loguniform": [1e-8, 1e-2]},
        "gamma": {"loguniform": [1e-8, 7.0]},
    }

    capabilities = Capabilities(gpu=True, rungs="boosting rounds", budget="n_estimators", grace=10,
                                libraries=("xgboost",))

    on_step: OnStep | None = None
    pruned = False
    timed_out = False

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        import xgboost as xgb

        self.data, self.on_step, self.pruned = data.without_parts(), on_step, False
        d, c = data, self.config
        device = "cuda" if self.use_gpu else "cpu"
        params: dict[str, Any] = dict(
            n_estimators=int(c["n_estimators"]), early_stopping_rounds=int(c["early_stopping_rounds"]),
            learning_rate=c["learning_rate"], max_depth=int(c["max_depth"]), min_child_weight=c["min_child_weight"],
            subsample=c["subsample"], colsample_bytree=c["colsample_bytree"], reg_lambda=c["reg_lambda"],
            reg_alpha=c["reg_alpha"], gamma=c["gamma"], tree_method="hist", enable_categorical=True,
            max_cat_to_onehot=1, n_jobs=self.threads, random_state=self.seed, device=device,
        )
        self.timed_out = False
        self.start_clock()
        params["callbacks"] = [_round_callback(self)]  # ASHA's rungs and the time limit, after every round
        if d.task_type == "regression":
            self.model = xgb.XGBRegressor(objective="reg:squarederror", eval_metric="rmse", **params)
        else:
            objective = "binary:logistic" if d.n_classes == 2 else "multi:softprob"
            metric = "logloss" if d.n_classes == 2 else "mlogloss"
            self.model = xgb.XGBClassifier(objective=objective, eval_metric=metric, **params)
        self.model.fit(frame(d.train, d), d.train.y, eval_set=[(frame(d.valid, d), d.valid.y)], verbose=False)
        history = self.model.evals_result()["validation_0"]
        # Tree nodes, the closest thing a forest has to a parameter count.
        nodes = len(self.model.get_booster().trees_to_dataframe())
        losses = list(next(iter(history.values())))
        # XGBoost asks its callbacks in turn and stops at the first that says stop: where the time limit (or a
        # rung) stopped the first round, early stopping never recorded a best round, and the model keeps all.
        best = self.model.get_booster().attr("best_iteration")
        return rounds_report(losses, int(best) + 1 if best is not None else len(losses), int(c["n_estimators"]),
                             self.pruned, nodes, device, timed_out=self.timed_out)

    def predict(self, part: Part) -> np.ndarray:
        x = frame(part, self.data)
        if self.data.task_type == "regression":
            return np.asarray(self.model.predict(x))
        return on_all_classes(self.model.predict_proba(x), self.model.classes_, self.data.n_classes)


def _round_callback(owner: XGBoostLearner) -> Any:
    """An XGBoost callback, after each round: past ``owner.max_seconds`` it stops (keeping the best
    round, as early stopping does); otherwise it asks ``owner.on_step`` (ASHA's rung), when given."""
    import xgboost as xgb

    class Rounds(xgb.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: dict[str, Any]) -> bool:
            if owner.past_limit():
                owner.timed_out = True
                return True  # True stops XGBoost
            if owner.on_step is None:
                return False
            losses = next(iter(evals_log["validation_0"].values()))
            owner.pruned = not owner.on_step(epoch + 1, -float(losses[-1]))
            return owner.pruned

    return Rounds()
