"""LightGBM baseline: leaf-wise gradient-boosted trees, native categorical splits, early stopping on
the validation part.

Defaults and search space after the TabR paper's LightGBM baseline (Gorishniy et al., 2023; the same
one TabM compares with): 4,000 rounds at most with early stopping after 200 rounds without
improvement, LightGBM's own defaults otherwise, and the tuned space of feature_fraction,
bagging_fraction, lambda_l2, learning_rate, num_leaves and min_sum_hessian_in_leaf. Three differences,
each said here: categorical features are LightGBM's native categorical splits (TabR one-hot encodes
them); ``bagging_freq`` is 1, so that ``bagging_fraction`` samples rows at all (at LightGBM's default
of 0 the searched fraction would do nothing); TabR's ``lambda_l2`` is 0 half of the time and
log-uniform on [0.1, 10] otherwise, which one domain here cannot say: log-uniform on [1e-3, 10], whose
low end is as good as 0.

Trials run on the CPU: the pip wheel's GPU mode needs an OpenCL runtime that GPU workers do not
usually have, so the Learner declares no GPU and a run that gives it one says so.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, Learner, OnStep, on_all_classes, rounds_report
from pipeline.learners.xgboost import frame


class LightGBMLearner(Learner):
    """``on_step`` is asked after each boosting round with minus the validation loss; False stops
    training there (ASHA's rung cut), keeping the best round so far, as early stopping does."""

    name = "lightgbm"
    kind = "boosting"
    display_name = "LightGBM"
    description = "Leaf-wise gradient-boosted trees (histogram method), native categorical splits, early stopping."
    paper = "https://papers.nips.cc/paper/6907-lightgbm-a-highly-efficient-gradient-boosting-decision-tree"
    protocol = "trains on the CPU where a GPU is given (the pip wheel's GPU mode needs OpenCL; no CUDA build)."
    quick = {"n_estimators": 3, "early_stopping_rounds": 2}
    defaults = {
        "n_estimators": 4000,
        "early_stopping_rounds": 200,
        "learning_rate": 0.1,
        "num_leaves": 31,
        "feature_fraction": 1.0,
        "bagging_fraction": 1.0,
        "bagging_freq": 1,
        "lambda_l2": 0.0,
        "min_sum_hessian_in_leaf": 1e-3,
        "min_data_in_leaf": 20,
    }
    # The TabR paper's LightGBM space (exp/lightgbm_/*/2-tuning.toml in its repository); see above.
    space = {
        "feature_fraction": {"uniform": [0.5, 1.0]},
        "bagging_fraction": {"uniform": [0.5, 1.0]},
        "lambda_l2": {"loguniform": [1e-3, 10.0]},
        "learning_rate": {"loguniform": [1e-3, 1.0]},
        "num_leaves": {"int": [4, 768]},
        "min_sum_hessian_in_leaf": {"loguniform": [1e-4, 100.0]},
    }

    capabilities = Capabilities(gpu=False, rungs="boosting rounds", budget="n_estimators", grace=10,
                                libraries=("lightgbm",))

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        import lightgbm as lgb

        self.data, d, c = data.without_parts(), data, self.config
        self.on_step, self.pruned, self.timed_out = on_step, False, False
        self.start_clock()
        params: dict[str, Any] = dict(
            n_estimators=int(c["n_estimators"]), learning_rate=c["learning_rate"], num_leaves=int(c["num_leaves"]),
            feature_fraction=c["feature_fraction"], bagging_fraction=c["bagging_fraction"],
            bagging_freq=int(c["bagging_freq"]), lambda_l2=c["lambda_l2"],
            min_sum_hessian_in_leaf=c["min_sum_hessian_in_leaf"], min_data_in_leaf=int(c["min_data_in_leaf"]),
            n_jobs=self.threads, random_state=self.seed, verbose=-1, device_type="cpu",
        )
        if d.task_type == "regression":
            self.model, metric = lgb.LGBMRegressor(objective="regression", **params), "l2"
        else:
            objective = "binary" if d.n_classes == 2 else "multiclass"
            metric = "binary_logloss" if d.n_classes == 2 else "multi_logloss"
            self.model = lgb.LGBMClassifier(objective=objective, **params)
        stop = lgb.early_stopping(int(c["early_stopping_rounds"]), first_metric_only=True, verbose=False)
        valid = (frame(d.valid, d), d.valid.y)
        # LightGBM 4.7 takes the validation part as eval_X / eval_y and deprecates eval_set
        evals = ({"eval_X": (valid[0],), "eval_y": (valid[1],)}
                 if "eval_X" in inspect.signature(self.model.fit).parameters else {"eval_set": [valid]})
        self.model.fit(frame(d.train, d), d.train.y, eval_metric=metric, callbacks=[stop, _RoundCallback(self, lgb)],
                       **evals)
        losses = [float(v) for v in self.model.evals_result_["valid_0"][metric]]
        best = int(self.model.best_iteration_ or len(losses))
        # Leaves, the closest thing a leaf-wise forest has to a parameter count.
        leaves = sum(int(t["num_leaves"]) for t in self.model.booster_.dump_model()["tree_info"])
        return rounds_report(losses, best, int(c["n_estimators"]), self.pruned, leaves, "cpu", timed_out=self.timed_out)

    def predict(self, part: Part) -> np.ndarray:
        x = frame(part, self.data)
        if self.data.task_type == "regression":
            return np.asarray(self.model.predict(x), dtype=np.float64)
        return on_all_classes(self.model.predict_proba(x), self.model.classes_, self.data.n_classes)


class _RoundCallback:
    """After each round: past the learner's ``max_seconds`` it stops; otherwise it asks ``on_step``
    (ASHA's rung), when given. Either way the model keeps its best round so far."""

    def __init__(self, owner: LightGBMLearner, lgb: Any) -> None:
        self.owner, self.lgb = owner, lgb
        # On the instance: LightGBM gives a callback without its own "order" one that runs first, before
        # the round's evaluation is recorded. 40: after the recording (20) and early stopping (30).
        self.order, self.before_iteration = 40, False
        self.best: tuple[float, int, Any] | None = None  # (loss, 0-based round, its evaluation list)

    def __call__(self, env: Any) -> None:
        o = self.owner
        _, _, loss, _ = env.evaluation_result_list[0]
        if self.best is None or loss < self.best[0]:
            self.best = (float(loss), env.iteration, env.evaluation_result_list)
        if o.past_limit():
            o.timed_out = True
        elif o.on_step is not None:
            o.pruned = not o.on_step(env.iteration + 1, -float(loss))
        if o.timed_out or o.pruned:
            raise self.lgb.callback.EarlyStopException(self.best[1], self.best[2])
