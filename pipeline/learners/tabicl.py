"""TabICL (Qu et al., 2025): a tabular foundation model that predicts in context, column-then-row
attention and in-context learning over the training rows, with no training of its own here.

The package's estimators (``tabicl.TabICLClassifier``, ``TabICLRegressor``) at their defaults: its
preprocessing, feature and class shuffles, and an ensemble of ``n_estimators`` (8) views. Weights from
``checkpoint`` / ``regressor_checkpoint``, ``ATTNBENCH_TABICL_CHECKPOINT`` /
``ATTNBENCH_TABICL_REGRESSOR_CHECKPOINT``, or the package's Hugging Face cache; it is never allowed to
download (``allow_auto_download=False``). Limits: the package enforces none; it was pre-trained on up to
about 48,000 rows and 100 features and declares those, and takes more than ``max_classes`` classes by its
own many-class strategy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.data.preprocess import FoldData
from pipeline.learners.in_context import InContextLearner, Limits

REPO = "jingang/TabICL"
FILES = {"classification": "tabicl-classifier-v2-20260212.ckpt", "regression": "tabicl-regressor-v2-20260212.ckpt"}


class TabICLLearner(InContextLearner):
    name = "tabicl"
    display_name = "TabICL"
    description = "In-context tabular transformer (TabICL v2): no training, one forward pass over context and queries."
    paper = "https://arxiv.org/abs/2502.05564"
    protocol = "in-context: no training, no search; the validation part is unused; pre-trained limits declared."
    requires = ("tabicl",)
    env = {"classification": "ATTNBENCH_TABICL_CHECKPOINT", "regression": "ATTNBENCH_TABICL_REGRESSOR_CHECKPOINT"}
    limits = Limits(max_train_rows=48_000, max_features=100)

    @classmethod
    def cached(cls, task: str) -> list[Path]:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(REPO, FILES[task])
        return [Path(hit)] if isinstance(hit, str) else []

    def estimator(self, regression: bool, path: Path, data: FoldData) -> Any:
        from tabicl import TabICLClassifier, TabICLRegressor

        cls = TabICLRegressor if regression else TabICLClassifier
        return cls(model_path=str(path), allow_auto_download=False, device=self.device_name(),
                   n_estimators=int(self.config["n_estimators"]), random_state=self.seed, n_jobs=self.threads)
