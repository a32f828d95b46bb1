"""Attention primitives shared by the models; each is small and tested against a naive version.

Shapes: B batch, h heads, Tq / Tk query / key tokens, d width, dh = d / h, C channels, L positions.
Masks follow ``torch.nn.functional.scaled_dot_product_attention``: a boolean mask is True where a query
may attend to a key (a padding mask of valid keys is ``valid[:, None, None, :]``); a float mask is added
to the scores (0 keeps a pair, −inf removes it). Masks broadcast to B × h × Tq × Tk. Every query must
keep at least one key, or its row of weights is NaN; the models guarantee it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.models.embeddings import apply_rope

DROPOUT_BITS = 15  # a CPU dropout mask's resolution: p in steps of 2⁻¹⁵


def dropout_mask(shape: torch.Size, p: float, device: torch.device) -> Tensor:
    """1 where an element is kept, 0 where dropped (int16), each kept with probability 1 − p' where p'
    is p rounded to a multiple of 2⁻¹⁵. One 32-bit draw from torch's generator gives two elements their
    15 random bits each: about 3× faster than ``rand_like`` on the CPU in bf16 (2× in fp32)."""
    n = math.prod(shape)
    bits = torch.empty((n + 1) // 2, dtype=torch.int32, device=device).random_().view(torch.int16)[:n]
    return bits.view(shape).bitwise_and_(2**DROPOUT_BITS - 1).ge_(round(p * 2**DROPOUT_BITS))


def apply_dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Inverted dropout: each element kept with probability 1 − p and scaled by 1 / (1 − p).

    The same law as ``F.dropout``; on the CPU the mask is :func:`dropout_mask` (p rounded to 2⁻¹⁵, and
    the scale is that rounded p's, so the mean is kept exactly), which with its backward takes about a
    third of ``F.dropout``'s time there in bf16 (whose Bernoulli sampling dominated an FT-Transformer
    step: benchmarks/ft_transformer_vs_rtdl.py). Elsewhere ``F.dropout``.
    """
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training)
    kept = 1.0 - round(p * 2**DROPOUT_BITS) / 2**DROPOUT_BITS
    return x * dropout_mask(x.shape, p, x.device).to(x.dtype).mul_(1.0 / kept)


def softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dimension, computed in fp32 and returned in the scores' dtype: more exact
    in bf16, and on the CPU faster too (with its backward, a third of the bf16 kernel's time on 25 keys)."""
    if scores.dtype == torch.float32:
        return scores.softmax(-1)
    return scores.softmax(-1, dtype=torch.float32).to(scores.dtype)


class Dropout(nn.Dropout):
    """``nn.Dropout`` through :func:`apply_dropout` (the models' every dropout layer)."""

    def forward(self, x: Tensor) -> Tensor:
        return apply_dropout(x, self.p, self.training)


def _masked(scores: Tensor, mask: Tensor | None) -> Tensor:
    if mask is None:
        return scores
    if mask.dtype == torch.bool:
        return scores.masked_fill(~mask, float("-inf"))
    return scores + mask


def attention(q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None = None, dropout: float = 0.0,
              scale: float | None = None, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
    """softmax(q kᵀ · scale + mask) v with dropout on the weights; ``scale`` defaults to 1/√dh.

    The fused kernel runs unless the weights are wanted; then a plain path returns them (before dropout).
    The plain path also serves dropout on the CPU, where the fused call falls back to a generic kernel
    that is slower (about 5 % of an FT-Transformer training step; benchmarks/ft_transformer_vs_rtdl.py),
    and bf16 on the CPU, where the fused kernel took 10× the plain one on 25 tokens.
    Pass ``dropout`` only in training. q: B × h × Tq × dh, k and v: B × h × Tk × dh →
    (B × h × Tq × dh, B × h × Tq × Tk or None).

    >>> attention(torch.zeros(2, 1, 3, 4), torch.zeros(2, 1, 5, 4), torch.ones(2, 1, 5, 4))[0][0, 0, 0]
    tensor([1., 1., 1., 1.])
    """
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.to(q.dtype)  # the fused kernel wants the query's dtype (bf16 under autocast)
    cpu_plain = q.device.type == "cpu" and (dropout > 0 or q.dtype != torch.float32)
    if not need_weights and not cpu_plain:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scale), None
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    w = softmax(_masked((q * scale) @ k.transpose(-2, -1), mask))  # B × h × Tq × Tk (q, the smaller, scaled)
    return apply_dropout(w, dropout) @ v, w if need_weights else None


def block_keys(n_q: int, n_k: int, block_size: int,
               device: torch.device | None = None) -> tuple[Tensor, Tensor]:
    """Which keys each query sees under blockwise attention: indices (Tq × bs) and their validity.

    Keys are cut into blocks of ``block_size`` (the last may be short). For self-attention (Tq == Tk)
    query i sees the block holding key i; otherwise queries are spread evenly over the key blocks
    (query i → block ⌊i · n_blocks / Tq⌋). Invalid slots (past the last key) are clamped and flagged.
    """
    bs = min(block_size, n_k)
    n_blocks = math.ceil(n_k / bs)
    i = torch.arange(n_q, device=device)
    block = i // bs if n_q == n_k else i * n_blocks // n_q  # Tq
    idx = block[:, None] * bs + torch.arange(bs, device=device)  # Tq × bs
    return idx.clamp(max=n_k - 1), idx < n_k


def blockwise_attention(q: Tensor, k: Tensor, v: Tensor, block_size: int, *, mask: Tensor | None = None,
                        dropout: float = 0.0, scale: float | None = None,
                        need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
    """Attention within blocks (see :func:`block_keys`): each query scores only the ``block_size`` keys of
    its block, O(Tq · bs · dh) instead of O(Tq · Tk · dh). One block (bs ≥ Tk) is full attention.

    The weights come back on the dense grid (B × h × Tq × Tk), zero outside each query's block.

    Self-attention (Tq == Tk) cuts q, k and v into their blocks (B × h × nb × bs × dh) and attends
    within each (scores B × h × nb × bs × bs, no copies of keys); cross-attention gathers
    each query's block of keys (Tq × bs copies of keys: slower, and more memory than full attention
    with the fused kernel; see benchmarks/attention_scaling.py).
    """
    b, h, tq, dh = q.shape
    tk = k.shape[-2]
    idx, valid = block_keys(tq, tk, block_size, q.device)  # Tq × bs
    bs = idx.shape[1]
    if tq == tk:
        y, w = _self_blockwise(q, k, v, bs, mask, dropout, scale, need_weights)
        if w is None:
            return y, None
        dense = w.new_zeros(b, h, tq, tk).scatter_add_(-1, idx.expand(b, h, tq, bs), w)  # B × h × Tq × Tk
        return y, dense
    scale = 1 / math.sqrt(dh) if scale is None else scale
    scores = torch.einsum("bhqd,bhqkd->bhqk", q, k[..., idx, :]) * scale  # B × h × Tq × bs
    scores = scores.masked_fill(~valid, float("-inf"))
    if mask is not None:
        full = torch.broadcast_to(mask, (b, h, tq, tk))
        m = torch.gather(full, -1, idx.expand(b, h, tq, bs))  # B × h × Tq × bs
        scores = _masked(scores, m if m.dtype == torch.bool else m.to(scores.dtype))
    w = softmax(scores)  # B × h × Tq × bs
    y = torch.einsum("bhqk,bhqkd->bhqd", apply_dropout(w, dropout), v[..., idx, :])  # B × h × Tq × dh
    if not need_weights:
        return y, None
    dense = w.new_zeros(b, h, tq, tk).scatter_add_(-1, idx.expand(b, h, tq, bs), w)  # B × h × Tq × Tk
    return y, dense


def _self_blockwise(q: Tensor, k: Tensor, v: Tensor, bs: int, mask: Tensor | None, dropout: float,
                    scale: float | None, need_weights: bool) -> tuple[Tensor, Tensor | None]:
    """Self-attention within contiguous blocks of ``bs`` tokens; weights (if wanted) as B × h × T × bs."""
    b, h, t, dh = q.shape
    nb = math.ceil(t / bs)
    pad = nb * bs - t

    def blocks(x: Tensor) -> Tensor:  # B × h × T × c → B × h × nb × bs × c
        return (F.pad(x, (0, 0, 0, pad)) if pad else x).reshape(b, h, nb, bs, x.shape[-1])

    keep = None
    if mask is not None:
        full = torch.broadcast_to(mask, (b, h, t, t))
        if full.dtype != torch.bool:
            full = full.to(q.dtype)
        drop, keep_ = (False, True) if full.dtype == torch.bool else (float("-inf"), 0.0)
        # Padding keys are masked; padding queries keep the real keys (an all-masked row would be NaN,
        # and its gradient would reach the real keys of its block).
        full = F.pad(F.pad(full, (0, pad), value=drop), (0, 0, 0, pad), value=keep_)
        keep = torch.diagonal(full.view(b, h, nb, bs, nb, bs), dim1=2, dim2=4).permute(0, 1, 4, 2, 3)
    if pad:  # padding keys of the last block are never attended; padding queries are cut off below
        valid = (torch.arange(nb * bs, device=q.device) < t).view(nb, 1, bs)  # nb × 1 × bs
        if keep is None:
            keep = valid
        elif keep.dtype == torch.bool:
            keep = keep & valid
        else:
            keep = keep.masked_fill(~valid, float("-inf"))
    # The plain path even without weights: on many tiny blocks the fused kernel's per-problem overhead
    # dominates (about 2× slower at bs = 16 on the CPU).
    scale = 1 / math.sqrt(dh) if scale is None else scale
    w = softmax(_masked(blocks(q) @ blocks(k).transpose(-2, -1) * scale, keep))  # B × h × nb × bs × bs
    y = apply_dropout(w, dropout) @ blocks(v)  # B × h × nb × bs × dh
    y = y.reshape(b, h, nb * bs, dh)[:, :, :t]  # B × h × T × dh
    return y, w.reshape(b, h, nb * bs, bs)[:, :, :t] if need_weights else None


def sparse_mask(n_q: int, n_k: int, sparsity: float, *, seed: int = 0, block_size: int = 0) -> Tensor:
    """A fixed random additive mask (Tq × Tk; 0 keeps, −inf drops) removing about ``sparsity`` of the pairs.

    Drawn from its own seeded generator (the global RNG is untouched). Each query keeps at least one key:
    itself for self-attention, else the first key of its block (``block_size``) or key i mod Tk.
    """
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"{sparsity=} must be in [0, 1)")
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand(n_q, n_k, generator=g) >= sparsity  # Tq × Tk
    if block_size and n_q != n_k:
        anchor = block_keys(n_q, n_k, block_size)[0][:, 0]
    else:
        anchor = torch.arange(n_q) % n_k
    keep[torch.arange(n_q), anchor] = True
    return torch.zeros(n_q, n_k).masked_fill(~keep, float("-inf"))


class MultiheadAttention(nn.Module):
    """Multi-head self- or cross-attention: Q from ``x``, K and V from ``context`` (``x`` when None).

    d splits into h heads; heads attend separately, are concatenated and projected by W_O (to
    ``d_proj`` outputs, d by default; ``proj=False`` leaves it out). ``scale=1.0`` gives unscaled dot
    products; ``rope`` rotates Q and K by position; ``block_size > 0`` attends within blocks.

    >>> MultiheadAttention(8, 2)(torch.zeros(3, 5, 8), torch.zeros(3, 7, 8))[0].shape
    torch.Size([3, 5, 8])
    """

    def __init__(self, d: int, n_heads: int = 1, dropout: float = 0.0, *, bias: bool = True,
                 scale: float | None = None, proj: bool = True, d_proj: int | None = None,
                 rope: bool = False, block_size: int = 0) -> None:
        super().__init__()
        if d < 1 or n_heads < 1 or d % n_heads or block_size < 0 or not 0.0 <= dropout < 1.0:
            raise ValueError(f"{d=} must be divisible by {n_heads=} (both >= 1), {block_size=} >= 0, "
                             f"{dropout=} in [0, 1)")
        if d_proj is not None and not proj:
            raise ValueError(f"{d_proj=} needs proj=True")
        self.n_heads, self.dropout, self.scale = n_heads, dropout, scale
        self.rope, self.block_size = rope, block_size
        self.q = nn.Linear(d, d, bias=bias)
        self.kv = nn.Linear(d, 2 * d, bias=bias)
        self.out = nn.Linear(d, d_proj or d) if proj else nn.Identity()

    def forward(self, x: Tensor, context: Tensor | None = None, *, mask: Tensor | None = None,
                need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        ctx = x if context is None else context
        (b, tq, d), tk, h = x.shape, ctx.shape[1], self.n_heads
        q = self.q(x).view(b, tq, h, d // h).transpose(1, 2)  # B × h × Tq × dh
        k, v = self.kv(ctx).view(b, tk, 2, h, d // h).permute(2, 0, 3, 1, 4)  # 2 × B × h × Tk × dh
        if self.rope:
            q, k = apply_rope(q), apply_rope(k)
        p = self.dropout if self.training else 0.0
        if self.block_size:
            y, w = blockwise_attention(q, k, v, self.block_size, mask=mask, dropout=p, scale=self.scale,
                                       need_weights=need_weights)  # B × h × Tq × dh
        else:
            y, w = attention(q, k, v, mask=mask, dropout=p, scale=self.scale, need_weights=need_weights)
        return self.out(y.transpose(1, 2).reshape(b, tq, d)), w  # B × Tq × d_proj


class TransformerBlock(nn.Module):
    """Pre-norm transformer block: x + Attn(LN(x)), then x + FFN(LN(x)) with a GELU FFN.

    ``first_norm=False`` drops the attention's LayerNorm (FT-Transformer's first block, whose input is
    fresh embeddings). ``mask`` goes to the attention (padding or an additive bias such as ALiBi).
    ``n_query=k`` updates and returns only the last k tokens (all tokens still serve as keys and
    values): a model that reads one token after its last block (FT-Transformer's [CLS]) skips the
    attention queries and FFN of the others there. A ``mask`` must then have k query rows.
    """

    def __init__(self, d: int, n_heads: int, *, attention_dropout: float = 0.0, ffn_factor: float = 4 / 3,
                 ffn_dropout: float = 0.0, residual_dropout: float = 0.0, first_norm: bool = True,
                 rope: bool = False) -> None:
        super().__init__()
        if ffn_factor <= 0:
            raise ValueError(f"{ffn_factor=} must be > 0")
        self.norm1 = nn.LayerNorm(d) if first_norm else nn.Identity()
        self.attn = MultiheadAttention(d, n_heads, attention_dropout, rope=rope)
        self.norm2 = nn.LayerNorm(d)
        d_hidden = max(1, int(d * ffn_factor))
        self.ffn = nn.Sequential(nn.Linear(d, d_hidden), nn.GELU(), Dropout(ffn_dropout),
                                 nn.Linear(d_hidden, d))
        self.drop = Dropout(residual_dropout)

    def forward(self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False, *,
                n_query: int | None = None) -> tuple[Tensor, Tensor | None]:
        h = self.norm1(x)  # B × T × d
        if n_query is None:
            a, w = self.attn(h, mask=mask, need_weights=need_weights)
        else:
            x = x[:, -n_query:]  # B × k × d
            a, w = self.attn(h[:, -n_query:], h, mask=mask, need_weights=need_weights)
        x = x + self.drop(a)  # B × T × d (or B × k × d)
        x = x + self.drop(self.ffn(self.norm2(x)))
        return x, w


def attention_maps(model: nn.Module, x_num: Tensor, x_cat: Tensor) -> list[Tensor]:
    """The model's attention maps in inference mode (no dropout, no batch-norm updates); mode restored."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(x_num, x_cat, return_attention=True)[1]
    finally:
        model.train(was_training)


def mean_attention(maps: list[Tensor]) -> Tensor:
    """Average a list of B × h × Tq × Tk maps over batch, heads and list (Tq × Tk)."""
    return torch.stack([w.float().mean(dim=(0, 1)) for w in maps]).mean(0)


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation over tokens: z = mean_t x_t ∈ R^d, s = σ(W2 ReLU(W1 z)), every token · s.

    The hidden width is d // reduction (at least 1).

    >>> SqueezeExcitation(8)(torch.zeros(2, 5, 8)).shape
    torch.Size([2, 5, 8])
    """

    def __init__(self, d: int, reduction: int = 4) -> None:
        super().__init__()
        if reduction < 1:
            raise ValueError(f"{reduction=} must be >= 1")
        hidden = max(1, d // reduction)
        self.excite = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, d), nn.Sigmoid())

    def forward(self, x: Tensor) -> Tensor:
        s = self.excite(x.mean(dim=1))  # B × d
        return x * s.unsqueeze(1)  # B × T × d


class ChannelAttention1d(nn.Module):
    """CBAM channel attention: average- and max-pooled descriptors (B × C) through one shared bottleneck
    MLP (C → C // reduction, at least 1 → C), summed, sigmoid; each channel is scaled by its weight."""

    def __init__(self, channels: int, reduction: int = 16) -> None:
        super().__init__()
        if reduction < 1:
            raise ValueError(f"{reduction=} must be >= 1")
        hidden = max(1, channels // reduction)
        self.mlp = nn.Sequential(nn.Linear(channels, hidden), nn.ReLU(), nn.Linear(hidden, channels))

    def forward(self, x: Tensor) -> Tensor:
        w = torch.sigmoid(self.mlp(x.mean(dim=-1)) + self.mlp(x.amax(dim=-1)))  # B × C
        return x * w.unsqueeze(-1)  # B × C × L


class SpatialAttention1d(nn.Module):
    """CBAM spatial attention: channel-wise average and max (B × 2 × L) → conv (kernel 7) → sigmoid;
    each position is scaled by its weight."""

    def __init__(self, kernel_size: int = 7) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 1, kernel_size, padding="same", bias=False)

    def forward(self, x: Tensor) -> Tensor:
        s = torch.cat([x.mean(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)], dim=1)  # B × 2 × L
        return x * torch.sigmoid(self.conv(s))  # B × C × L


class CBAM1d(nn.Sequential):
    """Channel attention, then spatial attention (Woo et al., 2018), on B × C × L feature maps.
    ``channel=False`` leaves out the channel attention (its squeeze-and-excitation part): an ablation."""

    def __init__(self, channels: int, reduction: int = 16, kernel_size: int = 7, channel: bool = True) -> None:
        parts: list[nn.Module] = [ChannelAttention1d(channels, reduction)] if channel else []
        super().__init__(*parts, SpatialAttention1d(kernel_size))


class GatedSelfAttention1d(nn.Module):
    """SAGAN self-attention over positions: 1×1 convs give Q and K (C // 8 channels, at least 1) and V
    (C); weights softmax(QᵀK) (unscaled, as in SAGAN); output x + γ · attention, with γ starting at 0 so
    the layer is the identity at initialisation and the network decides how much attention to mix in.

    >>> GatedSelfAttention1d(16)(torch.ones(2, 16, 5))[0].shape
    torch.Size([2, 16, 5])
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        d_qk = max(1, channels // 8)
        self.q = nn.Conv1d(channels, d_qk, 1)
        self.k = nn.Conv1d(channels, d_qk, 1)
        self.v = nn.Conv1d(channels, channels, 1)
        self.gamma = nn.Parameter(torch.zeros(1))

    def forward(self, x: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        q, k, v = (conv(x).transpose(1, 2).unsqueeze(1) for conv in (self.q, self.k, self.v))  # B × 1 × L × c
        y, w = attention(q, k, v, scale=1.0, need_weights=need_weights)  # B × 1 × L × C
        return x + self.gamma * y.squeeze(1).transpose(1, 2), w  # B × C × L
