"""Cross-attention + squeeze-and-excitation: categorical tokens query the numeric tokens.

Each block: multi-head cross-attention with Q from the k categorical tokens and K, V from the n
numeric tokens (O(k·n) rather than O((k+n)²)), added residually to the categorical tokens; an SE layer
over all k + n tokens; a bottleneck feed-forward d → d_b → d with a residual; LayerNorm. The head is
linear on the flattened tokens, so it keeps each feature's identity.

Variants: ``block_size > 0`` attends within blocks of that many keys (queries spread over the blocks);
``sparsity > 0`` applies a fixed random 0/−∞ mask (seeded by ``mask_seed``) dropping that fraction of
query-key pairs, always keeping one key per query.

Fallback: with no categorical or no numeric features there is nothing to cross, and the attention is
self-attention over the tokens that exist (the same block otherwise, variants included).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.embeddings import FeatureTokenizer, check_io
from pipeline.models.layers import (
    Dropout,
    MultiheadAttention,
    SqueezeExcitation,
    attention_maps,
    mean_attention,
    sparse_mask,
)

INFO = {
    "name": "cross_attention_se",
    "display_name": "Cross-attention + SE",
    "kind": "attention",
    "class": "CrossAttentionSE",
    "description": "Categorical tokens cross-attend to numeric tokens; SE over tokens; bottleneck FFN.",
    "paper": "",
    "space": {
        "d_token": {"choice": [16, 32, 64]},
        "n_blocks": {"int": [1, 3]},
        "attention_dropout": {"uniform": [0.0, 0.3]},
        "se_reduction": {"choice": [2, 4, 8]},
        "d_bottleneck": {"choice": [8, 16, 32]},
        "dropout": {"uniform": [0.0, 0.4]},
    },
    "ablations": {  # the claims' switches (pipeline/report/stats/claims.py)
        "se": {"key": "se_reduction", "off": 0, "needs": ["cross"]},  # no squeeze-and-excitation
        "cross": {"key": "attention", "off": "self", "needs": ["se"]},  # every token attends to every token
        "warmup": {"key": "warmup_frac", "off": 0},  # the recipe's warmup off (claim 4: transformers need it)
    },
    "notes": "Without categorical or without numeric features: self-attention over the tokens that exist. "
             "feature_attention fills the categorical-query × numeric-key block (rows n_num.., columns "
             "..n_num) of the F × F grid, zeros elsewhere; in the fallback it fills the whole grid.",
}


class Block(nn.Module):
    """Attention (cross or self) → SE over all tokens → x + FFN(x) → LayerNorm."""

    def __init__(self, d: int, n_heads: int, attention_dropout: float, se_reduction: int, d_bottleneck: int,
                 ffn_dropout: float, block_size: int) -> None:
        super().__init__()
        self.attn = MultiheadAttention(d, n_heads, attention_dropout, block_size=block_size)
        self.se: nn.Module = SqueezeExcitation(d, se_reduction) if se_reduction else nn.Identity()  # 0: no SE
        self.ffn = nn.Sequential(nn.Linear(d, d_bottleneck), nn.ReLU(), Dropout(ffn_dropout),
                                 nn.Linear(d_bottleneck, d))
        self.norm = nn.LayerNorm(d)

    def forward(self, x: Tensor, n_num: int, cross: bool, mask: Tensor | None,
                need_weights: bool) -> tuple[Tensor, Tensor | None]:
        if cross:
            num, cat = x[:, :n_num], x[:, n_num:]  # B × n × d, B × k × d
            a, w = self.attn(cat, num, mask=mask, need_weights=need_weights)  # B × k × d
            x = torch.cat([num, cat + a], dim=1)  # B × F × d
        else:
            a, w = self.attn(x, mask=mask, need_weights=need_weights)
            x = x + a  # B × F × d
        x = self.se(x)  # B × F × d
        return self.norm(x + self.ffn(x)), w  # B × F × d


class CrossAttentionSE(nn.Module):
    """Tokens [numeric..., categorical...] → blocks → flatten → linear head (B × d_out)."""

    def __init__(
        self,
        *,
        n_num: int,
        cat_cardinalities: list[int],
        d_out: int,
        d_token: int = 32,
        n_blocks: int = 1,
        n_heads: int = 4,
        attention_dropout: float = 0.1,
        se_reduction: int = 4,  # 0: no squeeze-and-excitation (an ablation)
        d_bottleneck: int = 16,
        ffn_dropout: float = 0.1,
        dropout: float = 0.1,
        block_size: int = 0,
        sparsity: float = 0.0,
        mask_seed: int = 0,
        num_embedding: str = "per_feature",
        cat_embedding: str = "per_feature",
        attention: str = "cross",  # self: every token attends to every token (an ablation)
    ) -> None:
        super().__init__()
        check_io(n_num, cat_cardinalities, d_out)
        if min(d_token, n_blocks, d_bottleneck) < 1 or block_size < 0 or not 0.0 <= sparsity < 1.0 or se_reduction < 0:
            raise ValueError(f"{d_token=}, {n_blocks=} and {d_bottleneck=} must be >= 1, {block_size=} >= 0, "
                             f"{se_reduction=} >= 0 (0: no squeeze-and-excitation), {sparsity=} in [0, 1)")
        if attention not in ("cross", "self"):
            raise ValueError(f"{attention=} must be 'cross' (categorical tokens query numeric ones) or 'self' "
                             "(every token attends to every token: the ablation)")
        n_features = n_num + len(cat_cardinalities)
        self.n_num, self.n_cat = n_num, len(cat_cardinalities)
        self.cross = attention == "cross" and n_num > 0 and self.n_cat > 0
        self.tokenizer = FeatureTokenizer(n_num, cat_cardinalities, d_token,
                                          num_embedding=num_embedding, cat_embedding=cat_embedding)
        self.blocks = nn.ModuleList(
            Block(d_token, n_heads, attention_dropout, se_reduction, d_bottleneck, ffn_dropout, block_size)
            for _ in range(n_blocks)
        )
        n_q, n_k = (self.n_cat, n_num) if self.cross else (n_features, n_features)
        mask = sparse_mask(n_q, n_k, sparsity, seed=mask_seed, block_size=block_size) if sparsity else None
        self.register_buffer("mask", mask, persistent=False)  # Tq × Tk, or None
        self.head = nn.Sequential(nn.Flatten(), Dropout(dropout), nn.Linear(n_features * d_token, d_out))

    def forward(self, x_num: Tensor, x_cat: Tensor, return_attention: bool = False):
        x = self.tokenizer(x_num, x_cat)  # B × F × d
        maps = []
        for block in self.blocks:
            x, w = block(x, self.n_num, self.cross, self.mask, return_attention)
            if w is not None:
                maps.append(w)  # B × h × k × n (cross) or B × h × F × F (fallback)
        out = self.head(x)  # B × d_out
        return (out, maps) if return_attention else out

    @torch.no_grad()
    def feature_attention(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        """F × F map: the mean cat → num attention in rows n_num.. and columns ..n_num (zeros elsewhere),
        or the mean self-attention over all features in the fallback."""
        maps = attention_maps(self, x_num, x_cat)
        m = mean_attention(maps)  # k × n, or F × F
        if not self.cross:
            return m
        f = self.n_num + self.n_cat
        grid = m.new_zeros(f, f)
        grid[self.n_num:, : self.n_num] = m
        return grid
