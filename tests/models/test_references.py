"""The strongest references beside the attention models: LightGBM, random forest, extra trees, TabM and
RealMLP, each one Learner through the one door, each learning something real, each saying what it
cannot do."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.datasets import load_breast_cancer, load_diabetes
from torch import nn

from pipeline.data.preprocess import build_fold
from pipeline.learners import make_learner
from pipeline.learners.resolve import resolve
from pipeline.metrics import score
from pipeline.models.registry import REGISTRY
from pipeline.spec import ModelSpec
from pipeline.train.loop import Recipe, _loss, predict, train

REFERENCES = {"lightgbm": "boosting", "random_forest": "trees", "extra_trees": "trees", "tabm": "network",
              "realmlp": "network"}
# Small enough for CI's two cores, large enough to learn: fewer epochs (and a narrower TabM).
QUICKER = {"tabm": {"max_epochs": 10, "d_block": 128}, "realmlp": {"n_epochs": 32}}


@pytest.fixture(scope="module")
def folds():
    rng = np.random.default_rng(0)
    x, y = load_breast_cancer(return_X_y=True, as_frame=True)
    ids = rng.permutation(len(y))
    binary = build_fold(x, y.astype(str), "binary", ["0", "1"], ids[:300], ids[300:400], ids[400:])
    x, y = load_diabetes(return_X_y=True, as_frame=True)
    ids = rng.permutation(len(y))
    regression = build_fold(x, y, "regression", None, ids[:280], ids[280:360], ids[360:])
    return {"binary": binary, "regression": regression}


def test_the_references_declare_their_kind_and_what_they_cannot_do(capsys):
    from pipeline.cli import main

    assert main(["models"]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    for name, kind in REFERENCES.items():
        assert REGISTRY[name].kind == kind, name
        assert REGISTRY[name].family in listed[name], listed[name]  # `attnbench models` shows the family
    caps = {n: REGISTRY[n].capabilities for n in REFERENCES}
    assert caps["lightgbm"].rungs == "boosting rounds" and not caps["lightgbm"].gpu
    assert caps["tabm"].rungs == "epochs" and caps["tabm"].gpu
    for name in ("random_forest", "extra_trees", "realmlp"):
        assert caps[name].rungs is None, name
        assert "no ASHA rungs" in REGISTRY[name].protocol, name  # the declaration says so
        with pytest.raises(ValueError, match="has none"):  # and a suite asking for ASHA is refused
            ModelSpec(name=name, search="asha")


@pytest.mark.parametrize("task_type", ["binary", "regression"])
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_each_reference_learns_well_past_the_constant_predictor(name, task_type, folds):
    data = folds[task_type]
    info = REGISTRY[name]
    config = {**info.config_defaults(), **info.task_defaults(task_type), **QUICKER.get(name, {})}
    learner = make_learner(info, config, threads=1, seed=0)
    report = learner.fit(data)
    got = score(task_type, data.test.y, learner.predict(data.test), data.n_classes)
    if task_type == "binary":
        majority = max(np.mean(data.test.y == c) for c in (0, 1))
        assert got["accuracy"] > majority + 0.25, (name, got, majority)  # breast cancer: ~0.63 → >0.88
    else:
        assert got["r2"] > 0.3, (name, got)  # diabetes: the published linear baseline is ~0.45
    assert 1 <= report.best_iteration <= report.iterations and report.n_params > 0, report


def test_a_forest_grows_in_batches_and_stops_at_its_time_limit(folds):
    info = REGISTRY["random_forest"]
    learner = make_learner(info, {**info.config_defaults(), "n_estimators": 10_000}, max_seconds=0.2)
    report = learner.fit(folds["binary"])
    assert report.stop_reason == "time_limit" and report.iterations < 10_000, report
    assert report.iterations % learner.chunk == 0 and len(report.curve) == report.iterations // learner.chunk
    full = make_learner(info, {**info.config_defaults(), "n_estimators": 50})
    assert full.fit(folds["binary"]).stop_reason == "complete"  # all its trees: not budget-bound


class _Members(nn.Module):
    """k linear members: N × k × C out; records the training inputs it sees."""

    member_batches = 3

    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.Linear(30, 3 * 2)
        self.seen: list[torch.Tensor] = []

    def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.seen.append(x_num.detach())
        if x_num.dim() == 3:  # each member its own rows: member j's head on x_num[:, j]
            out = self.heads(x_num).view(*x_num.shape[:2], 3, 2)
            return torch.stack([out[:, j, j] for j in range(3)], dim=1)
        return self.heads(x_num).view(len(x_num), 3, 2)


def test_an_ensemble_trains_on_its_members_mean_loss_and_predicts_their_mean(folds):
    """TabM's two rules in the shared loop: the loss of an N × k × C output is the mean of the k
    members' losses; the prediction is the mean of their probabilities. With ``member_batches`` each
    member gets rows of its own."""
    out, y = torch.randn(8, 3, 2), torch.randint(0, 2, (8,))
    members = torch.stack([F.cross_entropy(out[:, j], y) for j in range(3)])
    assert torch.allclose(_loss(out, y, "binary"), members.mean())
    values, target = torch.randn(8, 3, 1), torch.randn(8)
    assert torch.allclose(_loss(values, target, "regression"),
                          torch.stack([F.mse_loss(values[:, j, 0], target) for j in range(3)]).mean())

    data = folds["binary"]
    model = _Members()
    train(model, data, Recipe(max_epochs=2, patience=5, batch_size=64))
    batch = model.seen[0]
    assert batch.dim() == 3 and batch.shape[1] == 3  # N × k × features
    assert not torch.equal(batch[:, 0], batch[:, 1])  # the members' rows differ
    proba = predict(model, data, data.test, torch.device("cpu"))
    with torch.no_grad():
        x = torch.as_tensor(data.test.x_num_filled())
        expected = torch.softmax(model(x, torch.zeros(len(x), 0, dtype=torch.long)), -1).mean(1).numpy()
    assert proba.shape == (len(data.test), 2) and np.allclose(proba, expected, atol=1e-6)


def test_tabm_with_piecewise_linear_embeddings_takes_its_bins_from_the_training_rows(folds):
    info = REGISTRY["tabm"]
    config = {**info.config_defaults(), "num_embeddings": "piecewise", "n_bins": 8, "d_block": 64, "k": 4,
              "max_epochs": 2}
    learner = make_learner(info, config)
    learner.fit(folds["binary"])
    embed = learner.module.net.num_module
    assert type(embed).__name__ == "PiecewiseLinearEmbeddings"
    assert learner.module.member_batches == 4 and learner.quantiles is not None  # its own noisy-quantile step


def test_realmlp_takes_its_per_task_defaults_below_the_suites_values():
    model = resolve(ModelSpec(name="realmlp"))
    assert model.for_task("binary").defaults["lr"] == 0.04 and model.for_task("binary").defaults["act"] == "selu"
    assert model.for_task("regression").defaults["lr"] == 0.2 and model.for_task("regression").defaults["act"] == "mish"
    pinned = resolve(ModelSpec(name="realmlp", fixed={"lr": 0.1}))
    assert pinned.for_task("regression").defaults["lr"] == 0.1  # the suite's value wins
    assert pinned.for_task("regression").defaults["act"] == "mish"


@pytest.mark.parametrize("shared", [False, True])
def test_tabm_members_train_on_batches_of_their_own_or_on_shared_ones(shared, folds):
    """The paper's TabM gives each member rows of its own (N × k × features in); the variant its
    repository's README quotes (``share_training_batches``) gives every member the same batch."""
    info = REGISTRY["tabm"]
    config = {**info.config_defaults(), "share_training_batches": shared, "d_block": 32, "n_blocks": 1, "k": 4,
              "max_epochs": 2}
    learner = make_learner(info, config, seed=0)
    shapes: list[tuple[int, ...]] = []

    def record(module: nn.Module, args: tuple) -> None:
        if module.training and type(module).__name__ == "TabMNetwork":
            shapes.append(tuple(args[0].shape))

    hook = torch.nn.modules.module.register_module_forward_pre_hook(record)
    try:
        learner.fit(folds["binary"])
    finally:
        hook.remove()
    assert shapes and learner.module.member_batches == (0 if shared else 4)
    n_features = folds["binary"].train.x_num.shape[1]
    assert {len(s) for s in shapes} == {2 if shared else 3}, shapes[:3]
    assert shapes[0][-1] == n_features and (shared or shapes[0][1] == 4)
    proba = learner.predict(folds["binary"].test)
    assert proba.shape == (len(folds["binary"].test), 2) and np.allclose(proba.sum(axis=1), 1.0)
