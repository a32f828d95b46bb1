"""CBAM-style CNN: 1-D convolutions over the feature sequence with channel and spatial attention, then a
SAGAN self-attention layer (γ-gated, starting as the identity), pooled into a linear head.

Every feature becomes a token whose d_token numbers are the input channels; convolutions are
"same"-padded, so the L positions of the feature map stay the F features throughout.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.embeddings import FeatureTokenizer, check_io, make_position
from pipeline.models.layers import CBAM1d, Dropout, GatedSelfAttention1d, attention_maps, mean_attention

INFO = {
    "name": "cbam_cnn",
    "display_name": "CBAM CNN",
    "kind": "attention",
    "class": "CBAMCNN",
    "description": "1-D CNN over feature tokens with CBAM channel/spatial attention and SAGAN attention.",
    "paper": "https://arxiv.org/abs/1807.06521",
    "space": {
        "channels": {"choice": [32, 64, 128]},
        "n_conv": {"int": [1, 3]},
        "kernel_size": {"choice": [3, 5]},
        "dropout": {"uniform": [0.0, 0.4]},
        "position": {"choice": ["identity", "sinusoidal", "none"]},
    },
    "ablations": {  # the claims' switches (pipeline/report/stats/claims.py)
        "se": {"key": "se", "off": False},  # no channel attention, the squeeze-and-excitation part of CBAM
    },
    "notes": "feature_attention is the SAGAN layer's position × position map, which is F × F because "
             "convolutions keep the length. RoPE and ALiBi do not apply (SAGAN has no heads or rotations).",
}

BACKBONE_POSITIONS = ("none", "identity", "learned", "sinusoidal")


class CBAMBackbone(nn.Module):
    """``n_conv`` blocks of Conv1d → BatchNorm → ReLU → CBAM → Dropout: B × c_in × L → B × C × L."""

    def __init__(self, c_in: int, channels: int, n_conv: int, kernel_size: int, reduction: int,
                 spatial_kernel: int, dropout: float, se: bool = True) -> None:
        super().__init__()
        if min(c_in, channels, n_conv, kernel_size, reduction, spatial_kernel) < 1:
            raise ValueError(f"{c_in=}, {channels=}, {n_conv=}, {kernel_size=}, {reduction=} and "
                             f"{spatial_kernel=} must be >= 1")
        layers: list[nn.Module] = []
        for i in range(n_conv):
            layers += [nn.Conv1d(c_in if i == 0 else channels, channels, kernel_size, padding="same"),
                       nn.BatchNorm1d(channels), nn.ReLU(), CBAM1d(channels, reduction, spatial_kernel, channel=se),
                       Dropout(dropout)]
        self.layers = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.layers(x)  # B × C × L


class CBAMCNN(nn.Module):
    """Tokens (B × F × d_token) → CBAM backbone (B × C × F) → SAGAN attention → mean ‖ max pool → head."""

    def __init__(
        self,
        *,
        n_num: int,
        cat_cardinalities: list[int],
        d_out: int,
        d_token: int = 16,
        channels: int = 32,
        n_conv: int = 2,
        kernel_size: int = 3,
        reduction: int = 16,
        spatial_kernel: int = 7,
        dropout: float = 0.1,
        position: str = "identity",
        num_embedding: str = "per_feature",
        cat_embedding: str = "per_feature",
        se: bool = True,  # channel attention, the squeeze-and-excitation part of CBAM (false: an ablation)
    ) -> None:
        super().__init__()
        check_io(n_num, cat_cardinalities, d_out)
        if position not in BACKBONE_POSITIONS:
            raise ValueError(f"{position=} must be one of {BACKBONE_POSITIONS}")
        self.tokenizer = FeatureTokenizer(n_num, cat_cardinalities, d_token,
                                          num_embedding=num_embedding, cat_embedding=cat_embedding)
        self.position = make_position(position, n_num + len(cat_cardinalities), d_token)
        self.backbone = CBAMBackbone(d_token, channels, n_conv, kernel_size, reduction, spatial_kernel,
                                     dropout, se=se)
        self.attn = GatedSelfAttention1d(channels)
        self.head = nn.Sequential(Dropout(dropout), nn.Linear(2 * channels, d_out))

    def forward(self, x_num: Tensor, x_cat: Tensor, return_attention: bool = False):
        x = self.position(self.tokenizer(x_num, x_cat))  # B × F × d_token
        x = self.backbone(x.transpose(1, 2))  # B × C × L, L = F
        x, w = self.attn(x, need_weights=return_attention)  # B × C × L; w: B × 1 × L × L
        out = self.head(torch.cat([x.mean(dim=-1), x.amax(dim=-1)], dim=1))  # B × d_out
        return (out, [w]) if return_attention else out

    @torch.no_grad()
    def feature_attention(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        """The SAGAN layer's mean attention over positions (F × F: position i is feature i)."""
        maps = attention_maps(self, x_num, x_cat)
        return mean_attention(maps)
