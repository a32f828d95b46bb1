"""Suite files: what is accepted, and that every error names the file, the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import SpecError
from pipeline.spec import load_suite, parse_suite
from pipeline.suite_datasets import LocalFile, SklearnDataset

GOOD = {
    "name": "t",
    "datasets": [{"sklearn": "wine"}],
    "models": [{"name": "xgboost", "trials": 2}],
}


def test_smoke_suite_validates():
    from pipeline.spec import default_suite_path

    s = load_suite(default_suite_path())
    assert s.name == "smoke"
    assert {m.name for m in s.models} >= {"xgboost", "catboost", "mlp", "ft_transformer"}
    assert all(isinstance(d, SklearnDataset) for d in s.datasets)


def test_good_suite_and_relative_file(tmp_path: Path):
    (tmp_path / "s.yaml").write_text(
        "name: t\ndatasets:\n  - file: data/x.parquet\n    target: y\nmodels:\n  - name: mlp\n")
    s = load_suite(tmp_path / "s.yaml")
    d = s.datasets[0]
    assert isinstance(d, LocalFile) and d.file == str((tmp_path / "data" / "x.parquet").resolve())


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"modles": []}, ["modles", "unknown key"]),
        ({"models": [{"name": "nope"}]}, ["models.0: unknown model 'nope'", "xgboost"]),
        ({"models": [{"name": "xgboost", "trials": "many"}]}, ["models.0.trials"]),
        ({"models": [{"name": "xgboost", "trials": 0}]}, ["models.0.trials", "greater than or equal to 1"]),
        ({"models": [{"name": "xgboost", "space": {"max_depth": {"between": [1, 2]}}}]}, ["unknown domain 'between'"]),
        ({"models": [{"name": "xgboost", "space": {"lr": {"uniform": [0, 1]}}}]}, ["unknown space key", "'lr'", "max_depth"]),
        ({"models": [{"name": "xgboost", "space": {"max_depth": {"int": [5, 2]}}}]}, ["must be below"]),
        ({"models": [{"name": "mlp"}, {"name": "mlp"}]}, ["repeat", "label"]),
        ({"datasets": [{"sklearn": "mnist"}]}, ["datasets.0", "sklearn"]),
        ({"datasets": [{"url": "x"}]}, ["datasets.0", "openml_task, openml_suite, file"]),
        ({"datasets": [{"file": "x.csv"}]}, ["datasets.0.target", "missing"]),
        ({"protocol": {"sample_sizes": [4]}}, ["too small"]),
        ({"protocol": {"folds": 1}}, ["protocol.folds"]),
        ({"protocol": {"validation_fraction": 1.5}}, ["protocol.validation_fraction"]),
        ({"name": "has space"}, ["name"]),
    ],
)
def test_bad_suites_name_the_problem(patch, expected):
    with pytest.raises(SpecError) as info:
        parse_suite({**GOOD, **patch}, "bad.yaml")
    text = str(info.value)
    assert text.startswith("bad.yaml: invalid suite")
    for fragment in expected:
        assert fragment in text, text


def test_malformed_yaml_and_missing_file(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML") as err:
        load_suite(bad)
    assert "\n" not in str(err.value) and "at line 2, column 1: expected ',' or ']'" in str(err.value), err.value
    with pytest.raises(SpecError, match="suite file not found"):
        load_suite(tmp_path / "absent.yaml")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(SpecError, match="must be a YAML mapping"):
        load_suite(tmp_path / "list.yaml")


def test_model_hash_changes_with_budget():
    a = parse_suite(GOOD)
    b = parse_suite({**GOOD, "models": [{"name": "xgboost", "trials": 3}]})
    assert a.model_hash("xgboost") != b.model_hash("xgboost")
    assert a.model_hash("xgboost") == parse_suite(GOOD).model_hash("xgboost")


def test_import_pipeline_is_light():
    import subprocess
    import sys

    code = ("import sys, pipeline, pipeline.spec, pipeline.cli, pipeline.models.registry; "
            "heavy = [m for m in ('torch', 'ray', 'plotly', 'xgboost', 'catboost') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing pipeline loaded {out}"


def test_version_prints_the_installed_version():
    import subprocess
    import sys
    from importlib.metadata import version

    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "--version"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"attnbench {version('attnbench')}", out
