"""Compression of a trained torch model: neuron pruning, dynamic quantization, PCA of numeric inputs.

- :func:`prune_neurons`: structured L2-norm pruning. In every ``nn.Sequential`` where a Linear layer
  feeds the next Linear layer through element-wise modules only (activations, dropout), the pairing
  of the first layer's outputs with the second's inputs is unambiguous; the lowest-norm output neurons
  of the first are removed, with the matching input columns of the second, so the model gets smaller
  and faster. That covers MLP blocks, transformer FFNs, SE and CBAM bottlenecks and MLP heads; a
  Linear whose output feeds a residual sum, a LayerNorm, an attention head split or a module outside
  its Sequential is left alone. ``structural=False`` zeroes the same neurons instead
  (``torch.nn.utils.prune.ln_structured``, weights and biases), which keeps every shape and saves
  nothing until a sparse kernel exploits it.
- :func:`quantize`: post-training dynamic quantization of every Linear to int8
  (``torch.ao.quantization.quantize_dynamic``; CPU only: weights int8, activations quantized on the fly).
- :class:`PCAInput` / :func:`fit_pca`: the numeric inputs projected on their first principal
  components (fitted on the training rows, whitened) before the embedding; the model is trained
  anew on the reduced inputs, so it has fewer numeric tokens.

:class:`CompressedLearner` is a suite's ``compress`` option as a Learner: the compressed variant of a
trial's fitted learner; :func:`variant` scores it with the one evaluation and costs it like the trial,
as a :class:`~pipeline.records.VariantRecord`, and the results store it as a model of its own
(``mlp+prune``), so the accuracy, compute and memory pages show it beside the rest.
"""

from __future__ import annotations

import copy
import io
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from pipeline.cost import Usage
from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, Learner, OnStep
from pipeline.records import StopReason, VariantRecord

# The suite's compression methods, each with whether its variant is a model trained anew on other inputs
# (PCA's, on the principal components) rather than the trained model changed.
RETRAINS = {"prune": False, "quantize": False, "pca": True}
METHODS = tuple(RETRAINS)

# Modules that act on each value alone: a neuron's output reaches the next Linear's matching input only.
ELEMENTWISE = (nn.ReLU, nn.GELU, nn.Dropout, nn.Identity, nn.SiLU, nn.Tanh, nn.LeakyReLU, nn.ELU, nn.Sigmoid,
               nn.Mish, nn.Softplus, nn.SELU, nn.CELU, nn.Hardswish, nn.ReLU6)


# ------------------------------------------------------------------------------------------ sizes
def _numel(value: Any) -> int:
    if isinstance(value, Tensor):
        return value.numel()
    if isinstance(value, tuple | list):
        return sum(_numel(v) for v in value)
    return 0


def n_stored(model: nn.Module) -> int:
    """Numbers in the state_dict (parameters, buffers and quantized packed weights alike)."""
    return sum(_numel(v) for v in model.state_dict().values())


def _nonzero(value: Any) -> int:
    if isinstance(value, Tensor):
        t = value.dequantize() if value.is_quantized else value
        return int((t != 0).sum().item())
    if isinstance(value, tuple | list):
        return sum(_nonzero(v) for v in value)
    return 0


def n_nonzero(model: nn.Module) -> int:
    """Non-zero numbers in the state_dict (what zero-pruning changes)."""
    return sum(_nonzero(v) for v in model.state_dict().values())


def state_bytes(model: nn.Module) -> int:
    """Bytes of ``torch.save(model.state_dict())``: the size of the model on disk."""
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    return buf.tell()


# ---------------------------------------------------------------------------------------- pruning
def linear_pairs(model: nn.Module) -> Iterator[tuple[nn.Sequential, int, int]]:
    """(sequential, i, j): ``seq[i]`` and ``seq[j]`` are Linear layers with only element-wise modules
    between them, so output neuron k of the first is exactly input k of the second."""
    for seq in model.modules():
        if not isinstance(seq, nn.Sequential):
            continue
        children = list(seq)
        for i, first in enumerate(children):
            if not isinstance(first, nn.Linear):
                continue
            j = i + 1
            while j < len(children) and isinstance(children[j], ELEMENTWISE):
                j += 1
            if j < len(children) and isinstance(children[j], nn.Linear):
                yield seq, i, j


def _linear(seq: nn.Sequential, i: int) -> nn.Linear:
    layer = seq[i]
    assert isinstance(layer, nn.Linear), f"{type(layer).__name__} at {i} is not a Linear layer"
    return layer


def _keep(first: nn.Linear, amount: float) -> Tensor:
    """Indices (ascending) of the output neurons to keep: the highest L2 norms of the weight rows."""
    n_out = first.out_features
    n_keep = max(1, n_out - round(n_out * amount))
    return first.weight.detach().norm(dim=1).topk(n_keep).indices.sort().values


