"""Issue 38, "say only what the data says": numbers written as YAML 1.2 writes them, columns that are
not features, compression that would change nothing, a model's kind, and messages that name the
model's own keys. Each test fails on the code before the fix."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml
from test_bad_input import in_process

from pipeline.data import ingest, sources
from pipeline.data.store import Store
from pipeline.errors import DataError, SpecError
from pipeline.spec import Protocol, load_suite, parse_suite
from pipeline.suite_datasets import LocalFile
from pipeline.suite_text import SuiteLoader

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "gated_attention"
WINE = {"name": "t", "datasets": [{"sklearn": "wine"}]}


def suite_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def refused(data: dict, *words: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_suite(data, "bad.yaml")
    text = str(info.value)
    for w in words:
        assert w in text, text
    return text


# ------------------------------------------------------------------ 1. YAML reads 1e-4 as a number
def test_exponent_notation_is_a_number_in_every_numeric_key(tmp_path: Path):
    """The README's own space, fixed values, defaults and protocol keys written as 1e-4, 1E+3, 5e3."""
    path = suite_file(tmp_path, """
name: t
datasets: [{sklearn: wine}]
protocol: {validation_fraction: 2.5e-1}
models:
  - name: mlp
    space: {lr: {loguniform: [1e-4, 1e-2]}, weight_decay: {choice: [1e-6, 1E-5]}}
    fixed: {max_epochs: 1, clip_norm: 5e-1}
  - name: xgboost
    fixed: {reg_alpha: 1e-8, n_estimators: 3, gamma: 2E+0}
""")
    suite = load_suite(path)
    mlp, xgb = suite.models
    assert mlp.space["lr"] == {"loguniform": [1e-4, 1e-2]} and mlp.space["weight_decay"] == {"choice": [1e-6, 1e-5]}
    assert mlp.fixed["clip_norm"] == 0.5 and xgb.fixed == {"reg_alpha": 1e-8, "n_estimators": 3, "gamma": 2.0}
    assert suite.protocol.validation_fraction == 0.25
    assert all(isinstance(v, float) for v in (*mlp.space["lr"]["loguniform"], xgb.fixed["reg_alpha"]))


def test_only_true_and_false_are_booleans_so_amp_off_is_the_word_off(tmp_path: Path):
    """YAML 1.1 reads off/on/yes/no as booleans: `amp: off` became False, passed the check and failed
    every trial inside the training loop. As in YAML 1.2, only true and false are booleans."""
    path = suite_file(tmp_path, """
name: t
datasets: [{sklearn: wine}]
models:
  - {name: mlp, fixed: {amp: off}}
  - {name: ft_transformer, space: {amp: {choice: [off, bf16]}}}
""")
    suite = load_suite(path)
    assert suite.models[0].fixed["amp"] == "off" and suite.models[1].space["amp"] == {"choice": ["off", "bf16"]}
    assert yaml.load("[true, False, yes, off]", Loader=SuiteLoader) == [True, False, "yes", "off"]
    assert yaml.safe_load("a: off") == {"a": False}  # PyYAML's own loader is left as it is


@pytest.mark.parametrize("where", ["fixed", "choice"])
def test_a_word_outside_a_keys_choices_is_refused_at_check_time(where: str):
    value = {"amp": "fast"} if where == "fixed" else {"amp": {"choice": ["bf16", "fast"]}}
    refused({**WINE, "models": [{"name": "mlp", ("fixed" if where == "fixed" else "space"): value}]},
            "amp", "'fast' is not one of auto, off, bf16, fp16")


def test_a_fixed_learning_rate_in_exponent_notation_trains(tmp_path: Path):
    """`fixed: {lr: 1e-3}` passed `suites check` and then every trial failed inside torch (TypeError)."""
    from pipeline.learners.resolve import resolve
    from pipeline.learners.trial import Context, fit_and_score, tiny_fold

    path = suite_file(tmp_path, "name: t\ndatasets: [{sklearn: wine}]\nmodels:\n"
                                "  - name: mlp\n    fixed: {lr: 1e-3, max_epochs: 2, d_block: 16}\n")
    model = resolve(load_suite(path).models[0])
    config = model.config({})
    assert config["lr"] == 1e-3 and isinstance(config["lr"], float)
    out = fit_and_score(model.info, config, tiny_fold("binary"), Context())
    assert out.fit.iterations >= 1 and np.isfinite(out.scores.val_score)


