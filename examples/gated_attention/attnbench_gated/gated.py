"""Gated linear attention over feature tokens: a kind of attention attnbench does not ship.

Each feature becomes a token (numeric: a per-feature linear map of its value; categorical: an
embedding); each block mixes the tokens with kernelised linear attention (softmax replaced by the
positive feature map elu + 1, so the cost grows linearly with the number of features, as in
Katharopoulos et al., 2020) and a sigmoid gate per token and channel that decides how much of the
mixed signal a token takes in; then a feed-forward layer. The mean token feeds the head.

The forward contract is attnbench's: ``forward(x_num, x_cat)`` → logits (B × d_out), or one value per
row for regression; ``feature_attention(x_num, x_cat)`` (optional) → the mean feature-to-feature
attention (F × F), which the report draws.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

INFO = {
    "name": "gated_attention",
    "display_name": "Gated linear attention",
    "kind": "attention",
    "class": "GatedAttentionNet",
    "description": "Feature tokens mixed by gated, kernelised linear attention (elu+1), mean-pooled.",
    "paper": "https://arxiv.org/abs/2006.16236",
    "defaults": {"d_token": 32, "n_blocks": 2, "dropout": 0.1},
    "space": {
        "d_token": {"choice": [16, 32, 64]},
        "n_blocks": {"int": [1, 3]},
        "dropout": {"uniform": [0.0, 0.3]},
    },
}


def _phi(x: Tensor) -> Tensor:
    return F.elu(x) + 1.0


class GatedLinearAttention(nn.Module):
    def __init__(self, d: int, dropout: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.gate = nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        self.drop = nn.Dropout(dropout)

    def weights(self, x: Tensor) -> Tensor:
        """The attention the linear form implies (B × F × F, rows sum to 1): for drawing only."""
        q, k, _ = self.qkv(self.norm(x)).chunk(3, dim=-1)
        scores = _phi(q) @ _phi(k).transpose(1, 2)
        return scores / scores.sum(-1, keepdim=True)

    def forward(self, x: Tensor) -> Tensor:
        h = self.norm(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q, k = _phi(q), _phi(k)
        kv = k.transpose(1, 2) @ v  # B × d × d: linear in the number of tokens
        z = 1.0 / (q @ k.sum(1, keepdim=True).transpose(1, 2) + 1e-6)  # B × F × 1
        mixed = (q @ kv) * z
        return x + self.drop(self.out(torch.sigmoid(self.gate(h)) * mixed))


class GatedAttentionNet(nn.Module):
    def __init__(self, *, n_num: int, cat_cardinalities: list[int], d_out: int, d_token: int = 32,
                 n_blocks: int = 2, dropout: float = 0.1) -> None:
        super().__init__()
        if n_num + len(cat_cardinalities) == 0 or d_out < 1 or n_blocks < 1 or d_token < 1:
            raise ValueError(f"{n_num=}, {cat_cardinalities=}, {d_out=}, {n_blocks=}, {d_token=}: need a feature "
                             "and positive sizes")
        self.num_weight = nn.Parameter(torch.randn(n_num, d_token) / d_token**0.5)
        self.num_bias = nn.Parameter(torch.zeros(n_num, d_token))
        self.cat = nn.ModuleList(nn.Embedding(c, d_token) for c in cat_cardinalities)
        self.attn = nn.ModuleList(GatedLinearAttention(d_token, dropout) for _ in range(n_blocks))
        self.ffn = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(d_token), nn.Linear(d_token, 2 * d_token), nn.GELU(), nn.Dropout(dropout),
                          nn.Linear(2 * d_token, d_token)) for _ in range(n_blocks))
        self.head = nn.Sequential(nn.LayerNorm(d_token), nn.Linear(d_token, d_out))

    def tokens(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        parts = [x_num.unsqueeze(-1) * self.num_weight + self.num_bias]
        parts += [emb(x_cat[:, i]).unsqueeze(1) for i, emb in enumerate(self.cat)]
        return torch.cat(parts, dim=1)  # B × F × d_token

    def forward(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        x = self.tokens(x_num, x_cat)
        for attn, ffn in zip(self.attn, self.ffn):
            x = attn(x)
            x = x + ffn(x)
        return self.head(x.mean(1))

    @torch.no_grad()
    def feature_attention(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        """Mean feature-to-feature attention (F × F) over the batch and the blocks."""
        x, maps = self.tokens(x_num, x_cat), []
        for attn, ffn in zip(self.attn, self.ffn):
            maps.append(attn.weights(x).mean(0))
            x = attn(x)
            x = x + ffn(x)
        return torch.stack(maps).mean(0)
