"""Which data favours attention (issue 36 item 4): dataset characteristics read from a results file, the
gap at the largest size, and rank correlations with Benjamini–Hochberg across the characteristics."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from pipeline.data import characteristics
from pipeline.data.ingest import TARGET
from pipeline.data.schema import SCHEMA
from pipeline.report.stats import traits


def test_a_forest_finds_the_noise_features_uninformative():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1500, 10))
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(10)])
    frame[TARGET] = (x[:, 0] + x[:, 1] > 0).astype(int).astype(str)
    kinds = {f"f{i}": "numeric" for i in range(10)}
    noisy = characteristics.uninformative_share(frame, TARGET, kinds, "binary")
    frame[TARGET] = (x.sum(axis=1) > 0).astype(int).astype(str)  # every feature carries signal
    spread = characteristics.uninformative_share(frame, TARGET, kinds, "binary")
    assert noisy >= 0.5 and spread <= 0.2, (noisy, spread)
    frame.loc[:9, "f3"] = np.inf  # an infinite value reads as missing, not as a forest's error
    assert characteristics.uninformative_share(frame, TARGET, kinds, "binary") <= 0.2


def test_irregularity_is_high_for_a_jagged_target_and_low_for_a_smooth_one():
    """Grinsztajn's measure: a forest loses little when a smooth target is smoothed, much when the target
    jumps with a feature at a fine scale (what a kernel over the features averages away)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1500, 4))
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(4)])
    kinds = {f"f{i}": "numeric" for i in range(4)}
    frame[TARGET] = x[:, 0] + 0.5 * x[:, 1]  # smooth
    smooth = characteristics.irregularity(frame, TARGET, kinds, "regression")
    frame[TARGET] = np.sign(np.sin(12 * x[:, 0]))  # flips every quarter of a standard deviation
    jagged = characteristics.irregularity(frame, TARGET, kinds, "regression")
    assert smooth < 0.1 < 0.5 < jagged, (smooth, jagged)
    frame[TARGET] = np.where(np.sin(12 * x[:, 0]) > 0, "a", "b")  # the same, as classes
    assert characteristics.irregularity(frame, TARGET, kinds, "binary") > 0.2
    only_categorical = {"f0": "categorical"}
    assert np.isnan(characteristics.irregularity(frame, TARGET, only_categorical, "binary"))
    # Among 16 features, 15 of them noise, the same: the measure follows the target, not the feature count
    # (a kernel over all 16, or one that kept a row's own value, read 0.0 for the jagged target here).
    x = rng.normal(size=(1500, 16))
    wide = pd.DataFrame(x, columns=[f"g{i}" for i in range(16)])
    kinds = {f"g{i}": "numeric" for i in range(16)}
    wide[TARGET] = x[:, 0] + 0.5 * x[:, 1]
    smooth = characteristics.irregularity(wide, TARGET, kinds, "regression")
    wide[TARGET] = np.sign(np.sin(12 * x[:, 0]))
    jagged = characteristics.irregularity(wide, TARGET, kinds, "regression")
    assert smooth < 0.1 < 0.25 < jagged, (smooth, jagged)


