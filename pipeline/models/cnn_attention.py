"""1D-CNN + attention: the row as a sequence of feature tokens, Conv1d layers, attention over positions.

Every feature becomes a token (its d_token numbers are the input channels), a positional option is
added, and "same"-padded Conv1d layers give a feature map (L × C) with L = F positions, one per feature.
Q/K/V projections of the map attend over positions in one of three variants (``attention``):
"unscaled" softmax(QKᵀ)V, "scaled" softmax(QKᵀ/√d_k)V, and "scaled_proj", which adds an output
projection to ``d_attention`` channels. Mean- and max-pooled over positions, then a linear head.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.embeddings import FeatureTokenizer, alibi_bias, check_io, make_position
from pipeline.models.layers import Dropout, MultiheadAttention, attention_maps, mean_attention

INFO = {
    "name": "cnn_attention",
    "display_name": "1D-CNN + attention",
    "kind": "attention",
    "class": "CNNAttention",
    "description": "Feature tokens as a 1-D sequence: Conv1d map, attention over positions, pooled head.",
    "paper": "",
    "space": {
        "channels": {"choice": [32, 64, 128]},
        "n_conv": {"int": [1, 3]},
        "kernel_size": {"choice": [3, 5]},
        "attention": {"choice": ["unscaled", "scaled", "scaled_proj"]},
        "dropout": {"uniform": [0.0, 0.4]},
        "position": {"choice": ["identity", "sinusoidal", "rope", "alibi", "none"]},
    },
    "notes": "feature_attention: convolutions keep the length, so position i is feature i and the "
             "attention over positions is the F × F map. Convolving over feature order is arbitrary; "
             "that is what this model tests.",
}

VARIANTS = ("unscaled", "scaled", "scaled_proj")


class CNNAttention(nn.Module):
    """Tokens (B × F × d_token) → Conv1d stack (B × C × F) → attention over the F positions → pool → head."""

    def __init__(
        self,
        *,
        n_num: int,
        cat_cardinalities: list[int],
        d_out: int,
        d_token: int = 16,
        channels: int = 64,
        n_conv: int = 2,
        kernel_size: int = 3,
        attention: str = "scaled",
        n_heads: int = 1,
        d_attention: int = 64,
        attention_dropout: float = 0.0,
        dropout: float = 0.1,
        position: str = "identity",
        num_embedding: str = "per_feature",
        cat_embedding: str = "per_feature",
    ) -> None:
        super().__init__()
        check_io(n_num, cat_cardinalities, d_out)
        if attention not in VARIANTS or min(d_token, channels, n_conv, kernel_size, d_attention) < 1:
            raise ValueError(f"{attention=} must be one of {VARIANTS}; {d_token=}, {channels=}, {n_conv=}, "
                             f"{kernel_size=} and {d_attention=} must be >= 1")
        n_features = n_num + len(cat_cardinalities)
        self.tokenizer = FeatureTokenizer(n_num, cat_cardinalities, d_token,
                                          num_embedding=num_embedding, cat_embedding=cat_embedding)
        self.position = make_position(position, n_features, d_token)
        layers: list[nn.Module] = []
        for i in range(n_conv):
            layers += [nn.Conv1d(d_token if i == 0 else channels, channels, kernel_size, padding="same"),
                       nn.BatchNorm1d(channels), nn.ReLU(), Dropout(dropout)]
        self.convs = nn.Sequential(*layers)
        self.attn = MultiheadAttention(
            channels, n_heads, attention_dropout,
            scale=1.0 if attention == "unscaled" else None,
            proj=attention == "scaled_proj",
            d_proj=d_attention if attention == "scaled_proj" else None,
            rope=position == "rope",
        )
        alibi = alibi_bias(n_heads, n_features) if position == "alibi" else None
        self.register_buffer("alibi", alibi, persistent=False)
        d_pooled = 2 * (d_attention if attention == "scaled_proj" else channels)
        self.head = nn.Sequential(Dropout(dropout), nn.Linear(d_pooled, d_out))

    def forward(self, x_num: Tensor, x_cat: Tensor, return_attention: bool = False):
        x = self.position(self.tokenizer(x_num, x_cat))  # B × F × d_token
        x = self.convs(x.transpose(1, 2)).transpose(1, 2)  # B × L × C, L = F
        x, w = self.attn(x, mask=self.alibi, need_weights=return_attention)  # B × L × C'
        out = self.head(torch.cat([x.mean(dim=1), x.amax(dim=1)], dim=1))  # B × d_out
        return (out, [w]) if return_attention else out

    @torch.no_grad()
    def feature_attention(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        """Mean attention over batch and heads (F × F): position i is feature i, since convs keep length."""
        maps = attention_maps(self, x_num, x_cat)
        return mean_attention(maps)