def _sliced(layer: nn.Linear, rows: Tensor | None = None, cols: Tensor | None = None) -> nn.Linear:
    w = layer.weight.detach()
    w = w if rows is None else w[rows]
    w = w if cols is None else w[:, cols]
    new = nn.Linear(w.shape[1], w.shape[0], bias=layer.bias is not None, device=w.device, dtype=w.dtype)
    with torch.no_grad():
        new.weight.copy_(w)
        if layer.bias is not None:
            new.bias.copy_(layer.bias.detach() if rows is None else layer.bias.detach()[rows])
    return new


def prune_neurons(model: nn.Module, amount: float = 0.3, *, structural: bool = True) -> tuple[nn.Module, int]:
    """A pruned copy of ``model`` and the number of neurons removed (or zeroed); see the module doc.

    ``amount`` is the fraction of each hidden Linear's output neurons to drop (at least one stays).
    """
    if not 0.0 <= amount < 1.0:
        raise ValueError(f"{amount=} must be in [0, 1)")
    model = copy.deepcopy(model)
    removed = 0
    if structural:
        # Layers are looked up as each pair is cut: one can be the second of a pair and the first of the next.
        pairs = [(seq, i, j) for seq, i, j in linear_pairs(model)]
        for seq, i, j in pairs:
            first, second = _linear(seq, i), _linear(seq, j)
            keep = _keep(first, amount)
            removed += first.out_features - len(keep)
            seq[i] = _sliced(first, rows=keep)
            seq[j] = _sliced(second, cols=keep)
        return model, removed
    from torch.nn.utils import prune

    for seq, i, j in list(linear_pairs(model)):
        first, second = _linear(seq, i), _linear(seq, j)
        n_drop = first.out_features - len(_keep(first, amount))
        prune.ln_structured(first, "weight", amount=n_drop, n=2, dim=0)
        mask = first.get_buffer("weight_mask")  # out × in, set by ln_structured
        drop = mask.sum(dim=1) == 0  # out
        prune.remove(first, "weight")
        with torch.no_grad():
            bias: Tensor | None = first.bias
            if bias is not None:
                bias[drop] = 0.0
            # The next layer's matching inputs too: no change to the outputs (they receive act(0) = 0
            # after ReLU/GELU), but the next pair then ranks its neurons as the structural cut does.
            second.weight[:, drop] = 0.0
        removed += int(drop.sum())
    return model, removed


# ----------------------------------------------------------------------------------- quantization
def quantize(model: nn.Module) -> nn.Module:
    """An int8 dynamically quantized copy (every nn.Linear), on the CPU, in eval mode."""
    model = copy.deepcopy(model).cpu().eval()
    with warnings.catch_warnings():
        # torch.ao.quantization is deprecated in favour of torchao, which is not a dependency here.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)


# -------------------------------------------------------------------------------------------- PCA
class PCAInput(nn.Module):
    """``model`` fed ``(x_num − mean) @ projectionᵀ``: the whitened first principal components of the
    numeric inputs (fitted on training rows by :func:`fit_pca`); categorical codes pass through.

    >>> PCAInput(nn.Identity(), torch.zeros(3), torch.eye(2, 3)).components
    2
    """

    mean: Tensor
    projection: Tensor

    def __init__(self, model: nn.Module, mean: Tensor, projection: Tensor) -> None:
        super().__init__()
        if projection.ndim != 2 or projection.shape[1] != mean.shape[0]:
            raise ValueError(f"projection {tuple(projection.shape)} must be components × {mean.shape[0]}")
        self.model = model
        self.register_buffer("mean", mean.float())
        self.register_buffer("projection", projection.float())

    @property
    def components(self) -> int:
        return self.projection.shape[0]

    def reduce(self, x_num: Tensor) -> Tensor:
        return (x_num - self.mean) @ self.projection.T  # B × r

    def forward(self, x_num: Tensor, x_cat: Tensor, **kwargs: Any) -> Any:
        return self.model(self.reduce(x_num), x_cat, **kwargs)


def fit_pca(x_num: np.ndarray, n_components: int | float,
            seed: int = 0) -> tuple[np.ndarray, np.ndarray, float]:
    """(mean, whitened projection r × n, explained variance ratio) from the training rows' numerics.

    ``n_components`` is a count, or a fraction in (0, 1) of the variance to keep (as in scikit-learn).
    """
    from sklearn.decomposition import PCA

    if x_num.shape[1] == 0:
        raise ValueError("PCA needs numeric features; this dataset has none")
    if isinstance(n_components, int) and not 1 <= n_components <= x_num.shape[1]:
        raise ValueError(f"{n_components=} must be between 1 and the {x_num.shape[1]} numeric features")
    pca = PCA(n_components=n_components, whiten=True, random_state=seed).fit(np.nan_to_num(x_num))
    projection = pca.components_ / np.sqrt(pca.explained_variance_ + 1e-12)[:, None]  # r × n
    explained = float(pca.explained_variance_ratio_.sum())
    return pca.mean_.astype(np.float32), projection.astype(np.float32), explained


