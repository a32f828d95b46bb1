"""Data: real files ingested into DuckDB with the right types, and splits that are nested,
stratified and leak-free; preprocessing that sees training rows only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.data import ingest, sources
from pipeline.data.preprocess import Preprocessor
from pipeline.data.raw import RawDataset
from pipeline.data.store import Store
from pipeline.errors import DataError, StoreError
from pipeline.spec import Protocol
from pipeline.suite_datasets import LocalFile, SklearnDataset


@pytest.fixture
def credit_g(shared_data: Path, tmp_path: Path):
    store = Store(tmp_path / "r.duckdb")
    spec = LocalFile(file=str(shared_data / "31-credit-g.parquet"), target="class", name="credit-g", openml_id=31)
    protocol = Protocol(folds=5, repeats=2, validation_fraction=0.2, subset_seeds=2)
    ds = ingest.ingest(store, spec, protocol, seed=0)
    key = ingest.split_key(protocol, 0, ds.checksum, ds.has_official_folds)
    return store, ds, key


def test_parquet_ingested_with_types(credit_g):
    store, ds, _ = credit_g
    meta = store.query("SELECT * FROM datasets").iloc[0]
    assert (meta.n_rows, meta.n_features, meta.n_numeric, meta.n_categorical) == (1000, 20, 7, 13)
    assert meta.task_type == "binary" and meta.openml_id == 31
    kinds = store.query("SELECT name, kind FROM features ORDER BY position").set_index("name").kind
    assert kinds["checking_status"] == "categorical" and kinds["duration"] == "numeric"
    assert isinstance(ds.features["checking_status"].dtype, pd.CategoricalDtype)
    assert ds.features["duration"].dtype == float
    assert ds.classes == ["bad", "good"]
    # Reading back equals the file.
    raw = pd.read_parquet(Path(meta.source.removeprefix("file:")))
    assert (ds.y.to_numpy() == raw["class"].astype(str).to_numpy()).all()
    np.testing.assert_allclose(ds.features["credit_amount"], raw["credit_amount"].astype(float))


def test_splits_are_leak_free_and_stratified(credit_g):
    store, ds, key = credit_g
    s = store.query("SELECT * FROM splits WHERE split_key = ?", [key])
    assert s.groupby(["repeat", "fold"]).ngroups == 10
    y = ds.y.to_numpy()
    test_rows = []
    for (r, f), g in s.groupby(["repeat", "fold"]):
        roles = g.groupby("role").row_id.apply(set)
        assert not (roles["train"] & roles["valid"]) and not (roles["train"] & roles["test"])
        assert not (roles["valid"] & roles["test"])
        assert len(roles["train"] | roles["valid"] | roles["test"]) == 1000
        assert abs(len(roles["valid"]) / (len(roles["train"]) + len(roles["valid"])) - 0.2) < 0.01
        for part in roles:
            share = np.mean(y[list(part)] == "good")
            assert abs(share - 0.7) < 0.02, (r, f, share)
        if r == 0:
            test_rows += list(roles["test"])
    assert sorted(test_rows) == list(range(1000))  # the test folds of a repeat partition the data


def test_training_subsets_are_nested_and_stratified(credit_g):
    store, ds, key = credit_g
    o = store.query("SELECT * FROM train_order WHERE split_key = ? AND repeat = 0 AND fold = 0 ORDER BY seed, rank", [key])
    train = set(store.query("SELECT row_id FROM splits WHERE split_key = ? AND repeat = 0 AND fold = 0 AND role = 'train'",
                            [key]).row_id)
    y = ds.y.to_numpy()
    for seed, g in o.groupby("seed"):
        order = g.row_id.to_numpy()
        assert set(order) == train and len(order) == len(train)
        for n in (16, 64, 128, 256):
            share = np.mean(y[order[:n]] == "good")
            assert abs(share - 0.7) <= 1.5 / n + 0.01, (seed, n, share)
            assert set(y[order[:n]]) == {"good", "bad"}
        # nested: the subset of 64 is inside the subset of 128 by construction of a prefix
        assert set(order[:64]) <= set(order[:128])
    a, b = (g.row_id.to_numpy()[:64] for _, g in o.groupby("seed"))
    assert set(a) != set(b)  # two subset seeds draw different subsets


def test_official_split_key_and_resume_of_ingest(credit_g):
    store, ds, _key = credit_g
    again = ingest.ingest(store, LocalFile(file="/nonexistent.parquet", target="class", name="credit-g"),
                          Protocol(folds=5, repeats=2, validation_fraction=0.2, subset_seeds=2), seed=0)
    assert again.checksum == ds.checksum  # served from the store: the file is not read again


def test_a_name_keeps_its_rows(credit_g, shared_data: Path, tmp_path: Path):
    """Results are keyed by dataset name: a name stored for one dataset cannot be given to another."""
    store, ds, _key = credit_g
    protocol = Protocol(folds=5, repeats=2, validation_fraction=0.2, subset_seeds=2)
    moved = tmp_path / "elsewhere.parquet"
    moved.write_bytes((shared_data / "31-credit-g.parquet").read_bytes())
    same = ingest.ingest(store, LocalFile(file=str(moved), target="class", name="credit-g"), protocol, seed=0)
    assert same.checksum == ds.checksum  # the same rows at another path keep the name
    other = tmp_path / "other.parquet"
    pd.read_parquet(moved).head(500).to_parquet(other)
    for spec in (LocalFile(file=str(other), target="class", name="credit-g"),
                 SklearnDataset(sklearn="breast_cancer", name="credit-g")):
        with pytest.raises(DataError, match=r"'credit-g' is already used .* another 'name:'"):
            ingest.ingest(store, spec, protocol, seed=0)
    assert store.query("SELECT count(*) AS n FROM datasets").n.iloc[0] == 1


def test_preprocessing_is_fit_on_training_rows_only():
    x = pd.DataFrame({"num": [0.0, 2.0, np.nan, 100.0], "cat": pd.Categorical(["a", "b", None, "zzz"])})
    pre = Preprocessor().fit(x.iloc[:3])
    num, cat = pre.transform(x)
    assert num[0, 0] == pytest.approx(-1.0) and num[1, 0] == pytest.approx(1.0)  # mean 1, std 1 from train
    assert np.isnan(num[2, 0])
    assert cat[:, 0].tolist() == [1, 2, 0, 0]  # missing and unseen share code 0
    assert pre.cardinalities == [3]


def test_high_cardinality_categories_are_capped():
    x = pd.DataFrame({"id": pd.Categorical([f"v{i % 300}" for i in range(900)])})
    pre = Preprocessor(max_categories=16).fit(x)
    _, cat = pre.transform(x)
    assert pre.cardinalities == [17] and cat.max() == 16 and cat.min() >= 1


@pytest.mark.parametrize(
    ("frame", "kwargs", "message"),
    [
        (pd.DataFrame({"a": [], "y": []}), {}, "empty"),
        (pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [1, 1, 1]}), {"task_type": "binary"}, "single class"),
        (pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [1.0, np.nan, 2.0]}), {}, "missing values"),
        (pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [1.0, np.inf, 2.0]}), {"task_type": "regression"}, "infinite"),
        (pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}), {"target": "label"}, "target column 'label' not found"),
        (pd.DataFrame({"a": [np.nan, np.nan], "y": [0, 1]}), {}, "every feature is missing"),
    ],
)
def test_bad_data_is_a_clear_error(tmp_path: Path, frame, kwargs, message):
    path = tmp_path / "d.parquet"
    frame.to_parquet(path)
    spec = LocalFile(file=str(path), **{"target": "y", **kwargs})
    with pytest.raises(DataError, match=message):
        sources.load(spec)


def test_unreadable_files(tmp_path: Path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DataError, match="cannot read"):
        sources.load(LocalFile(file=str(bad), target="y"))
    with pytest.raises(DataError, match="not found"):
        sources.load(LocalFile(file=str(tmp_path / "none.csv"), target="y"))
    dup = tmp_path / "dup.csv"
    dup.write_text("a,a,y\n1,2,0\n3,4,1\n")
    with pytest.raises(DataError, match="duplicate"):
        sources.load(LocalFile(file=str(dup), target="y"))


def test_foreign_duckdb_file_is_refused(tmp_path: Path):
    import duckdb

    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE sales (id INT)")
    con.close()
    with pytest.raises(StoreError, match="not written by attnbench"):
        Store(path).check_writable()
    with pytest.raises(StoreError, match="not written by attnbench"):
        Store(path).query("SELECT 1")
    newer = tmp_path / "newer.duckdb"
    Store(newer).init()
    con = duckdb.connect(str(newer))
    con.execute("UPDATE attnbench_meta SET value = '999' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match="newer attnbench"):
        Store(newer).check_writable()


def test_sklearn_dataset_matches_openml_1510(shared_data: Path):
    ds = sources.load(SklearnDataset(sklearn="breast_cancer"))
    ref = pd.read_parquet(shared_data / "1510-wdbc.parquet")
    assert ds.features.shape == (569, 30) and len(ref) == 569
    assert ds.y.value_counts().to_dict() == {"benign": 357, "malignant": 212}


# ------------------------------------------------------------------------------------- synthetic
def _fit_score(x: pd.DataFrame, y: pd.Series, cols: list[str]) -> float:
    """Held-out accuracy of a random forest on ``cols`` (categoricals one-hot): a flexible model that
    finds an interaction a greedy single tree would miss."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    feats = pd.get_dummies(x[cols])
    a, b, ya, yb = train_test_split(feats, y.astype(str), test_size=0.3, random_state=0, stratify=y.astype(str))
    forest = RandomForestClassifier(n_estimators=100, min_samples_leaf=5, random_state=0, n_jobs=1)
    return float(forest.fit(a, ya).score(b, yb))


