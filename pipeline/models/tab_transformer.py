"""TabTransformer: transformer blocks over the categorical embeddings only; numerics skip them.

The contextual categorical tokens are flattened and concatenated with the numeric features into an
MLP head. Numerics arrive standardised with training statistics (the harness does it), which is the
normalisation the paper's LayerNorm on the continuous features stands for; a per-row LayerNorm is left
out because it would erase each row's scale (and all information when there is one numeric feature).
Blocks are pre-norm with a final LayerNorm (the paper is post-norm), as in the other transformers here.

Fallback: with no categorical features there is nothing to attend over, and the model is an MLP on
the numeric features (``return_attention`` gives an empty list, ``feature_attention`` zeros).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.embeddings import (
    CAT_EMBEDDINGS,
    CategoricalEmbedding,
    SharedCategoricalEmbedding,
    check_io,
)
from pipeline.models.layers import Dropout, TransformerBlock, attention_maps, mean_attention

INFO = {
    "name": "tab_transformer",
    "display_name": "TabTransformer",
    "kind": "attention",
    "class": "TabTransformer",
    "description": "Transformer over categorical embeddings, flattened with the numerics into an MLP.",
    "paper": "https://arxiv.org/abs/2012.06678",
    "space": {
        "d_token": {"choice": [16, 32, 64]},
        "n_blocks": {"int": [1, 3]},
        "attention_dropout": {"uniform": [0.0, 0.3]},
        "ffn_dropout": {"uniform": [0.0, 0.3]},
        "d_block": {"choice": [64, 128, 256]},
        "dropout": {"uniform": [0.0, 0.4]},
    },
    "ablations": {  # the claims' switches (pipeline/report/stats/claims.py)
        "warmup": {"key": "warmup_frac", "off": 0},  # the recipe's warmup off (claim 4: transformers need it)
    },
    "notes": "Without categorical features it is an MLP on the numerics. feature_attention fills the "
             "categorical × categorical block of the F × F grid; rows and columns of numerics are zero.",
}


class TabTransformer(nn.Module):
    """Categorical tokens (B × k × d) → transformer → flatten ‖ numerics (B × n) → MLP → B × d_out."""

    def __init__(
        self,
        *,
        n_num: int,
        cat_cardinalities: list[int],
        d_out: int,
        d_token: int = 32,
        n_blocks: int = 2,
        n_heads: int = 4,
        attention_dropout: float = 0.1,
        ffn_factor: float = 2.0,
        ffn_dropout: float = 0.1,
        d_block: int = 128,
        n_mlp_blocks: int = 2,
        dropout: float = 0.1,
        cat_embedding: str = "per_feature",
    ) -> None:
        super().__init__()
        check_io(n_num, cat_cardinalities, d_out)
        if min(d_token, n_blocks, d_block, n_mlp_blocks) < 1 or cat_embedding not in CAT_EMBEDDINGS:
            raise ValueError(f"{d_token=}, {n_blocks=}, {d_block=} and {n_mlp_blocks=} must be >= 1; "
                             f"{cat_embedding=} one of {CAT_EMBEDDINGS}")
        self.n_num, self.n_cat = n_num, len(cat_cardinalities)
        self.embed: nn.Module | None = None
        if cat_cardinalities:
            emb = CategoricalEmbedding if cat_embedding == "per_feature" else SharedCategoricalEmbedding
            self.embed = emb(cat_cardinalities, d_token)
            self.blocks = nn.ModuleList(
                TransformerBlock(d_token, n_heads, attention_dropout=attention_dropout, ffn_factor=ffn_factor,
                                 ffn_dropout=ffn_dropout)
                for _ in range(n_blocks)
            )
            self.norm = nn.LayerNorm(d_token)
        layers: list[nn.Module] = []
        d_in = n_num + self.n_cat * d_token
        for i in range(n_mlp_blocks):
            layers += [nn.Linear(d_in if i == 0 else d_block, d_block), nn.ReLU(), Dropout(dropout)]
        self.mlp = nn.Sequential(*layers, nn.Linear(d_block, d_out))

    def forward(self, x_num: Tensor, x_cat: Tensor, return_attention: bool = False):
        maps: list[Tensor] = []
        parts = [x_num]  # B × n
        if self.embed is not None:
            x = self.embed(x_cat)  # B × k × d
            for block in self.blocks:
                x, w = block(x, need_weights=return_attention)
                if w is not None:
                    maps.append(w)  # B × h × k × k
            parts.append(self.norm(x).flatten(1))  # B × k·d
        out = self.mlp(torch.cat(parts, dim=1))  # B × d_out
        return (out, maps) if return_attention else out

    @torch.no_grad()
    def feature_attention(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        """F × F map with the mean categorical self-attention in its cat × cat block, zeros elsewhere."""
        f = self.n_num + self.n_cat
        grid = torch.zeros(f, f, device=x_num.device)
        maps = attention_maps(self, x_num, x_cat)
        if maps:
            grid[self.n_num:, self.n_num:] = mean_attention(maps)
        return grid
