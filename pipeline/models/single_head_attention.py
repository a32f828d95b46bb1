"""Single-head attention classifier: the smallest attention model, and the easiest to read.

Learned token embeddings (one per feature) plus learned positional embeddings, N post-norm blocks of
single-head attention (no bias in Q/K/V) and a ReLU MLP (ratio 4), masked mean pooling, linear head.

Masking: with ``mask_missing`` a categorical value of code 0 (missing or unseen) is padding: no token
attends to it and pooling skips it. A row with nothing left unmasked keeps all its tokens. Without it
(the default) every token counts, and the missing code is just another learned embedding.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.embeddings import FeatureTokenizer, LearnedPosition, check_io
from pipeline.models.layers import Dropout, MultiheadAttention, attention_maps, mean_attention

INFO = {
    "name": "single_head_attention",
    "display_name": "Single-head attention",
    "kind": "attention",
    "class": "SingleHeadAttention",
    "description": "Token + position embeddings, post-norm single-head attention, masked mean pool.",
    "paper": "",
    "space": {
        "d_token": {"choice": [32, 64, 128]},
        "n_blocks": {"int": [1, 4]},
        "dropout": {"uniform": [0.0, 0.3]},
        "mask_missing": {"choice": [False, True]},
    },
    "ablations": {  # the claims' switches (pipeline/report/stats/claims.py)
        "warmup": {"key": "warmup_frac", "off": 0},  # the recipe's warmup off (claim 4: transformers need it)
    },
    "notes": "feature_attention is the mean single-head map over blocks and rows, F × F as is.",
}


class Block(nn.Module):
    """Post-norm: x = LN(x + Attn(x)); x = LN(x + MLP(x)), one head, Q/K/V without bias."""

    def __init__(self, d: int, attention_dropout: float, dropout: float) -> None:
        super().__init__()
        self.attn = MultiheadAttention(d, 1, attention_dropout, bias=False)
        self.norm1 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), Dropout(dropout), nn.Linear(4 * d, d))
        self.norm2 = nn.LayerNorm(d)
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor | None, need_weights: bool) -> tuple[Tensor, Tensor | None]:
        a, w = self.attn(x, mask=mask, need_weights=need_weights)
        x = self.norm1(x + self.drop(a))  # B × F × d
        x = self.norm2(x + self.drop(self.mlp(x)))  # B × F × d
        return x, w


class SingleHeadAttention(nn.Module):
    """Tokens + positions (B × F × d) → N blocks → masked mean (B × d) → linear head (B × d_out)."""

    def __init__(
        self,
        *,
        n_num: int,
        cat_cardinalities: list[int],
        d_out: int,
        d_token: int = 32,
        n_blocks: int = 2,
        attention_dropout: float = 0.0,
        dropout: float = 0.1,
        mask_missing: bool = False,
        num_embedding: str = "per_feature",
        cat_embedding: str = "per_feature",
    ) -> None:
        super().__init__()
        check_io(n_num, cat_cardinalities, d_out)
        if d_token < 1 or n_blocks < 1:
            raise ValueError(f"{d_token=} and {n_blocks=} must be >= 1")
        self.n_num, self.mask_missing = n_num, mask_missing
        self.tokenizer = FeatureTokenizer(n_num, cat_cardinalities, d_token,
                                          num_embedding=num_embedding, cat_embedding=cat_embedding)
        self.position = LearnedPosition(n_num + len(cat_cardinalities), d_token)
        self.blocks = nn.ModuleList(Block(d_token, attention_dropout, dropout) for _ in range(n_blocks))
        self.head = nn.Sequential(Dropout(dropout), nn.Linear(d_token, d_out))

    def _valid(self, x_num: Tensor, x_cat: Tensor) -> Tensor | None:
        """B × F, True for tokens that count; None when nothing is masked."""
        if not self.mask_missing or x_cat.shape[1] == 0:
            return None
        valid = torch.cat([torch.ones_like(x_num, dtype=torch.bool), x_cat != 0], dim=1)  # B × F
        return valid | ~valid.any(dim=1, keepdim=True)  # a row with no valid token keeps them all

    def forward(self, x_num: Tensor, x_cat: Tensor, return_attention: bool = False):
        x = self.position(self.tokenizer(x_num, x_cat))  # B × F × d
        valid = self._valid(x_num, x_cat)
        mask = None if valid is None else valid[:, None, None, :]  # B × 1 × 1 × F, keys only
        maps = []
        for block in self.blocks:
            x, w = block(x, mask, return_attention)
            if w is not None:
                maps.append(w)  # B × 1 × F × F
        if valid is None:
            pooled = x.mean(dim=1)  # B × d
        else:
            v = valid.unsqueeze(-1).to(x.dtype)  # B × F × 1
            pooled = (x * v).sum(dim=1) / v.sum(dim=1)  # B × d
        out = self.head(pooled)  # B × d_out
        return (out, maps) if return_attention else out

    @torch.no_grad()
    def feature_attention(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        """Mean attention over batch and blocks (F × F); masked keys get zero weight."""
        maps = attention_maps(self, x_num, x_cat)
        return mean_attention(maps)
