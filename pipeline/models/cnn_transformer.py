"""CNN + transformer hybrid: the CBAM CNN backbone's feature map (one token per position) goes through
pre-norm transformer blocks; LayerNorm, mean pool over positions, linear head.

Convolutions capture local patterns along the feature sequence, the transformer global ones. The
backbone's convolutions are "same"-padded, so position i is feature i throughout.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.cbam_cnn import CBAMBackbone
from pipeline.models.embeddings import FeatureTokenizer, alibi_bias, check_io, make_position
from pipeline.models.layers import Dropout, TransformerBlock, attention_maps, mean_attention

INFO = {
    "name": "cnn_transformer",
    "display_name": "CNN + Transformer",
    "kind": "attention",
    "class": "CNNTransformer",
    "description": "CBAM 1-D CNN backbone, its feature map as tokens of a transformer; mean-pooled head.",
    "paper": "",
    "space": {
        "channels": {"choice": [32, 64, 128]},
        "n_conv": {"int": [1, 2]},
        "n_blocks": {"int": [1, 3]},
        "n_heads": {"choice": [1, 2, 4]},
        "attention_dropout": {"uniform": [0.0, 0.3]},
        "dropout": {"uniform": [0.0, 0.4]},
        "position": {"choice": ["identity", "sinusoidal", "rope", "alibi", "none"]},
    },
    "ablations": {  # the claims' switches (pipeline/report/stats/claims.py)
        "warmup": {"key": "warmup_frac", "off": 0},  # the recipe's warmup off (claim 4: transformers need it)
    },
    "notes": "feature_attention: the transformer's mean attention over positions, F × F because the "
             "convolutions keep the length. Additive positions go on the tokens before the CNN; RoPE and "
             "ALiBi act in the transformer's attention.",
}


class CNNTransformer(nn.Module):
    """Tokens (B × F × d_token) → CBAM backbone (B × C × F) → transformer over F tokens → mean → head."""

    def __init__(
        self,
        *,
        n_num: int,
        cat_cardinalities: list[int],
        d_out: int,
        d_token: int = 16,
        channels: int = 32,
        n_conv: int = 1,
        kernel_size: int = 3,
        reduction: int = 16,
        spatial_kernel: int = 7,
        n_blocks: int = 2,
        n_heads: int = 4,
        attention_dropout: float = 0.1,
        ffn_factor: float = 2.0,
        ffn_dropout: float = 0.1,
        dropout: float = 0.1,
        position: str = "identity",
        num_embedding: str = "per_feature",
        cat_embedding: str = "per_feature",
    ) -> None:
        super().__init__()
        check_io(n_num, cat_cardinalities, d_out)
        if n_blocks < 1 or n_heads < 1 or channels % n_heads:
            raise ValueError(f"{n_blocks=} must be >= 1 and {channels=} divisible by {n_heads=}")
        n_features = n_num + len(cat_cardinalities)
        self.tokenizer = FeatureTokenizer(n_num, cat_cardinalities, d_token,
                                          num_embedding=num_embedding, cat_embedding=cat_embedding)
        self.position = make_position(position, n_features, d_token)
        self.backbone = CBAMBackbone(d_token, channels, n_conv, kernel_size, reduction, spatial_kernel,
                                     dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(channels, n_heads, attention_dropout=attention_dropout, ffn_factor=ffn_factor,
                             ffn_dropout=ffn_dropout, rope=position == "rope")
            for _ in range(n_blocks)
        )
        alibi = alibi_bias(n_heads, n_features) if position == "alibi" else None
        self.register_buffer("alibi", alibi, persistent=False)  # h × F × F, or None
        self.head = nn.Sequential(nn.LayerNorm(channels), Dropout(dropout), nn.Linear(channels, d_out))

    def forward(self, x_num: Tensor, x_cat: Tensor, return_attention: bool = False):
        x = self.position(self.tokenizer(x_num, x_cat))  # B × F × d_token
        x = self.backbone(x.transpose(1, 2)).transpose(1, 2)  # B × L × C, L = F
        maps = []
        for block in self.blocks:
            x, w = block(x, mask=self.alibi, need_weights=return_attention)
            if w is not None:
                maps.append(w)  # B × h × L × L
        out = self.head(x.mean(dim=1))  # B × d_out
        return (out, maps) if return_attention else out

    @torch.no_grad()
    def feature_attention(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        """Mean attention over batch, heads and blocks (F × F: position i is feature i)."""
        maps = attention_maps(self, x_num, x_cat)
        return mean_attention(maps)
