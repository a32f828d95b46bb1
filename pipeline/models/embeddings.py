"""Feature tokenizers (each feature becomes a d-dimensional token) and positional options.

Tokenizers: per-feature numeric map ``w_j * x_j + b_j`` or a joint (shared) one; per-feature categorical
tables or one shared table. Positions: features have no order, so the default for sequence-style models
is a learned per-feature identity embedding; learned positions, sinusoidal, RoPE and ALiBi are options
for ablations (:func:`make_position`, and ``rope`` / :func:`alibi_bias` inside attention).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

NUM_EMBEDDINGS = ("per_feature", "joint")
CAT_EMBEDDINGS = ("per_feature", "shared")
POSITIONS = ("none", "identity", "learned", "sinusoidal", "rope", "alibi")


def check_io(n_num: int, cat_cardinalities: list[int], d_out: int) -> None:
    """The checks every model's constructor shares; the error names the offending values."""
    if n_num < 0 or d_out < 1 or n_num + len(cat_cardinalities) == 0 or any(c < 1 for c in cat_cardinalities):
        raise ValueError(
            f"{n_num=}, {cat_cardinalities=}, {d_out=}: need n_num >= 0, every cardinality >= 1 "
            "(code 0 is missing/unseen), at least one feature and d_out >= 1"
        )


def _uniform_(t: Tensor, d: int) -> Tensor:
    bound = 1 / math.sqrt(d)
    return nn.init.uniform_(t, -bound, bound)


