"""FT-Transformer: every feature a token, plus [CLS]; pre-norm transformer blocks; head on [CLS]."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.embeddings import FeatureTokenizer, check_io
from pipeline.models.layers import TransformerBlock, attention_maps, mean_attention

INFO = {
    "name": "ft_transformer",
    "display_name": "FT-Transformer",
    "kind": "attention",
    "class": "FTTransformer",
    "description": "Feature tokenizer + pre-norm transformer over all features and a [CLS] token.",
    "paper": "https://arxiv.org/abs/2106.11959",
    "training": {"lr": 1e-4, "weight_decay": 1e-5},  # the paper's defaults for its recipe
    "space": {
        "d_token": {"choice": [64, 96, 128, 192]},
        "n_blocks": {"int": [1, 3]},
        "attention_dropout": {"uniform": [0.0, 0.5]},
        "ffn_dropout": {"uniform": [0.0, 0.5]},
        "lr": {"loguniform": [3e-5, 1e-3]},
    },
    "ablations": {  # the claims' switches (pipeline/report/stats/claims.py)
        "warmup": {"key": "warmup_frac", "off": 0},  # the recipe's warmup off (claim 4: transformers need it)
    },
}


class FTTransformer(nn.Module):
    """Every feature a token, a [CLS] token appended; pre-norm blocks; LayerNorm → ReLU → linear on [CLS].

    ``forward(..., return_attention=True)`` also returns each block's weights (B × h × (F+1) × (F+1)).
    """

    def __init__(
        self,
        *,
        n_num: int,
        cat_cardinalities: list[int],
        d_out: int,
        d_token: int = 96,
        n_blocks: int = 2,
        n_heads: int = 8,
        attention_dropout: float = 0.2,
        ffn_factor: float = 4 / 3,
        ffn_dropout: float = 0.1,
        residual_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        check_io(n_num, cat_cardinalities, d_out)
        if n_blocks < 1:
            raise ValueError(f"{n_blocks=} must be >= 1")
        self.tokenizer = FeatureTokenizer(n_num, cat_cardinalities, d_token)
        self.cls = nn.Parameter(torch.randn(1, 1, d_token) / d_token**0.5)
        # The first block's attention normalisation is dropped, as in the paper: tokens are fresh embeddings.
        self.blocks = nn.ModuleList(
            TransformerBlock(d_token, n_heads, attention_dropout=attention_dropout, ffn_factor=ffn_factor,
                             ffn_dropout=ffn_dropout, residual_dropout=residual_dropout, first_norm=i > 0)
            for i in range(n_blocks)
        )
        self.head = nn.Sequential(nn.LayerNorm(d_token), nn.ReLU(), nn.Linear(d_token, d_out))

    def forward(self, x_num: Tensor, x_cat: Tensor, return_attention: bool = False):
        x = self.tokenizer(x_num, x_cat)  # B × F × d
        x = torch.cat([x, self.cls.to(x.dtype).expand(len(x), -1, -1)], dim=1)  # B × (F+1) × d, [CLS] last
        maps = []
        last = len(self.blocks) - 1
        for i, block in enumerate(self.blocks):
            # Only [CLS] is read after the last block, so there it alone queries and goes through the FFN
            # (as in the reference implementation); full maps are computed when they are asked for.
            n_query = 1 if i == last and not return_attention else None
            x, w = block(x, need_weights=return_attention, n_query=n_query)
            if w is not None:
                maps.append(w)
        out = self.head(x[:, -1])  # B × d_out
        return (out, maps) if return_attention else out

    @torch.no_grad()
    def feature_attention(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        """Mean feature-to-feature attention (F × F) over the batch, heads and blocks, [CLS] left out."""
        maps = attention_maps(self, x_num, x_cat)
        return mean_attention(maps)[:-1, :-1]  # F × F
