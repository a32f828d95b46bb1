"""XGBoost baseline: native categorical support, early stopping on the validation part."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.preprocess import FoldData, Part

INFO = {
    "name": "xgboost",
    "display_name": "XGBoost",
    "family": "gbdt",
    "class": "XGBoostModel",
    "description": "Gradient-boosted trees (histogram method), native categorical splits, early stopping.",
    "paper": "https://arxiv.org/abs/1603.02754",
    "defaults": {
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
    },
    # The space of Grinsztajn et al. (2022) for XGBoost, with early stopping in place of n_estimators.
    "space": {
        "learning_rate": {"loguniform": [1e-3, 0.7]},
        "max_depth": {"int": [1, 11]},
        "min_child_weight": {"loguniform": [1.0, 100.0]},
        "subsample": {"uniform": [0.5, 1.0]},
        "colsample_bytree": {"uniform": [0.5, 1.0]},
        "reg_lambda": {"loguniform": [1.0, 4.0]},
        "reg_alpha": {"loguniform": [1e-8, 1e-2]},
        "gamma": {"loguniform": [1e-8, 7.0]},
    },
}


def frame(part: Part, data: FoldData) -> pd.DataFrame:
    """Numeric columns as floats (NaN = missing) and categorical codes as pandas categories."""
    cols: dict[str, Any] = {f"n{i}": part.x_num[:, i] for i in range(part.x_num.shape[1])}
    for j, card in enumerate(data.cat_cardinalities):
        codes = part.x_cat[:, j]
        cols[f"c{j}"] = pd.Categorical(np.where(codes == 0, -1, codes), categories=list(range(1, card)))
    return pd.DataFrame(cols)


class XGBoostModel:
    """``on_round(round, val_loss)`` is asked after each boosting round; False stops training there
    (ASHA's rung cut), keeping the best round so far, as early stopping does."""

    def __init__(self, *, data: FoldData, config: dict[str, Any], threads: int = 1, use_gpu: bool = False,
                 seed: int = 0, on_round: Callable[[int, float], bool] | None = None) -> None:
        self.data, self.config, self.threads, self.use_gpu, self.seed = data, config, threads, use_gpu, seed
        self.device = "cuda" if use_gpu else "cpu"
        self.on_round = on_round
        self.pruned = False

    def fit(self) -> XGBoostModel:
        import xgboost as xgb

        d, c = self.data, self.config
        params: dict[str, Any] = dict(
            n_estimators=int(c["n_estimators"]), early_stopping_rounds=int(c["early_stopping_rounds"]),
            learning_rate=c["learning_rate"], max_depth=int(c["max_depth"]), min_child_weight=c["min_child_weight"],
            subsample=c["subsample"], colsample_bytree=c["colsample_bytree"], reg_lambda=c["reg_lambda"],
            reg_alpha=c["reg_alpha"], gamma=c["gamma"], tree_method="hist", enable_categorical=True,
            max_cat_to_onehot=1, n_jobs=self.threads, random_state=self.seed, device=self.device,
        )
        if self.on_round is not None:
            params["callbacks"] = [_rung_callback(self)]
        if d.task_type == "regression":
            self.model = xgb.XGBRegressor(objective="reg:squarederror", eval_metric="rmse", **params)
        else:
            objective = "binary:logistic" if d.n_classes == 2 else "multi:softprob"
            metric = "logloss" if d.n_classes == 2 else "mlogloss"
            self.model = xgb.XGBClassifier(objective=objective, eval_metric=metric, **params)
        self.model.fit(frame(d.train, d), d.train.y, eval_set=[(frame(d.valid, d), d.valid.y)], verbose=False)
        history = self.model.evals_result()["validation_0"]
        self.curve = list(next(iter(history.values())))
        self.n_iterations = int(self.model.best_iteration) + 1
        return self

    @property
    def max_rounds(self) -> int:
        """The round budget: training that keeps its last round was still improving when it ran out."""
        return int(self.config["n_estimators"])

    def predict(self, part: Part) -> np.ndarray:
        x = frame(part, self.data)
        if self.data.task_type == "regression":
            return self.model.predict(x)
        proba = self.model.predict_proba(x)
        # XGBoost sees only the classes in the training labels; put them back on the full class list.
        full = np.zeros((len(part), self.data.n_classes))
        full[:, self.model.classes_.astype(int)] = proba
        return full

    @property
    def n_params(self) -> int:
        """Tree nodes, the closest thing a forest has to a parameter count."""
        return len(self.model.get_booster().trees_to_dataframe())



def _rung_callback(owner: XGBoostModel) -> Any:
    """An XGBoost callback that asks ``owner.on_round`` after each round (xgboost is imported lazily)."""
    import xgboost as xgb

    class Rungs(xgb.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: dict[str, Any]) -> bool:
            losses = next(iter(evals_log["validation_0"].values()))
            assert owner.on_round is not None
            owner.pruned = not owner.on_round(epoch + 1, float(losses[-1]))
            return owner.pruned  # True stops XGBoost

    return Rungs()