def test_a_quoted_number_stays_text_and_is_refused_where_a_number_is_expected(tmp_path: Path):
    quoted = suite_file(tmp_path, 'name: t\ndatasets: [{sklearn: wine}]\nmodels:\n'
                                  '  - name: mlp\n    fixed: {lr: "1e-3"}\n')
    with pytest.raises(SpecError) as info:
        load_suite(quoted)
    assert "fixed.lr: '1e-3' is text, not a number; write it without quotes (1e-3)" in str(info.value)
    # Each place a number goes, with what is wrong said
    refused({**WINE, "models": [{"name": "mlp", "space": {"lr": {"loguniform": ["1e-4", 1e-2]}}}]},
            "space.lr.loguniform must be [low, high], two numbers: '1e-4' is text, not a number; write it without quotes")
    refused({**WINE, "models": [{"name": "mlp", "space": {"lr": {"uniform": [1e-4]}}}]},
            "space.lr.uniform must be [low, high], two numbers, not a list of 1")
    refused({**WINE, "models": [{"name": "mlp", "space": {"d_block": {"choice": [64, "128"]}}}]},
            "space.d_block.choice: '128' is text, not a number")
    refused({**WINE, "models": [{"name": "xgboost", "space": {"learning_rate": "0.1"}}]},
            "space.learning_rate: '0.1' is text, not a number")
    refused({**WINE, "models": [{"name": "xgboost", "fixed": {"learning_rate": True}}]},
            "fixed.learning_rate: True is true or false, not a number")
    # 1e3 reads as 1000.0: a count written so is refused with the count to write
    refused({**WINE, "models": [{"name": "mlp", "fixed": {"max_epochs": 1e3}}]},
            "fixed.max_epochs: 1000.0 is a float and max_epochs is a whole number", "write 1000")
    refused({**WINE, "protocol": {"validation_fraction": "2e-1"}, "models": [{"name": "mlp"}]},
            "protocol.validation_fraction", "'2e-1'", "write it without quotes")


def test_text_that_looks_like_a_number_stays_text_when_quoted(tmp_path: Path):
    """Strings meant as strings are not harmed: a quoted '1e3' is a column name; a plain one is a
    number, refused where text goes with how to write it."""
    quoted = suite_file(tmp_path, 'name: t\ndatasets:\n  - file: d.csv\n    target: "1e3"\n'
                                  '    categorical: ["2e5"]\nmodels: [{name: xgboost, label: "5e3"}]\n')
    suite = load_suite(quoted)
    d = suite.datasets[0]
    assert isinstance(d, LocalFile) and d.target == "1e3" and d.categorical == ["2e5"] and suite.models[0].key == "5e3"
    plain = suite_file(tmp_path, "name: t\ndatasets:\n  - file: d.csv\n    target: 1e3\nmodels: [{name: xgboost}]\n")
    with pytest.raises(SpecError, match=r"target: .*not 1000.0 \(float\); YAML reads it as a number: put it in quotes"):
        load_suite(plain)


# ------------------------------------------------------------- 2. columns that are not features
def id_file(tmp_path: Path, n: int = 200) -> Path:
    rng = np.random.default_rng(0)
    pd.DataFrame({
        "customer_id": [f"c{i:05d}" for i in range(n)],  # one level per row
        "comment": [f"free text number {i}" for i in range(n)],
        "city": rng.choice(["Oslo", "Lima", "Pune"], n),  # a real category
        "zip": rng.integers(1000, 1010, n),  # a numeric code
        "a": rng.normal(size=n),
        "label": np.arange(n) % 2,
    }).to_csv(tmp_path / "d.csv", index=False)
    return tmp_path / "d.csv"


def test_drop_removes_columns_before_anything_else(tmp_path: Path):
    path = id_file(tmp_path)
    store = Store(tmp_path / "r.duckdb")
    spec = LocalFile(file=str(path), target="label", name="d", drop=["customer_id", "comment"], categorical=["zip"])
    ds = ingest.ingest(store, spec, Protocol(folds=3), 0)
    assert list(ds.features.columns) == ["city", "zip", "a"]
    kinds = dict(store.query("SELECT name, kind FROM features WHERE dataset = 'd'").itertuples(index=False))
    # categorical: adds to the text columns (city stays categorical though the list names only zip)
    assert kinds == {"city": "categorical", "zip": "categorical", "a": "numeric"}
    notes = store.query("SELECT notes FROM datasets").notes[0]
    assert sources.dropped(notes) == ["comment", "customer_id"]


