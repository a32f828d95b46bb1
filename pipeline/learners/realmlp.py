"""RealMLP-TD (Holzmüller et al., NeurIPS 2024), through pytabkit's scikit-learn interface.

RealMLP's tuned defaults are more than hyperparameters: its own preprocessing (one-hot or embedded
categoricals, robust scaling with smooth clipping, PBLD numeric embeddings), parametric activations,
per-parameter learning-rate factors and its own schedule over a fixed 256 epochs. Rebuilding that
inside our recipe would not be RealMLP, so it trains with pytabkit's loop, and that costs, each said
in the report too:

- no ASHA rungs (its loop cannot be stopped at our rungs) and no time limit inside training (the
  trial's timeout stops it, and it is recorded as a timeout);
- its own early stopping: it trains all its epochs and keeps the best one on our validation part, by
  log-loss for classification (pytabkit's default is classification error; our recipe selects by
  loss) and RMSE for regression;
- its own preprocessing of our already-standardised features (missing numeric values given as 0,
  the training mean); no attention maps, no FLOP count.

Defaults: RealMLP-TD's, with its per-task learning rate and activation (0.04 and SELU for
classification, 0.2 and Mish for regression: :meth:`RealMLPLearner.task_defaults`). Search space:
pytabkit's HPO space for RealMLP (``RealMLPParamSampler``, the paper's), without its sampling weights.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, Learner, OnStep
from pipeline.models.registry import ModelInfo
from pipeline.records import StopReason


def hidden_sizes(spec: str) -> list[int]:
    """'256x3' → [256, 256, 256]; '512' → [512]."""
    width, _, depth = str(spec).partition("x")
    return [int(width)] * int(depth or 1)


class RealMLPLearner(Learner):
    """pytabkit's RealMLP_TD estimators on our fold; ``on_step`` is never asked (no rungs)."""

    name = "realmlp"
    kind = "network"
    display_name = "RealMLP"
    description = "RealMLP-TD (pytabkit): an MLP with tuned defaults, its own preprocessing and training loop."
    paper = "https://arxiv.org/abs/2407.04491"
    protocol = ("pytabkit's own training loop: no ASHA rungs, no time limit inside training (the trial timeout "
                "stops it), its own preprocessing, and its best of 256 epochs on our validation part.")
    quick = {"n_epochs": 1, "hidden_sizes": "64x5"}
    defaults = {
        "n_epochs": 256,
        "lr": 0.04,
        "act": "selu",
        "hidden_sizes": "256x3",
        "num_emb_type": "pbld",
        "add_front_scale": True,
        "p_drop": 0.15,
        "wd": 0.02,
        "plr_sigma": 0.1,
        "ls_eps": 0.1,
    }
    space = {
        "num_emb_type": {"choice": ["none", "pbld", "pl", "plr"]},
        "add_front_scale": {"choice": [True, False]},
        "lr": {"loguniform": [0.02, 0.3]},
        "p_drop": {"choice": [0.0, 0.15, 0.3]},
        "wd": {"choice": [0.0, 0.02]},
        "plr_sigma": {"loguniform": [0.05, 0.5]},
        "act": {"choice": ["relu", "selu", "mish"]},
        "hidden_sizes": {"choice": ["256x3", "64x5", "512"]},
        "ls_eps": {"choice": [0.0, 0.1]},
    }

    capabilities = Capabilities(gpu=True, rungs=None, budget="n_epochs", cost=30.0, libraries=("torch", "pytabkit"))

    @classmethod
    def task_defaults(cls, info: ModelInfo, task_type: str) -> dict[str, Any]:
        """RealMLP-TD's regression defaults differ from its classification ones."""
        return {"lr": 0.2, "act": "mish"} if task_type == "regression" else {}

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        for name in ("lightning", "lightning.pytorch", "pytorch_lightning"):  # its banners and tips, per fit
            logging.getLogger(name).setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Lightning's deprecation notes on import
            from pytabkit import RealMLP_TD_Classifier, RealMLP_TD_Regressor

        c, regression = self.config, data.task_type == "regression"
        self.data = data.without_parts()
        params: dict[str, Any] = dict(
            device="cuda:0" if self.use_gpu else "cpu", random_state=self.seed, n_threads=self.threads, verbosity=0,
            n_epochs=int(c["n_epochs"]), lr=float(c["lr"]), act=str(c["act"]), hidden_sizes=hidden_sizes(c["hidden_sizes"]),
            num_emb_type=str(c["num_emb_type"]), add_front_scale=bool(c["add_front_scale"]), p_drop=float(c["p_drop"]),
            wd=float(c["wd"]), plr_sigma=float(c["plr_sigma"]),
            val_metric_name="rmse" if regression else "cross_entropy")
        if regression:
            self.model = RealMLP_TD_Regressor(**params)
        else:
            self.model = RealMLP_TD_Classifier(use_ls=float(c["ls_eps"]) > 0, ls_eps=float(c["ls_eps"]), **params)
        y, yv = data.train.y, data.valid.y
        with warnings.catch_warnings():  # Lightning's tips and deprecation notes, once per fit
            warnings.simplefilter("ignore")
            self.model.fit(self.frame(data.train), y, self.frame(data.valid), yv)
        inner = self.model.alg_interface_
        (_metric, best), = inner.fit_params[0]["stop_epoch"].items()
        n_params = sum(int(p.numel()) for p in inner.model.parameters())
        return FitReport(iterations=int(c["n_epochs"]), best_iteration=int(best), stop_reason=StopReason.MAX_EPOCHS,
                         n_params=n_params, device=params["device"].split(":")[0])

    def frame(self, part: Part) -> pd.DataFrame:
        """Numeric columns (missing as 0, the training mean) and categorical codes as pandas
        categories (code 0, missing or unseen, is a level of its own), which pytabkit encodes itself."""
        cols: dict[str, Any] = {f"n{i}": part.x_num_filled()[:, i] for i in range(part.x_num.shape[1])}
        for j, card in enumerate(self.data.cat_cardinalities):
            cols[f"c{j}"] = pd.Categorical(part.x_cat[:, j], categories=list(range(max(card, 2))))
        return pd.DataFrame(cols, index=range(len(part)))

    def predict(self, part: Part) -> np.ndarray:
        x = self.frame(part)
        if self.data.task_type == "regression":
            return np.asarray(self.model.predict(x), dtype=np.float64).reshape(-1)
        proba = np.asarray(self.model.predict_proba(x), dtype=np.float64)
        full = np.zeros((len(proba), self.data.n_classes))
        full[:, np.asarray(self.model.classes_).astype(int)] = proba
        return full