def test_traits_are_read_from_a_results_file(tmp_path):
    con = duckdb.connect(str(tmp_path / "r.duckdb"))
    con.execute(SCHEMA)
    rng = np.random.default_rng(1)
    data = pd.DataFrame({"a": rng.normal(size=400), "c": rng.choice(["x", "y", "z"], 400),
                         TARGET: np.where(rng.random(400) < 0.75, "no", "yes")})
    data.loc[:39, "a"] = np.nan  # 40 of 800 cells missing
    con.execute("CREATE TABLE data_d AS SELECT * FROM data")
    con.execute("INSERT INTO datasets (dataset, task_type, target, n_rows, n_features, n_categorical, data_table) "
                "VALUES ('d', 'binary', 'y', 400, 2, 1, 'data_d'), ('gone', 'regression', 'y', 100, 1, 0, 'data_gone')")
    con.execute("INSERT INTO features (dataset, position, name, kind, n_missing, n_levels) VALUES "
                "('d', 0, 'a', 'numeric', 40, NULL), ('d', 1, 'c', 'categorical', 0, 3), "
                "('gone', 0, 'a', 'numeric', 0, NULL)")
    got = traits.dataset_traits(con, ["d", "gone", "never-run"]).set_index("dataset")
    assert list(got.index) == ["d", "gone"]
    d = got.loc["d"]
    assert (d.features, d.categorical_share, d.categorical_levels, d.missing_share) == (2, 0.5, 3.0, 0.05)
    assert abs(d.target_imbalance - (data[TARGET] == "no").mean()) < 1e-12 and 0 <= d.uninformative_share <= 0.5
    assert abs(d.irregularity) < 0.1  # a target drawn apart from the features: nothing to lose by smoothing
    # a reference's dataset whose rows the file does not hold: what the tables say, NaN for the rest
    assert np.isnan(got.loc["gone", "target_imbalance"]) and np.isnan(got.loc["gone", "uninformative_share"])
    assert np.isnan(got.loc["gone", "irregularity"])
    # a file from before references shipped characteristics has no table of them: the same
    con.execute("DROP TABLE dataset_traits")
    assert traits.dataset_traits(con, ["d", "gone", "never-run"]).set_index("dataset").equals(got)
    con.execute(SCHEMA)
    # what a reference shipped for it serves instead; where the rows are here, they win
    con.execute("INSERT INTO dataset_traits VALUES ('gone', 1.5, 0.25, 0.125), ('d', 9.0, 9.0, 9.0)")
    shipped = traits.dataset_traits(con, ["d", "gone"]).set_index("dataset")
    assert tuple(shipped.loc["gone", list(characteristics.FROM_ROWS)]) == (1.5, 0.25, 0.125)
    assert shipped.loc["gone", "features"] == 1 and shipped.loc["d"].equals(d)


def test_each_characteristic_is_tested_against_the_gap_with_bh():
    rng = np.random.default_rng(2)
    n = 12
    t = pd.DataFrame({"dataset": [f"d{i}" for i in range(n)], **{k: rng.normal(size=n) for k in traits.TRAITS}})
    t["categorical_share"] = np.linspace(0, 1, n)
    t["features"] = 5.0  # the same everywhere: not tested
    g = pd.DataFrame({"dataset": t.dataset, "gap": -np.linspace(0, 0.1, n) + rng.normal(0, 0.001, n)})
    out = traits.favours(t, g).set_index("trait")
    assert out.loc["categorical_share", "rho"] < -0.95 and out.loc["categorical_share", "q"] < 0.05
    assert np.isnan(out.loc["features", "rho"]) and np.isnan(out.loc["features", "q"])
    tested = out.dropna(subset=["p"])
    # Benjamini–Hochberg: q = min over larger p of p·m/rank, never below p
    ranked = tested.p.sort_values()
    m = len(ranked)
    expect = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1].clip(upper=1)
    assert np.allclose(tested.q[ranked.index], expect)
    assert (out.n[out.p.notna()] == n).all()


def test_three_datasets_in_order_are_no_evidence():
    """ρ = 1 on 3 points happens once in 6 orderings: p = 1/3 two-sided, not the t-approximation's 0."""
    rho, p = traits.spearman(np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3]))
    assert rho == 1.0 and abs(p - 1 / 3) < 1e-12
    t = pd.DataFrame({"dataset": ["a", "b", "c"], **{k: [1.0, 2.0, 3.0] for k in traits.TRAITS}})
    out = traits.favours(t, pd.DataFrame({"dataset": ["a", "b", "c"], "gap": [0.1, 0.2, 0.3]}))
    assert (out.q > 0.05).all()  # nothing survives on three datasets