def pca_fold(data: FoldData, mean: np.ndarray, projection: np.ndarray) -> FoldData:
    """``data`` with its numeric features replaced by the principal components."""

    def reduce(part: Part) -> Part:
        return Part(((part.x_num_filled() - mean) @ projection.T).astype(np.float32), part.x_cat, part.y)

    names = [f"pc{i}" for i in range(projection.shape[0])]
    return replace(data, num_names=names, train=reduce(data.train), valid=reduce(data.valid),
                   test=reduce(data.test))


def train_pca(data: FoldData, n_components: int | float, *, name: str, config: dict[str, Any] | None = None,
              seed: int = 0, device: torch.device | None = None, max_seconds: float = math.inf,
              clock: str = "wall") -> tuple[PCAInput, float]:
    """A registered model trained on the principal components of ``data``'s numerics, wrapped so that it
    takes the original inputs; and the explained variance ratio kept."""
    from pipeline.learners.torch import TorchLearner
    from pipeline.models.registry import get

    mean, projection, explained = fit_pca(data.train.x_num, n_components, seed)
    reduced = pca_fold(data, mean, projection)
    info = get(name)
    learner = TorchLearner(info, {**info.config_defaults(), **(config or {})}, threads=torch.get_num_threads(),
                           seed=seed, max_seconds=max_seconds, clock=clock, device=device)
    learner.fit(reduced)
    wrapped = PCAInput(learner.module, torch.as_tensor(mean), torch.as_tensor(projection)).to(device or "cpu")
    return wrapped, explained


# --------------------------------------------------------------------------------- applicability
class NotApplicable(ValueError):
    """A compression method that cannot change this model: its variant would repeat the model's own
    figures under another name, so none is made."""


def not_applicable(module: nn.Module, method: str) -> str | None:
    """Why ``method`` would leave ``module`` as it is; None where it changes it. Pruning needs a Linear
    layer that feeds another through element-wise modules only (:func:`linear_pairs`); quantization, a
    Linear layer. PCA depends on the data (it needs numeric features), not on the module."""
    if method in ("prune", "prune_zero") and next(linear_pairs(module), None) is None:
        return ("it has no Linear layer feeding another Linear through element-wise modules only (an MLP block, "
                "a feed-forward layer), so pruning would remove no neuron")
    if method == "quantize" and not any(isinstance(m, nn.Linear) for m in module.modules()):
        return "it has no Linear layer, so int8 dynamic quantization would change nothing"
    return None


def applicable_to(module: nn.Module) -> tuple[str, ...]:
    """The suite's compression methods (prune, quantize, pca) that change ``module``."""
    return tuple(m for m in METHODS if not_applicable(module, m) is None)


def _built(info: Any, architectures: Iterator[dict[str, Any]]) -> list[nn.Module]:
    """The model ``info`` names, built on a tiny input with each architecture that builds."""
    out = []
    for arch in architectures:
        try:
            out.append(info.load()(n_num=3, cat_cardinalities=[3], d_out=2, **arch))
        except Exception:  # one that cannot be built is build_problem's to report
            continue
    return out


def applicable(info: Any) -> tuple[str, ...]:
    """The compression methods that change the model ``info`` names at its defaults (built on a tiny
    input): what ``attnbench models`` lists. All three where it cannot be built so."""
    from pipeline.learners.torch import TorchLearner

    built = _built(info, TorchLearner.architectures(info, info.config_defaults(), {}, {}, limit=1))
    return applicable_to(built[0]) if built else METHODS


def compress_problem(info: Any, defaults: Mapping[str, Any], space: Mapping[str, Any], fixed: Mapping[str, Any],
                     methods: Sequence[str]) -> str | None:
    """Why a suite entry's ``compress`` asks for a method that changes no architecture of its search
    (``suites check`` and ``run`` refuse it); None where each method changes some. Where only some
    configurations are left as they were, their trials record the variant as not applicable."""
    from pipeline.learners.torch import TorchLearner

    built = _built(info, TorchLearner.architectures(info, defaults, space, fixed))
    for method in methods:
        reasons = [not_applicable(module, method) for module in built]
        if built and all(reasons):
            return (f"compress {method!r} does not apply: {reasons[0]}; remove it from compress (what applies "
                    f"to this model: {', '.join(applicable_to(built[0])) or 'none'})")
    return None


