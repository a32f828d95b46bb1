"""TabPFN v2 (Hollmann et al., Nature 2025): a transformer pre-trained on synthetic tables that predicts
in context over the training rows, with no training of its own here.

The package's estimators (``tabpfn.TabPFNClassifier``, ``TabPFNRegressor``) at their defaults (their
preprocessing, and ``n_estimators`` 8), told which columns are categorical. Weights: the v2 checkpoints
(openly licensed; the package's later versions are gated), from ``checkpoint`` /
``regressor_checkpoint``, ``ATTNBENCH_TABPFN_CHECKPOINT`` / ``ATTNBENCH_TABPFN_REGRESSOR_CHECKPOINT``, or
the package's cache (``TABPFN_MODEL_CACHE_DIR``, else its user cache folder). Limits, as the package
declares them for v2: 10,000 training rows, 500 features, 10 classes, and on the CPU 1,000 rows; above
them a cell is not applicable (``ignore_pretraining_limits`` stays off).

A checkpoint's file name must not contain ``v2.5``, ``v2.6``, ``v3`` or ``v3.5``: the package reads its
version from the name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.data.preprocess import FoldData
from pipeline.learners.in_context import InContextLearner, Limits

FILES = {"classification": "tabpfn-v2-classifier-finetuned-zk73skhh.ckpt", "regression": "tabpfn-v2-regressor.ckpt"}
CPU_ROWS = 1_000  # v2's limit on the CPU (the package's MAX_CPU_SAMPLES)


class TabPFNLearner(InContextLearner):
    name = "tabpfn"
    display_name = "TabPFN v2"
    description = "In-context tabular transformer (TabPFN v2): no training, one forward pass over context and queries."
    paper = "https://doi.org/10.1038/s41586-024-08328-6"
    protocol = "in-context: no training, no search; the validation part is unused; pre-trained limits declared."
    requires = ("tabpfn",)
    env = {"classification": "ATTNBENCH_TABPFN_CHECKPOINT", "regression": "ATTNBENCH_TABPFN_REGRESSOR_CHECKPOINT"}
    limits = Limits(max_train_rows=10_000, max_features=500, max_classes=10, max_train_rows_cpu=CPU_ROWS)

    @classmethod
    def cached(cls, task: str) -> list[Path]:
        from tabpfn.model_loading import get_cache_dir

        return [Path(get_cache_dir()) / FILES[task]]

    def estimator(self, regression: bool, path: Path, data: FoldData) -> Any:
        from tabpfn import TabPFNClassifier, TabPFNRegressor

        cls = TabPFNRegressor if regression else TabPFNClassifier
        return cls(model_path=str(path), device=self.device_name(), n_estimators=int(self.config["n_estimators"]),
                   categorical_features_indices=self.categorical_columns() or None, random_state=self.seed,
                   ignore_pretraining_limits=False)