def test_drop_names_must_be_columns(tmp_path: Path):
    path = id_file(tmp_path)
    with pytest.raises(DataError, match=r"drop names 'custmer_id', not a column of the file; columns: "
                                        r"customer_id, comment, city, zip, a, label"):
        sources.load(LocalFile(file=str(path), target="label", drop=["custmer_id"]))
    base = {**WINE, "models": [{"name": "xgboost"}]}
    refused({**base, "datasets": [{"file": "d.csv", "target": "label", "drop": ["label"]}]},
            "drop lists the target 'label'")
    refused({**base, "datasets": [{"file": "d.csv", "target": "label", "drop": ["a"], "categorical": ["a"]}]},
            "['a'] are both in drop and in categorical")
    refused({**base, "datasets": [{"openml_task": 31, "drop": ["a"]}]}, "drop", "unknown key")


def test_a_column_with_a_level_per_row_is_noticed_and_flagged(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    path = id_file(tmp_path)
    store = Store(tmp_path / "r.duckdb")
    with caplog.at_level(logging.WARNING):
        ingest.ingest(store, LocalFile(file=str(path), target="label", name="d"), Protocol(folds=3), 0)
    notices = [r.getMessage() for r in caplog.records if "one level per row" in r.getMessage()]
    assert len(notices) == 1, caplog.text
    assert ("customer_id (200 levels in 200 rows), comment (200 levels in 200 rows); leave them out with "
            "drop: [customer_id, comment]") in notices[0]
    flags = dict(store.query("SELECT name, high_cardinality FROM features").itertuples(index=False))
    assert flags == {"customer_id": True, "comment": True, "city": False, "zip": False, "a": False}
    assert "one level per row" in store.query("SELECT notes FROM datasets").notes[0]


def test_a_stored_copy_whose_drop_changed_is_refused(tmp_path: Path):
    path = id_file(tmp_path)
    store = Store(tmp_path / "r.duckdb")
    plain = LocalFile(file=str(path), target="label", name="d")
    dropping = LocalFile(file=str(path), target="label", name="d", drop=["customer_id"])
    ingest.ingest(store, plain, Protocol(folds=3), 0)
    with pytest.raises(DataError, match=r"drop \['customer_id'\] \(stored: \[\]\).*--refresh"):
        ingest.ingest(store, dropping, Protocol(folds=3), 0)
    ds = ingest.ingest(store, dropping, Protocol(folds=3), 0, refresh=True)
    assert "customer_id" not in ds.features.columns
    with pytest.raises(DataError, match=r"drop \[\] \(stored: \['customer_id'\]\)"):  # and back
        ingest.ingest(store, plain, Protocol(folds=3), 0)


def test_an_older_file_gains_the_features_flag(tmp_path: Path):
    db = tmp_path / "r.duckdb"
    Store(db).init()
    with duckdb.connect(str(db)) as con:  # the features table as files before the flag have it
        con.execute("ALTER TABLE features DROP COLUMN high_cardinality")
        con.execute("UPDATE attnbench_meta SET value = 'older' WHERE key = 'shape'")
    ingest.ingest(Store(db), LocalFile(file=str(id_file(tmp_path)), target="label", name="d"), Protocol(folds=3), 0)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM features WHERE high_cardinality").fetchone()[0] == 2


# ----------------------------------------------------------- 3. compression that changes nothing
def test_prune_on_a_model_with_no_prunable_layer_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """cnn_attention has no Linear layer feeding another: pruning removed 0 neurons and stored
    '+prune' rows with the model's own figures. `suites check` and `run` refuse it, before anything."""
    entry = {"name": "cnn_attention", "trials": 1, "compress": ["prune", "quantize"]}
    path = suite_file(tmp_path, yaml.safe_dump({**WINE, "models": [entry]}))
    out = in_process(["suites", "check", str(path)], capsys)
    assert out.returncode == 2, out.stdout + out.stderr
    assert ("model 'cnn_attention': compress 'prune' does not apply: it has no Linear layer feeding another "
            "Linear") in out.stderr
    assert "what applies to this model: quantize, pca" in out.stderr
    db = tmp_path / "r.duckdb"
    out = in_process(["run", str(path), "--db", str(db), "--no-report", "--address", "127.0.0.1:9"], capsys)
    assert out.returncode == 2 and "compress 'prune' does not apply" in out.stderr, out.stderr
    assert not db.exists()
    ok = suite_file(tmp_path, yaml.safe_dump({**WINE, "models": [{**entry, "compress": ["quantize", "pca"]},
                                                                  {"name": "mlp", "compress": ["prune"]}]}))
    assert in_process(["suites", "check", str(ok)], capsys).returncode == 0


def test_a_variant_that_would_change_nothing_is_recorded_as_not_applicable():
    from pipeline.learners.trial import Context, fit_and_score, tiny_fold
    from pipeline.models.registry import get

    info = get("cnn_attention")
    config = {**info.config_defaults(), "max_epochs": 1, "channels": 8, "d_attention": 8, "d_token": 4}
    out = fit_and_score(info, config, tiny_fold("binary"), Context(), score_test=True, compress=("prune", "quantize"))
    assert out.variants is not None
    v = {x.method: x for x in out.variants}
    assert (v["prune"].error or "").startswith("not applicable: prune does not apply to this cnn_attention")
    assert "Traceback" not in v["prune"].error
    assert v["quantize"].error is None and v["quantize"].n_params > 0


def test_models_lists_only_the_compression_that_applies(capsys: pytest.CaptureFixture[str]):
    out = in_process(["models"], capsys)
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines()[1:]}
    assert "compress (quantize, pca)" in lines["cnn_attention"]
    assert "compress (prune, quantize, pca)" in lines["mlp"]
    assert "compress" not in lines["xgboost"]


