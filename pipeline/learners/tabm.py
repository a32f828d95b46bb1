"""TabM (Gorishniy et al., ICLR 2025): one MLP that is an ensemble of k = 32 members sharing most of
their weights (BatchEnsemble), from the ``tabm`` package, optionally with piecewise-linear embeddings
of the numeric features (``num_embeddings: piecewise``, the paper's TabM†).

Trained with our recipe (AdamW, early stopping on validation loss, the trial's time limit, ASHA on
epochs) and the two rules the paper gives: each member trains on batches of its own and the loss is
the mean of the k members' losses; the prediction is the mean of their probabilities (or values).
``share_training_batches: true`` gives every member the same batches instead (the first version of
the paper, whose figures the TabM repository's README quotes).
See :mod:`pipeline.train.loop`.

Defaults: the package's ``TabM.make`` (3 blocks of 512, dropout 0.1; 2 blocks with embeddings, 48
bins of 16 dimensions) and the paper's optimiser defaults (lr 2e-3, weight decay 3e-4, patience 16).
Search space: the paper's (``paper/exp/tabm*/*/0-tuning.toml`` in its repository): n_blocks 1-5,
d_block 64-1024, dropout, lr log-uniform 1e-4-3e-3, weight decay, and with embeddings n_bins 2-128
and d_embedding 8-32 (a suite entry that fixes ``num_embeddings: piecewise`` searches them with
``space: {n_bins: {int: [2, 128]}, d_embedding: {int: [8, 32]}, n_blocks: {int: [1, 4]}}``). Where ours differs, said here: the paper's "0 or log-uniform" weight decay and
"0 or uniform" dropout are one domain each (log-uniform 1e-4-0.1; uniform 0-0.5); the learning rate
follows our recipe's cosine schedule without warm-up (the paper keeps it constant); batch sizes
follow our recipe (256, smaller on small training sets).

Preprocessing of its own: the numeric features are quantile-transformed to a normal distribution,
fit on the training rows with a little noise (the paper's "noisy-quantile" policy), on top of the
suite's preprocessing; the piecewise-linear bins are the training rows' quantiles.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from pipeline.data.preprocess import FoldData, Part
from pipeline.learners.base import Capabilities, FitReport, OnStep
from pipeline.learners.torch import TorchLearner


def tabm_network(n_num: int, cat_cardinalities: list[int], d_out: int, *, k: int = 32, n_blocks: int = 3,
                 d_block: int = 512, dropout: float = 0.1, arch_type: str = "tabm", num_embeddings: str = "none",
                 n_bins: int = 48, d_embedding: int = 16, share_training_batches: bool = False,
                 bins: list[Any] | None = None) -> Any:
    """The ``tabm`` package's TabM behind our forward contract (``x_num``, ``x_cat`` → N × k × d_out).
    ``bins``: the piecewise-linear embeddings' bin edges per numeric feature (from the training rows);
    without them (a build check), standard-normal quantiles. ``share_training_batches``: the members
    train on the same batches (the TabM of the paper's first version and of its repository's README
    table, "TabM-spade" in its result files) instead of batches of their own; the cost is the same."""
    import rtdl_num_embeddings
    import tabm
    import torch
    from torch import nn

    if num_embeddings not in ("none", "piecewise"):
        raise ValueError(f"num_embeddings must be 'none' or 'piecewise', not {num_embeddings!r}")
    embed = None
    if num_embeddings == "piecewise" and n_num:
        if bins is None:
            edges = torch.distributions.Normal(0.0, 1.0).icdf(torch.linspace(0.01, 0.99, int(n_bins) + 1))
            bins = [edges.clone() for _ in range(n_num)]
        embed = rtdl_num_embeddings.PiecewiseLinearEmbeddings(bins, int(d_embedding), activation=False, version="B")
    net = tabm.TabM.make(n_num_features=n_num, cat_cardinalities=list(cat_cardinalities) or None, d_out=d_out,
                         num_embeddings=embed, k=int(k), n_blocks=int(n_blocks), d_block=int(d_block),
                         dropout=float(dropout), arch_type=arch_type)
    _fast_dropout(net)

    class TabMNetwork(nn.Module):
        """Our inputs to the package's (no tensor where the fold has no feature of that type)."""

        # the loop gives each member batches of its own, or (0) one batch that every member sees
        member_batches = 0 if share_training_batches else int(k)

        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor) -> torch.Tensor:
            return self.net(x_num if n_num else None, x_cat if len(cat_cardinalities) else None)

    return TabMNetwork()