@pytest.mark.parametrize("kind", ["interaction", "num_cat_interaction", "additive"])
def test_synthetic_tasks_have_the_structure_they_claim(kind):
    from pipeline.data import synthetic

    x, y = synthetic.generate(kind, 4000, n_noise=6, n_cat_noise=2, seed=3)
    signal = synthetic.INFORMATIVE[kind]
    assert set(signal) <= set(x.columns) and x.shape[1] == 2 + 6 + 2
    assert list(x.columns) != sorted(x.columns)  # shuffled: a position says nothing
    assert abs((y == "1").mean() - 0.5) < 0.05
    assert _fit_score(x, y, signal) > 0.95  # the informative pair decides the label
    noise = [c for c in x.columns if c.startswith("noise")]
    assert _fit_score(x, y, noise) < 0.56  # the noise says nothing
    alone = [_fit_score(x, y, [c]) for c in signal]
    if kind == "additive":
        assert min(alone) > 0.65  # the control: each feature helps on its own
    else:
        assert max(alone) < 0.56  # an interaction: each feature alone is at chance
    again, y2 = synthetic.generate(kind, 4000, n_noise=6, n_cat_noise=2, seed=3)
    pd.testing.assert_frame_equal(x, again)  # seeded
    pd.testing.assert_series_equal(y, y2)