# -------------------------------------------------------------------------------------- run option
PRUNE_AMOUNT = 0.3  # a suite's `compress: [prune]` drops this share of each hidden layer's neurons
PCA_VARIANCE = 0.9  # `compress: [pca]` keeps the components that explain this share of the variance


class CompressedLearner(Learner):
    """A trained torch model's compressed variant (a suite's ``compress`` option), as a Learner of its
    own: :meth:`fit` prunes or quantizes the trained model, or trains the same configuration anew on the
    principal components (``pca``); :meth:`predict` and the one evaluation then score it as any model
    is scored. ``quantize`` runs on the CPU (int8 kernels); its FLOPs are not counted."""

    capabilities = Capabilities(libraries=("torch",))

    def __init__(self, trained: Any, method: str, *, max_seconds: float = math.inf) -> None:
        if method not in METHODS:
            raise ValueError(f"{method=} must be one of {', '.join(METHODS)}")
        super().__init__(trained.info, trained.config, threads=trained.threads, use_gpu=trained.use_gpu,
                         seed=trained.seed, max_seconds=max_seconds, clock=trained.clock)
        self.trained, self.method = trained, method
        self.device = torch.device("cpu") if method == "quantize" else trained.device
        self.meta: FoldData = trained.meta
        self.details: dict[str, Any] = {"method": method}
        self.module: nn.Module | None = None

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        t = self.trained
        reason = not_applicable(t.module, self.method)
        if reason is not None:
            raise NotApplicable(f"{self.method} does not apply to this {self.info.name}: {reason}")
        if self.method == "prune":
            module, removed = prune_neurons(t.module, PRUNE_AMOUNT, structural=True)
            self.details.update(amount=PRUNE_AMOUNT, neurons_removed=removed)
        elif self.method == "quantize":
            module = quantize(t.module)
        else:
            module, explained = train_pca(data, PCA_VARIANCE, name=self.info.name, config=self.config, seed=self.seed,
                                          device=self.device, max_seconds=self.max_seconds, clock=self.clock)
            self.details.update(n_components=module.components, n_num=len(data.num_names),
                                explained_variance=explained)
        self.module = module.eval()
        # int8 packed weights are not parameters: count the numbers stored for the quantized model
        n = n_stored(module) if self.method == "quantize" else sum(p.numel() for p in module.parameters())
        return FitReport(iterations=0, best_iteration=0, stop_reason=StopReason.COMPRESSED, n_params=n,
                         device=str(self.device))

    def predict(self, part: Part) -> np.ndarray:
        from pipeline.train.loop import predict

        assert self.module is not None, "fit first"
        return predict(self.module, self.meta, part, self.device)

    def flops_per_row(self, part: Part) -> float | None:
        from pipeline.cost import flops_per_row
        from pipeline.train.loop import to_tensors

        if self.module is None or self.method == "quantize":  # int8 kernels are not counted
            return None
        return flops_per_row(self.module, *to_tensors(part, self.device))


def variant(learner: Any, data: FoldData, method: str, trained: Usage, *, max_seconds: float = math.inf) -> VariantRecord:
    """A fitted :class:`~pipeline.learners.torch.TorchLearner`'s compressed variant
    (:class:`CompressedLearner`), scored by the one evaluation and costed as a trial is: validation and
    test scores, prediction time, parameters, FLOPs. Its cost counts from the start: pruning and
    quantization need the trained model, so what ``trained`` (the fit's usage) took comes first;
    a model trained anew (``pca``) costs its own training only."""
    from pipeline.cost import Measure
    from pipeline.evaluation import evaluate

    compressed = CompressedLearner(learner, method, max_seconds=max_seconds)
    with Measure(gpu=compressed.device.type == "cuda") as m:
        report = compressed.fit(data)
    assert compressed.module is not None
    own = m.usage
    retrained = RETRAINS[method]
    before = Usage(seconds=0.0) if retrained else trained

    def peak(key: str) -> float | None:
        values = [v for v in (getattr(before, key), getattr(own, key)) if v is not None]
        return max(values) if values else None

    scores: dict[str, Any] = evaluate(compressed.predict, data).as_dict()  # validation and test, as a trial's
    return VariantRecord(method=method, retrained=retrained, **scores,
                         fit_seconds=before.seconds + own.seconds, compress_seconds=own.seconds,
                         peak_cpu_mb=peak("peak_cpu_mb"), peak_gpu_mb=peak("peak_gpu_mb"), n_params=report.n_params,
                         state_bytes=state_bytes(compressed.module), flops_per_row=compressed.flops_per_row(data.test),
                         device=report.device, details=compressed.details)