def _fast_dropout(net: Any) -> None:
    """The package's ``nn.Dropout`` layers become ours (the same law, :func:`pipeline.models.layers.apply_dropout`):
    on the CPU its Bernoulli sampling took a quarter of a TabM step (k × N × d masks)."""
    from torch import nn

    from pipeline.models.layers import Dropout

    for parent in list(net.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:
                setattr(parent, name, Dropout(child.p))


class TabMLearner(TorchLearner):
    """The torch learner with TabM's own numeric preprocessing and the piecewise-linear bins taken
    from the training rows. No DDP (members' batches are not sharded) and no compression variants."""

    name = "tabm"
    kind = "network"
    builder = "pipeline.learners.tabm:tabm_network"
    display_name = "TabM"
    description = "An MLP that is a parameter-efficient ensemble of 32 (BatchEnsemble); mean loss and mean prediction."
    paper = "https://arxiv.org/abs/2410.24210"
    protocol = "its own noisy-quantile transform of the numeric features; no DDP, no compression variants."
    quick = {"d_block": 16, "n_blocks": 1, "k": 2}
    training = {"lr": 0.002, "weight_decay": 0.0003, "patience": 16, "warmup_frac": 0.0}
    defaults = {
        "k": 32,
        "n_blocks": 3,
        "d_block": 512,
        "dropout": 0.1,
        "arch_type": "tabm",
        "num_embeddings": "none",  # none | piecewise
        "n_bins": 48,
        "d_embedding": 16,
        "share_training_batches": False,  # True: every member on the same batches (TabM of arXiv v1)
    }
    space = {
        "n_blocks": {"int": [1, 5]},
        "d_block": {"int": [64, 1024]},
        "dropout": {"uniform": [0.0, 0.5]},
        "lr": {"loguniform": [1e-4, 3e-3]},
        "weight_decay": {"loguniform": [1e-4, 1e-1]},
    }

    capabilities = Capabilities(gpu=True, rungs="epochs", budget="max_epochs", grace=3, cost=60.0,
                                libraries=("torch", "tabm"))

    def fit(self, data: FoldData, on_step: OnStep | None = None) -> FitReport:
        from sklearn.preprocessing import QuantileTransformer

        x = data.train.x_num.astype(np.float64)
        self.quantiles = None
        if x.shape[1] and len(x):
            noise = np.random.default_rng(self.seed).normal(0.0, 1e-5, x.shape) * np.nanstd(x, axis=0, keepdims=True)
            self.quantiles = QuantileTransformer(n_quantiles=max(min(len(x) // 30, 1000), 10),
                                                 output_distribution="normal", subsample=10**9,
                                                 random_state=self.seed).fit(x + noise)
        own = replace(data, train=self.transform(data.train), valid=self.transform(data.valid),
                      test=self.transform(data.test))
        return super().fit(own, on_step)

    def transform(self, part: Part) -> Part:
        if self.quantiles is None or not len(part):
            return part
        return Part(self.quantiles.transform(part.x_num.astype(np.float64)).astype(np.float32), part.x_cat, part.y)

    def build(self, data: FoldData) -> Any:
        arch = {k: v for k, v in self.config.items() if k in self.info.defaults}
        bins = None
        if arch.get("num_embeddings") == "piecewise" and data.num_names:
            import rtdl_num_embeddings
            import torch

            x = torch.as_tensor(data.train.x_num_filled(), dtype=torch.float32)
            bins = rtdl_num_embeddings.compute_bins(x, n_bins=min(int(arch["n_bins"]), max(len(x) - 1, 2)))
        return self.info.load()(n_num=len(data.num_names), cat_cardinalities=data.cat_cardinalities,
                                d_out=data.d_out, bins=bins, **arch)

    def predict(self, part: Part) -> np.ndarray:
        return super().predict(self.transform(part))

    def flops_per_row(self, part: Part) -> float | None:
        return super().flops_per_row(self.transform(part))
