"""bf16 training on the CPU: what `amp` resolves to, that a bf16 fit lands where an fp32 one does, and that
the precision a trial ran in is recorded with it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from pipeline.train.precision import cpu_has_bf16, resolve_precision


def test_amp_auto_is_bf16_only_where_the_cpu_has_native_bf16(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ATTNBENCH_CPU_BF16", "0")  # a CPU without AVX512-BF16 or AMX (simulated)
    assert not cpu_has_bf16() and resolve_precision("auto", "cpu") == "fp32"
    monkeypatch.setenv("ATTNBENCH_CPU_BF16", "1")  # one with them
    assert cpu_has_bf16() and resolve_precision("auto", "cpu") == "bf16"
    assert resolve_precision("off", "cpu") == "fp32" and resolve_precision("bf16", "cpu") == "bf16"
    assert resolve_precision("fp16", "cpu") == "fp16"
    with pytest.raises(ValueError, match="one of auto, off, bf16, fp16"):
        resolve_precision("bf17", "cpu")


def test_the_machines_own_answer_follows_its_cpu_flags(monkeypatch: pytest.MonkeyPatch):
    from pipeline.train import precision

    monkeypatch.delenv("ATTNBENCH_CPU_BF16", raising=False)
    flags = precision._cpu_flags()
    assert cpu_has_bf16() == bool({"avx512_bf16", "amx_bf16"} & flags)


@pytest.mark.parametrize("model", ["mlp", "ft_transformer", "tabm"])
def test_a_bf16_fit_lands_within_tolerance_of_fp32(model: str):
    """Digits (10 classes, 1,797 rows): the same model, seed and data in fp32 and in bf16; their test
    accuracies within 3 points, and the bf16 one says so."""
    from pipeline.learners.estimator import TabularClassifier

    x, y = load_digits(return_X_y=True, as_frame=True)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
    small = {"mlp": {}, "ft_transformer": {"d_token": 32, "n_blocks": 1, "lr": 1e-3}, "tabm": {"k": 8, "d_block": 128}}[model]
    scores, precisions = {}, {}
    for amp in ("off", "bf16"):
        est = TabularClassifier(model, max_epochs=15, batch_size=128, amp=amp, random_state=0, **small)
        est.fit(xtr, ytr)
        scores[amp], precisions[amp] = est.score(xte, yte), est.precision_
    assert precisions == {"off": "fp32", "bf16": "bf16"}
    assert scores["off"] > 0.6 and abs(scores["bf16"] - scores["off"]) <= 0.03, scores


def test_inference_runs_in_the_precision_the_model_trained_in():
    from pipeline.data.preprocess import FoldData, Part
    from pipeline.models.mlp import MLP
    from pipeline.train.loop import predict

    rng = np.random.default_rng(0)
    part = Part(rng.standard_normal((64, 4)).astype(np.float32), np.zeros((64, 0), dtype=np.int64),
                rng.integers(0, 2, 64))
    data = FoldData("binary", 2, [f"n{i}" for i in range(4)], [], [], part, part, part)
    model = MLP(n_num=4, cat_cardinalities=[], d_out=2)
    seen = []
    model.register_forward_hook(lambda m, i, o: seen.append(torch.is_autocast_enabled("cpu")))
    predict(model, data, part, torch.device("cpu"), precision="bf16")
    predict(model, data, part, torch.device("cpu"), precision="fp32")
    assert seen == [True, False]
