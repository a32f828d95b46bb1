"""Post-hoc ensembles and stored predictions, on hand-made numbers whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.ensemble import caruana, keys
from pipeline.metrics import headline, score
from pipeline.predictions import SCALE, decode, encode


def test_caruana_picks_the_pair_that_is_right_together():
    y = np.array([0, 0, 1, 1, 0, 1])
    # a is right on rows 0, 1, 4, 5 and unsure where it is wrong (2, 3); b is right on rows 0-3 and
    # unsure where it is wrong (4, 5): each alone gets 4/6, their mean gets every row. c also gets 4/6,
    # with a worse log-loss, and adding it never helps.
    a = np.array([[.9, .1], [.9, .1], [.55, .45], [.55, .45], [.9, .1], [.1, .9]])
    b = np.array([[.9, .1], [.9, .1], [.1, .9], [.1, .9], [.45, .55], [.55, .45]])
    c = np.array([[.6, .4], [.6, .4], [.6, .4], [.6, .4], [.6, .4], [.4, .6]])
    ens = caruana([c, a, b], y, regression=False, iterations=10)
    assert ens.counts[0] == 0 and ens.counts[1] > 0 and ens.counts[2] > 0, ens.counts  # the pair, not c
    assert ens.val_score == 1.0
    assert score("binary", y, ens.predict([c, a, b]), 2)["accuracy"] == 1.0
    first = caruana([c, a, b], y, regression=False, iterations=1)
    assert first.counts.tolist() == [0, 1, 0]  # a and b tie on both keys: the earlier member


def test_caruana_first_pick_is_the_selection_rule_and_never_worse_on_validation():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    members = [rng.dirichlet(np.ones(3), 200) for _ in range(6)]
    one = caruana(members, y, regression=False, iterations=1)
    scores = [score("multiclass", y, m, 3) for m in members]
    best = max(range(6), key=lambda i: (scores[i]["score"], -scores[i]["loss"], -i))
    assert one.counts.tolist() == [int(i == best) for i in range(6)]
    full = caruana(members, y, regression=False)
    assert (full.val_score, -full.val_loss) >= (one.val_score, -one.val_loss)


def test_caruana_on_regression_averages_out_opposite_errors():
    y = np.linspace(0, 1, 50)
    ens = caruana([y + 0.3, y - 0.3, y + 0.5], y, regression=True)
    assert ens.counts.tolist() == [1, 1, 0] and ens.val_score == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
def test_vectorised_keys_are_the_scores_of_the_one_scoring_function(task):
    rng = np.random.default_rng(1)
    n_classes = {"binary": 2, "multiclass": 4}.get(task, 0)
    if n_classes:
        y = rng.integers(0, n_classes, 300)
        preds = [rng.dirichlet(np.ones(n_classes), 300) for _ in range(3)]
        preds[0][:5] = 0.0  # zero rows: the clip and renormalisation must match too
        preds[0][:5, 0] = 1.0
    else:
        y = rng.normal(size=300)
        preds = [y + rng.normal(scale=s, size=300) for s in (0.1, 0.5, 1.0)]
    s, loss = keys(np.stack(preds), y, regression=not n_classes)
    for i, p in enumerate(preds):
        ref = score(task, y, p, n_classes)
        assert s[i] == pytest.approx(ref["score"], rel=1e-12) and loss[i] == pytest.approx(ref["loss"], rel=1e-9)


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression", "constant"])
def test_the_report_headline_is_the_scoring_functions_accuracy_or_r2(task):
    """The ensembles table scores with metrics.headline (no scikit-learn per call): it must be the
    number metrics.score gives, zero rows, NaN predictions and a constant target included."""
    rng = np.random.default_rng(3)
    n_classes = {"binary": 2, "multiclass": 4}.get(task, 0)
    if n_classes:
        y = rng.integers(0, n_classes, 300)
        preds = [rng.dirichlet(np.ones(n_classes), 300) for _ in range(3)]
        preds[0][:7] = 0.0  # zero rows: argmax after the clip and renormalisation, as score does
        preds[1][3, 1] = np.nan
    else:
        y = np.full(300, 2.5) if task == "constant" else rng.normal(size=300)
        preds = [y + rng.normal(scale=0.3, size=300), y.copy(), y + 1.0]
        preds[2][5] = np.inf
    for p in preds:
        ref = score("regression" if not n_classes else task, y, p, n_classes)
        want = ref["r2"] if not n_classes else ref["accuracy"]
        got = headline("regression" if not n_classes else task, y, p)
        assert (np.isnan(got) and np.isnan(want)) or got == pytest.approx(want, rel=1e-12, abs=1e-15), (got, want)
    column = y.reshape(-1, 1)  # a target given as a column is the same target, not an n × n broadcast
    assert headline("regression" if not n_classes else task, column, preds[0]) == pytest.approx(
        headline("regression" if not n_classes else task, y, preds[0]), nan_ok=True)
    with pytest.raises(ValueError, match="predictions for"):
        headline("regression" if not n_classes else task, y[:1], preds[0])


def test_the_headline_of_one_regression_row_is_undefined_as_in_scikit_learn():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns that R² is not well-defined with one sample
        want = score("regression", np.array([1.0]), np.array([1.0]), 0)["r2"]
    assert np.isnan(want) and np.isnan(headline("regression", np.array([1.0]), np.array([1.0])))


def test_stored_predictions_round_trip():
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(5), 100)
    e = encode(p)
    assert e["proba"].dtype == np.uint16 and e["value"] is None and (e["n_rows"], e["n_cols"]) == (100, 5)
    back = decode(e["n_rows"], e["n_cols"], e["proba"], e["value"])
    assert np.abs(back - p).max() < 2.0 / SCALE
    binary = rng.dirichlet(np.ones(2), 40)
    e2 = encode(binary)
    assert e2["n_cols"] == 1  # a binary task keeps the positive class only
    assert np.abs(decode(e2["n_rows"], 1, e2["proba"], None) - binary).max() < 1.0 / SCALE
    v = rng.normal(size=30) * 1e4
    e3 = encode(v)
    assert np.allclose(decode(30, 1, None, e3["value"]), v, rtol=1e-6)