# ------------------------------------------------------------------------------- 4. a model's kind
@pytest.fixture
def own_nets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of one's own with a torch module that declares no kind (no INFO)."""
    (tmp_path / "kindnets.py").write_text(
        "from torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self, *, n_num, cat_cardinalities, d_out):\n"
        "        super().__init__()\n        self.lin = nn.Linear(n_num, d_out)\n\n"
        "    def forward(self, x_num, x_cat):\n        return self.lin(x_num)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    return "kindnets:Net"


def test_a_builder_must_say_its_kind(own_nets: str):
    text = refused({**WINE, "models": [{"name": "mine", "builder": own_nets}]},
                   "models.0: builder 'kindnets:Net' needs a 'kind': one of attention, network, boosting, trees")
    assert len(text.splitlines()) == 1
    # A module that declares the class's kind in its INFO says it already
    suite = parse_suite({**WINE, "models": [{"name": "g", "builder": "attnbench_gated.gated:GatedAttentionNet"}]})
    assert suite.models[0].model_info().kind == "attention"


@pytest.mark.parametrize(("word", "kind"), [("Attention", "attention"), ("NETWORK", "network"),
                                            ("gradient boosting", "boosting"), ("Attention Network", "attention"),
                                            ("Linear Model", "linear model")])
def test_kind_is_accepted_in_any_case(own_nets: str, word: str, kind: str):
    suite = parse_suite({**WINE, "models": [{"name": "mine", "builder": own_nets, "kind": word}]})
    assert suite.models[0].model_info().kind == kind


def test_a_kind_that_is_not_a_word_lists_the_words(own_nets: str):
    text = refused({**WINE, "models": [{"name": "mine", "builder": own_nets, "kind": "attention!"}]},
                   "models.0.kind: kind 'attention!': write one of attention, network, boosting, trees")
    assert "pattern" not in text and "^[a-z]" not in text
    # A Learner declares its own kind
    suite = parse_suite({**WINE, "models": [{"name": "nn", "learner": "attnbench_gated.neighbours:NeighboursLearner"}]})
    assert suite.models[0].model_info().kind == "neighbours"


# ----------------------------------------------------------- 5. messages that name the right key
@pytest.fixture(scope="module")
def breast_cancer() -> tuple[pd.DataFrame, pd.Series]:
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X["grade"] = pd.Categorical(np.where(np.arange(len(X)) % 7 == 0, None, np.array(list("abc"))[np.arange(len(X)) % 3]))
    return X, y


@pytest.mark.parametrize(("model", "budget"), [("xgboost", {"n_estimators": 3}), ("lightgbm", {"n_estimators": 3}),
                                               ("catboost", {"iterations": 3}), ("mlp", {"max_epochs": 2})])
def test_still_improving_names_the_models_own_budget(model: str, budget: dict, breast_cancer):
    from sklearn.exceptions import ConvergenceWarning

    from pipeline.learners.estimator import TabularClassifier

    X, y = breast_cancer
    (key, value), = budget.items()
    with pytest.warns(ConvergenceWarning) as caught:
        TabularClassifier(model, **budget).fit(X, y)
    text = next(str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
    assert f"stopped at {key}={value}" in text and text.endswith(f"raise {key}"), text
    assert key == "max_epochs" or "max_epochs" not in text


def test_xgboost_frames_make_no_pandas_warning(breast_cancer):
    """pandas deprecated categoricals built from values outside their categories (code 0, missing,
    was -1): it warned three times per fit."""
    from sklearn.exceptions import ConvergenceWarning

    from pipeline.data.preprocess import FoldData, Part
    from pipeline.learners.estimator import TabularClassifier
    from pipeline.learners.xgboost import frame

    codes = np.array([[0, 0], [2, 0], [3, 0], [5, 0]])  # 0: missing or unseen; 5: past the column's levels
    part = Part(np.zeros((4, 0), np.float32), codes, np.zeros(4))
    data = FoldData(task_type="binary", n_classes=2, num_names=[], cat_names=["c0", "c1"], cat_cardinalities=[4, 1],
                    train=part, valid=part, test=part)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = frame(part, data)
        X, y = breast_cancer  # its 'grade' column has missing values: code 0
        TabularClassifier("xgboost", n_estimators=50).fit(X, y)
    assert [str(w.message) for w in caught if not issubclass(w.category, ConvergenceWarning)] == []
    assert f.c0.isna().tolist() == [True, False, False, True] and f.c0.tolist()[1:3] == [2, 3]
    assert list(f.c0.cat.categories) == [1, 2, 3] and list(f.c1.cat.categories) == [1] and f.c1.isna().all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_estimators_take_import_paths_as_a_suite_does(own_nets: str, breast_cancer):
    from sklearn.base import clone

    from pipeline.learners.estimator import TabularClassifier
    from pipeline.models.import_paths import ImportPathError

    X, y = breast_cancer
    knn = TabularClassifier("attnbench_gated.neighbours:NeighboursLearner", n_neighbors=5).fit(X, y)
    assert knn.score(X, y) > 0.9
    net = clone(TabularClassifier(own_nets, max_epochs=3, random_state=0)).fit(X, y)
    assert net.predict_proba(X).shape == (len(X), 2)
    gated = TabularClassifier("attnbench_gated.gated:GatedAttentionNet", d_token=8, n_blocks=1, max_epochs=2).fit(X, y)
    assert gated.feature_attention(X.iloc[:20]).shape == (31, 31)  # its module declares it an attention model
    with pytest.raises(ImportPathError, match="cannot import 'nomodule'"):
        TabularClassifier("nomodule:Net").fit(X, y)
    with pytest.raises(ValueError, match="unknown hyperparameter"):
        TabularClassifier("attnbench_gated.neighbours:NeighboursLearner", depth=3).fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_classifier_refuses_a_regression_target_whose_classes_are_all_rare():
    from sklearn.datasets import load_diabetes, load_digits

    from pipeline.learners.estimator import TabularClassifier

    X, y = load_diabetes(return_X_y=True)  # an integer-valued target: 214 values in 442 rows
    with pytest.raises(ValueError, match=r"y has 214 distinct numbers in 442 rows \(2.1 rows per class\).*use "
                                         r"TabularRegressor"):
        TabularClassifier("xgboost", n_estimators=2).fit(X, y)
    X, y = load_digits(return_X_y=True)  # numeric labels of a real classification: 10 classes, 180 rows each
    clf = TabularClassifier("xgboost", n_estimators=2).fit(X[:400], y[:400])
    assert clf.n_classes_ == 10

