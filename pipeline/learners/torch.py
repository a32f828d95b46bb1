"""The one learner of every torch model: builds the registered ``nn.Module`` and trains it with the
shared recipe of :mod:`pipeline.train.loop`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, Learner, OnStep
from pipeline.models.registry import ModelInfo
from pipeline.train.precision import AMP
from pipeline.train.recipe import TRAINING_DEFAULTS, TRAINING_SPACE


class TorchLearner(Learner):
    """``shard=(rank, world)`` and ``wrap`` (Ray Train's ``prepare_model``) train one DDP worker's share;
    ``device`` names the torch device to train on (default: CUDA when ``use_gpu`` and there is one).

    After :meth:`fit`, ``module`` is the trained network (best epoch restored) and ``device`` where it is.
    """

    capabilities = Capabilities(gpu=True, rungs="epochs", budget="max_epochs", grace=3, distributed=True, compress=True,
                                cost=30.0,
                                libraries=("torch",))
    kind = "network"
    choices = {"amp": AMP}
    module: Any = None
    device: Any = None

    @classmethod
    def config_defaults(cls, info: ModelInfo) -> dict[str, Any]:
        """The recipe's keys, then the model's own training defaults, then its architecture's."""
        return {**TRAINING_DEFAULTS, **info.training, **info.defaults}

    @classmethod
    def search_space(cls, info: ModelInfo) -> dict[str, Any]:
        """The recipe's learning rate and weight decay, and the model's own space."""
        return {**TRAINING_SPACE, **info.space}

    @classmethod
    def quick_config(cls, info: ModelInfo) -> dict[str, Any]:
        return {"max_epochs": 1, **info.quick}

    @classmethod
    def architectures(cls, info: ModelInfo, defaults: Mapping[str, Any], space: Mapping[str, Any],
                      fixed: Mapping[str, Any], limit: int = 64) -> Iterator[dict[str, Any]]:
        """The architecture arguments of the search, as far as ``suites check`` tries them: the
        defaults, then each searched architecture key at its bounds or choices (at most ``limit``)."""
        arch = {k: v for k, v in defaults.items() if k in info.defaults}
        options: list[list[tuple[str, Any]]] = []
        for k, dom in space.items():
            if k in arch and isinstance(dom, dict) and k not in fixed:
                (kind, values), = dom.items()
                options.append([(k, v) for v in (values if kind == "choice" else values[:2])])
        for combo in itertools.islice(itertools.chain([()], itertools.product(*options)), limit):
            yield {**arch, **dict(combo)}

    @classmethod
    def build_problem(cls, info: ModelInfo, defaults: Mapping[str, Any], space: Mapping[str, Any],
                      fixed: Mapping[str, Any]) -> str | None:
        """Why the architecture cannot be built with any configuration of the search (``fixed:
        {d_token: 30, n_heads: 4}``, say), tried on a tiny input: the defaults, and each searched
        architecture key at its bounds or choices. Imports torch."""
        first = None
        for arch in cls.architectures(info, defaults, space, fixed):
            try:
                info.load()(n_num=3, cat_cardinalities=[3], d_out=2, **arch)
                return None
            except Exception as err:  # the builder's own message says what is wrong
                first = first or err
        return f"its architecture cannot be built ({type(first).__name__}: {first})"

    def __init__(self, *args: Any, shard: tuple[int, int] = (0, 1), wrap: Callable[[Any], Any] | None = None,
                 device: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shard, self.wrap = shard, wrap
        self.device = device  # a torch device (or its name) to train on; None: CUDA when use_gpu and present
        self.precision = "fp32"  # what fit trained in; predict runs in the same
        self.meta: FoldData | None = None

    def build(self, data: FoldData) -> Any:
        """The registered module for ``data``'s features and target, with this configuration's
        architecture arguments."""
        arch = {k: v for k, v in self.config.items() if k in self.info.defaults}
        return self.info.load()(n_num=len(data.num_names), cat_cardinalities=data.cat_cardinalities,
                                d_out=data.d_out, **arch)

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        import torch

        from pipeline.cost import n_params
        from pipeline.train.loop import Recipe, pick_device, train

        torch.set_num_threads(self.threads)
        device = torch.device(self.device) if self.device is not None else pick_device(self.use_gpu)
        torch.manual_seed(self.seed)
        module = self.build(data)
        recipe = Recipe.from_config(self.config, seed=self.seed, max_seconds=self.max_seconds, clock=self.clock)
        on_epoch = None
        if on_step is not None:
            step = on_step

            def on_epoch(point: dict[str, float]) -> bool:
                return step(int(point["epoch"]), float(point["val_score"]))
        res = train(module, data, recipe, device=device, on_epoch=on_epoch, shard=self.shard, wrap=self.wrap)
        self.module, self.device, self.meta = res.model, device, data.without_parts()
        self.precision = res.precision
        return FitReport(iterations=res.epochs, best_iteration=res.best_epoch, stop_reason=res.stop_reason,
                         n_params=n_params(res.model), device=res.device, curve=res.curve, precision=res.precision)

    def predict(self, part: Part) -> np.ndarray:
        from pipeline.train.loop import predict

        assert self.meta is not None, "fit first"
        return predict(self.module, self.meta, part, self.device, precision=self.precision)

    def flops_per_row(self, part: Part) -> float | None:
        from pipeline.cost import flops_per_row
        from pipeline.train.loop import to_tensors

        xn, xc = to_tensors(part, self.device)
        return flops_per_row(self.module, xn, xc)

    def feature_attention(self, part: Part, rows: int = 512) -> np.ndarray | None:
        from pipeline.train.loop import to_tensors

        if not hasattr(self.module, "feature_attention"):
            return None
        xn, xc = to_tensors(part, self.device)
        return np.asarray(self.module.feature_attention(xn[:rows], xc[:rows]).float().cpu().numpy())
