"""MLP on numeric features and categorical embeddings: the baseline every attention model must beat."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.models.layers import Dropout

INFO = {
    "name": "mlp",
    "display_name": "MLP",
    "kind": "network",
    "class": "MLP",
    "description": "Bag-of-features MLP: numeric features and categorical embeddings, concatenated.",
    "paper": "https://arxiv.org/abs/2106.11959",
    "space": {
        "d_block": {"choice": [64, 128, 256, 512]},
        "n_blocks": {"int": [1, 4]},
        "dropout": {"uniform": [0.0, 0.5]},
    },
}


class MLP(nn.Module):
    def __init__(
        self,
        *,
        n_num: int,
        cat_cardinalities: list[int],
        d_out: int,
        d_block: int = 256,
        n_blocks: int = 3,
        dropout: float = 0.1,
        d_embedding: int = 8,
    ) -> None:
        super().__init__()
        if n_num + len(cat_cardinalities) == 0 or d_out < 1 or n_blocks < 1 or d_block < 1:
            raise ValueError(f"{n_num=}, {cat_cardinalities=}, {d_out=}, {n_blocks=}, {d_block=}: need a feature and positive sizes")
        self.cat = nn.ModuleList(nn.Embedding(c, d_embedding) for c in cat_cardinalities)
        d_in = n_num + d_embedding * len(cat_cardinalities)
        layers: list[nn.Module] = []
        for i in range(n_blocks):
            layers += [nn.Linear(d_in if i == 0 else d_block, d_block), nn.ReLU(), Dropout(dropout)]
        self.blocks = nn.Sequential(*layers)
        self.head = nn.Linear(d_block, d_out)

    def forward(self, x_num: Tensor, x_cat: Tensor) -> Tensor:
        parts = [x_num] + [emb(x_cat[:, i]) for i, emb in enumerate(self.cat)]
        x = torch.cat(parts, dim=1)  # B × d_in
        return self.head(self.blocks(x))  # B × d_out
