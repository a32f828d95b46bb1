"""Tiny checkpoints of the in-context models, built with each package's own architecture code and saved in
the format its loader reads, so that the learners run end to end without the real weights (which this
project's machines cannot download). Random weights: predictions are near constant, and that is all
these checkpoints are for."""

from __future__ import annotations

from pathlib import Path


def tabicl_checkpoint(path: Path, regression: bool = False) -> Path:
    """A one-block TabICL (16-wide): the dict {"config": TabICL's keyword arguments, "state_dict"}."""
    import torch
    from tabicl._model.tabicl import TabICL

    config = {"embed_dim": 16, "col_num_blocks": 1, "col_nhead": 2, "col_num_inds": 8, "row_num_blocks": 1,
              "row_nhead": 2, "row_num_cls": 2, "icl_num_blocks": 1, "icl_nhead": 2, "ff_factor": 2,
              "zero_init": False,  # the default zero output layers would predict one constant
              **({"max_classes": 0, "num_quantiles": 19} if regression else {"max_classes": 10})}
    torch.manual_seed(0)
    torch.save({"config": config, "state_dict": TabICL(**config).state_dict()}, path)
    return path


def tabpfn_checkpoint(path: Path, regression: bool = False, buckets: int = 64) -> Path:
    """A one-layer TabPFN v2 (16-wide): {"state_dict", "config", "architecture_name"}; a regressor's
    bar distribution (its target buckets) rides in the state dict as ``criterion.*``. The file name
    must not read as a later version (v2.5, v3...)."""
    import torch
    from tabpfn.architectures import tabpfn_v2
    from tabpfn.architectures.shared.bar_distribution import FullSupportBarDistribution

    config = {"emsize": 16, "nlayers": 1, "nhead": 2, "features_per_group": 2, "seed": 0,
              "max_num_classes": 0 if regression else 10, "num_buckets": buckets if regression else -1}
    parsed, unused = tabpfn_v2.parse_config(config)
    assert not unused, unused
    torch.manual_seed(0)
    state = dict(tabpfn_v2.get_architecture(parsed).state_dict())
    if regression:
        bars = FullSupportBarDistribution(torch.linspace(-4.0, 4.0, buckets + 1))
        state.update({f"criterion.{k}": v for k, v in bars.state_dict().items()})
    torch.save({"state_dict": state, "config": config, "architecture_name": "tabpfn_v2"}, path)
    return path


BUILD = {"tabicl": tabicl_checkpoint, "tabpfn": tabpfn_checkpoint}