def test_a_synthetic_task_is_stored_like_any_dataset(tmp_path: Path):
    from pipeline.suite_datasets import SyntheticDataset

    store = Store(tmp_path / "r.duckdb")
    spec = SyntheticDataset(synthetic="num_cat_interaction", n_rows=300, n_noise=3, n_cat_noise=1, seed=1)
    ds = ingest.ingest(store, spec, Protocol(folds=3), seed=0)
    assert ds.name == "num_cat_interaction-300r-3n-1c-s1" and ds.task_type == "binary" and len(ds.y) == 300
    meta = store.query("SELECT source, description, n_categorical FROM datasets").iloc[0]
    assert meta.source == "synthetic:num_cat_interaction?n_rows=300&n_noise=3&n_cat_noise=1&seed=1"
    assert "Informative features: signal_a, signal_cat" in meta.description and meta.n_categorical == 2
    # The same name for other parameters is refused: results are keyed by dataset name.
    other = SyntheticDataset(synthetic="num_cat_interaction", n_rows=400, name=ds.name)
    with pytest.raises(DataError, match="already used"):
        ingest.ingest(store, other, Protocol(folds=3), seed=0)


def test_an_exported_openml_task_renamed_for_a_clash_is_checked_against_its_own_rows(tmp_path, monkeypatch):
    """In a file exported from a reference (descriptions, no rows), an unnamed OpenML task stored as
    'credit-g-task31' beside another dataset called 'credit-g' is checked against its own checksum: the
    reference's rows pass, other rows are refused, and re-ingesting drops the characteristics of the rows
    it replaces."""
    from pipeline.suite_datasets import OpenMLTask

    def raw(source: str, task: int | None, seed: int) -> RawDataset:
        r = np.random.default_rng(seed)
        return RawDataset(name="credit-g", source=source, features=pd.DataFrame({"a": r.normal(size=60)}),
                                  y=pd.Series(r.choice(["p", "q"], 60)), task_type="binary", target="t",
                                  openml_task_id=task)

    task_rows, other = raw("openml-task:31", 31, 1), raw("file:/x/credit-g.csv", None, 2)
    monkeypatch.setattr(sources, "load", lambda spec: raw("openml-task:31", 31, 1))
    for held, refused in ((task_rows.checksum(), False), ("not-these-rows", True)):
        store = Store(tmp_path / f"{held}.duckdb")
        with store.transaction() as con:
            con.execute("INSERT INTO datasets (dataset, source, task_type, openml_task_id, checksum, data_table) "
                        "VALUES ('credit-g', 'file:/x/credit-g.csv', 'binary', NULL, ?, NULL), "
                        "('credit-g-task31', 'openml-task:31', 'binary', 31, ?, NULL)", [other.checksum(), held])
            con.execute("INSERT INTO dataset_traits VALUES ('credit-g-task31', 0.5, 0.5, 0.5)")
        if refused:
            with pytest.raises(DataError, match=r"'credit-g-task31'.*not-these-rows"):
                ingest.prepare(store, OpenMLTask(openml_task=31), Protocol(folds=2, repeats=1), 0)
            continue
        stored = ingest.ingest(store, OpenMLTask(openml_task=31), Protocol(folds=2, repeats=1), 0)
        assert stored.name == "credit-g-task31" and stored.checksum == task_rows.checksum()
        assert store.query("SELECT count(*) AS n FROM dataset_traits").n[0] == 0  # of the rows it replaced