class NumericEmbedding(nn.Module):
    """Numeric feature j → ``w_j * x_j + b_j`` (one weight and bias vector per feature).

    >>> NumericEmbedding(3, 8)(torch.zeros(2, 3)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(self, n_features: int, d_token: int) -> None:
        super().__init__()
        if n_features < 0 or d_token < 1:
            raise ValueError(f"{n_features=} must be >= 0 and {d_token=} >= 1")
        self.weight = nn.Parameter(_uniform_(torch.empty(n_features, d_token), d_token))
        self.bias = nn.Parameter(_uniform_(torch.empty(n_features, d_token), d_token))

    def forward(self, x_num: Tensor) -> Tensor:
        return x_num.unsqueeze(-1) * self.weight + self.bias  # B × n × d


class JointNumericEmbedding(nn.Module):
    """Every numeric feature through one shared map ``w * x_j + b``: 2d parameters instead of 2nd.

    Tokens of different features are then told apart only by a feature-identity (or position)
    embedding, which the sequence-style models add by default.

    >>> JointNumericEmbedding(3, 8)(torch.zeros(2, 3)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(self, n_features: int, d_token: int) -> None:
        super().__init__()
        if n_features < 0 or d_token < 1:
            raise ValueError(f"{n_features=} must be >= 0 and {d_token=} >= 1")
        self.weight = nn.Parameter(_uniform_(torch.empty(d_token), d_token))
        self.bias = nn.Parameter(_uniform_(torch.empty(d_token), d_token))

    def forward(self, x_num: Tensor) -> Tensor:
        return x_num.unsqueeze(-1) * self.weight + self.bias  # B × n × d


class CategoricalEmbedding(nn.Module):
    """Categorical feature i → a row of its own table (V_i × d), all tables in one tensor.

    >>> CategoricalEmbedding([3, 5], 4)(torch.tensor([[0, 4], [2, 1]])).shape
    torch.Size([2, 2, 4])
    """

    offsets: Tensor

    def __init__(self, cardinalities: list[int], d_token: int) -> None:
        super().__init__()
        if any(c < 1 for c in cardinalities):
            raise ValueError(f"every cardinality must be >= 1, got {cardinalities=}")
        offsets = torch.tensor([0, *cardinalities[:-1]], dtype=torch.long).cumsum(0)
        self.register_buffer("offsets", offsets, persistent=False)
        self.embedding = nn.Embedding(max(sum(cardinalities), 1), d_token)
        self.bias = nn.Parameter(torch.zeros(len(cardinalities), d_token))
        _uniform_(self.embedding.weight, d_token)
        _uniform_(self.bias, d_token)

    def forward(self, x_cat: Tensor) -> Tensor:
        return self.embedding(x_cat + self.offsets) + self.bias  # B × k × d


class SharedCategoricalEmbedding(nn.Module):
    """All categorical features share one table (V_max × d); a per-feature bias tells them apart.

    Saves memory when many features have similar cardinality: V_max·d instead of ΣV_i·d rows.

    >>> SharedCategoricalEmbedding([3, 5], 4)(torch.tensor([[0, 4], [2, 1]])).shape
    torch.Size([2, 2, 4])
    """

    def __init__(self, cardinalities: list[int], d_token: int) -> None:
        super().__init__()
        if any(c < 1 for c in cardinalities):
            raise ValueError(f"every cardinality must be >= 1, got {cardinalities=}")
        self.embedding = nn.Embedding(max(cardinalities, default=1), d_token)
        self.bias = nn.Parameter(torch.zeros(len(cardinalities), d_token))
        _uniform_(self.embedding.weight, d_token)
        _uniform_(self.bias, d_token)

    def forward(self, x_cat: Tensor) -> Tensor:
        return self.embedding(x_cat) + self.bias  # B × k × d


def in_autocast_dtype(x: Tensor) -> Tensor:
    """``x`` in the autocast dtype where autocast is on for its device, else as it is. A model that casts
    its tokens once keeps its residual stream in bf16: autocast alone would keep it in fp32 and cast it
    back and forth around every matrix product (a quarter of an FT-Transformer step on the CPU)."""
    kind = x.device.type
    return x.to(torch.get_autocast_dtype(kind)) if torch.is_autocast_enabled(kind) else x


class FeatureTokenizer(nn.Module):
    """Numeric and categorical tokens stacked into E (B × (n + k) × d), numeric features first.

    ``num_embedding`` is "per_feature" (default) or "joint"; ``cat_embedding`` is "per_feature"
    (default) or "shared".

    >>> FeatureTokenizer(2, [3], 4)(torch.zeros(5, 2), torch.zeros(5, 1, dtype=torch.long)).shape
    torch.Size([5, 3, 4])
    """

    def __init__(self, n_num: int, cat_cardinalities: list[int], d_token: int, *,
                 num_embedding: str = "per_feature", cat_embedding: str = "per_feature") -> None:
        super().__init__()
        if n_num + len(cat_cardinalities) == 0:
            raise ValueError(f"a model needs at least one feature: {n_num=}, {cat_cardinalities=}")
        if num_embedding not in NUM_EMBEDDINGS or cat_embedding not in CAT_EMBEDDINGS:
            raise ValueError(f"{num_embedding=} must be one of {NUM_EMBEDDINGS}, "
                             f"{cat_embedding=} one of {CAT_EMBEDDINGS}")
        num_cls = NumericEmbedding if num_embedding == "per_feature" else JointNumericEmbedding
        cat_cls = CategoricalEmbedding if cat_embedding == "per_feature" else SharedCategoricalEmbedding
        self.num = num_cls(n_num, d_token) if n_num else None
        self.cat = cat_cls(cat_cardinalities, d_token) if cat_cardinalities else None

    def forward(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        parts = []
        if self.num is not None:
            parts.append(self.num(x_num))
        if self.cat is not None:
            parts.append(self.cat(x_cat))
        return in_autocast_dtype(torch.cat(parts, dim=1))  # B × F × d (bf16 under autocast)


class FeatureIdentityEmbedding(nn.Module):
    """Adds a learned vector per feature: the default positional information, since features have no order."""

    def __init__(self, n_features: int, d_token: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(_uniform_(torch.empty(n_features, d_token), d_token))

    def forward(self, x: Tensor) -> Tensor:
        return x + self.weight  # B × F × d


class LearnedPosition(nn.Module):
    """Adds a learned vector per position 0..T-1 (T ≤ max_len), for sequences of varying length.

    On a fixed-length feature sequence it is the identity embedding under another name; it is kept for
    the positional ablation and for sequences whose length differs from the feature count.
    """

    def __init__(self, max_len: int, d_token: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(max_len, d_token) * 0.02)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.weight[: x.shape[1]]  # B × T × d


def sinusoidal_table(n: int, d: int, base: float = 10000.0) -> Tensor:
    """The transformer's fixed positions: sin on even channels, cos on odd ones (n × d)."""
    pos = torch.arange(n, dtype=torch.float32)[:, None]  # n × 1
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)  # ⌈d/2⌉
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: d // 2])
    return table


class SinusoidalPosition(nn.Module):
    """Adds :func:`sinusoidal_table` (no parameters)."""

    def forward(self, x: Tensor) -> Tensor:
        return x + sinusoidal_table(x.shape[1], x.shape[2]).to(x)  # B × T × d


def apply_rope(x: Tensor, base: float = 10000.0) -> Tensor:
    """Rotary position embedding of queries or keys (… × T × dh): channel pairs (c, c + dh/2) turn by
    an angle proportional to the position, so q·k depends on positions only through their difference.
    An odd last channel passes through unrotated.
    """
    t, dh = x.shape[-2], x.shape[-1]
    half = dh // 2
    freq = base ** (-torch.arange(half, device=x.device, dtype=torch.float32) / max(half, 1))  # half
    angle = torch.arange(t, device=x.device, dtype=torch.float32)[:, None] * freq  # T × half
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2, rest = x[..., :half], x[..., half: 2 * half], x[..., 2 * half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest], dim=-1)  # … × T × dh


def alibi_bias(n_heads: int, n: int) -> Tensor:
    """ALiBi's additive attention bias −m_h·|i − j| (h × n × n), slopes m_h = 2^(−8(h+1)/n_heads).

    The symmetric (non-causal) form: a token's attention decays with distance on both sides.
    """
    slopes = 2.0 ** (-8.0 * torch.arange(1, n_heads + 1, dtype=torch.float32) / n_heads)  # h
    pos = torch.arange(n, dtype=torch.float32)
    return -slopes[:, None, None] * (pos[None, :] - pos[:, None]).abs()  # h × n × n


def make_position(kind: str, n_positions: int, d_token: int) -> nn.Module:
    """The additive part of a positional option; "rope", "alibi" and "none" add nothing to the tokens
    (RoPE and ALiBi act inside attention)."""
    if kind not in POSITIONS:
        raise ValueError(f"position={kind!r} must be one of {POSITIONS}")
    if kind == "identity":
        return FeatureIdentityEmbedding(n_positions, d_token)
    if kind == "learned":
        return LearnedPosition(n_positions, d_token)
    if kind == "sinusoidal":
        return SinusoidalPosition()
    return nn.Identity()
