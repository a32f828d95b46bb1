"""Learners: how a registered model is fit on a fold, predicts and reports its cost.

- :mod:`.base`: the :class:`~.base.Learner` contract (its :class:`~.base.Capabilities` and its
  models' defaults and space) and :class:`~.base.FitReport`.
- :mod:`.torch`: the one learner of every torch model (the recipe of :mod:`pipeline.train.loop`).
- :mod:`.xgboost`, :mod:`.catboost`, :mod:`.lightgbm`, the forests, :mod:`.tabm`, :mod:`.realmlp`: each
  a Learner that declares its model in class attributes (``name``, ``kind``, ``defaults``, ``space``,
  ...) and is registered by them: a new library is one new module here.
- :mod:`.resolve`: a suite's model entry resolved once per run (:class:`~.resolve.ResolvedModel`).
- :mod:`.trial`: fit one configuration and score it: the unit every trial runs.
- :mod:`.estimator`: scikit-learn estimators over the torch learner.
- :mod:`.compression`: pruning, quantization and PCA of a trained torch learner.

Importing this package imports no torch and no boosting library.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pipeline.models.registry import ModelInfo

if TYPE_CHECKING:
    from pipeline.learners.base import Learner


def make_learner(info: ModelInfo, config: Mapping[str, Any], *, threads: int = 1, use_gpu: bool = False,
                 seed: int = 0, max_seconds: float = math.inf, clock: str = "wall", **extra: Any) -> Learner:
    """The learner of a model with one whole configuration, stopping at ``max_seconds`` on ``clock``
    (``extra``: a distributed learner's ``shard`` and ``wrap`` for a DDP worker)."""
    cls = info.learner_class()
    # The wall clock is every Learner's default: a Learner of one's own written before clocks existed,
    # with an __init__ of its own, is not handed a keyword it does not know.
    own = {"clock": clock} if clock != "wall" else {}
    return cls(info, config, threads=threads, use_gpu=use_gpu, seed=seed, max_seconds=max_seconds, **own, **extra)
