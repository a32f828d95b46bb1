"""The in-context transformers (TabICL, TabPFN v2) through the one model door: learners on tiny
checkpoints built with the packages' own code, a run through the real command line, and the refusals
(no weights, no package). They need the optional extra: `make test-fm` installs it in a virtual
environment of its own and runs this module; `make test` (CI) skips it, saying why."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
import yaml
from in_context_tiny import BUILD

from pipeline.learners.trial import tiny_fold

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "pipeline.cli"]
INSTALLED = all(importlib.util.find_spec(m) is not None for m in ("tabicl", "tabpfn"))
needs_extra = pytest.mark.skipif(not INSTALLED, reason="the fm extra (tabicl, tabpfn) is not installed: "
                                 "`make test-fm` installs it beside the project and runs these tests")
MODELS = ("tabicl", "tabpfn")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    root = tmp_path_factory.mktemp("ckpt")
    return {(m, t): BUILD[m](root / f"{m}-{t}.ckpt", regression=t == "regression")
            for m in MODELS for t in ("classification", "regression")}


def no_weights_env() -> dict[str, str]:
    """The environment without any weights path, and with caches that hold nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNBENCH_TAB")}
    return env


@needs_extra
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("task_type", ["binary", "multiclass", "regression"])
def test_the_learner_fits_a_context_and_predicts_from_a_local_checkpoint(name, task_type, checkpoints):
    from pipeline.learners import make_learner
    from pipeline.models.registry import get

    info = get(name)
    assert info.kind == "attention" and info.source == "attnbench"
    task = "regression" if task_type == "regression" else "classification"
    config = {**info.config_defaults(), "n_estimators": 2, "checkpoint": str(checkpoints[(name, "classification")]),
              "regressor_checkpoint": str(checkpoints[(name, "regression")])}
    data = tiny_fold(task_type, n=120)
    learner = make_learner(info, config)
    report = learner.fit(data)
    assert report.stop_reason == "complete" and report.iterations == 1
    out = learner.predict(data.test)
    if task == "regression":
        assert out.shape == (len(data.test),) and np.isfinite(out).all()
    else:
        assert out.shape == (len(data.test), data.n_classes) and np.allclose(out.sum(axis=1), 1.0, atol=1e-5)


@needs_extra
def test_tabpfn_declares_its_cpu_limit_and_its_learner_refuses_past_it(checkpoints):
    from pipeline.learners import make_learner
    from pipeline.learners.in_context import NotApplicable
    from pipeline.models.registry import get

    info = get("tabpfn")
    config = {**info.config_defaults(), "checkpoint": str(checkpoints[("tabpfn", "classification")])}
    with pytest.raises(NotApplicable, match="not applicable: tabpfn: 1,200 training rows on a CPU, above its declared 1,000"):
        make_learner(info, config).fit(tiny_fold("binary", n=2400))
    # The declared option past it: a context subsampled to 800 of the 1,200 rows, each class keeping its share.
    sub = make_learner(info, {**config, "context_rows": 800, "n_estimators": 1})
    data = tiny_fold("binary", n=2400)
    assert sub.fit(data).stop_reason == "complete" and len(sub.context(data)) == 800
    assert np.bincount(sub.context(data).y).tolist() == [400, 400]
    assert sub.predict(data.test).shape == (len(data.test), 2)


@needs_extra
def test_models_lists_both_with_their_weights_status(checkpoints):
    env = {**no_weights_env(), "ATTNBENCH_TABICL_CHECKPOINT": str(checkpoints[("tabicl", "classification")])}
    out = subprocess.run([*CLI, "models"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.split()}
    assert "in-context" in lines["tabicl"] and "attention network" in lines["tabicl"]
    assert f"classification: {checkpoints[('tabicl', 'classification')]}" in lines["tabicl"]
    assert "regression: no weights" in lines["tabicl"]
    assert "in-context" in lines["tabpfn"] and "classification: no weights" in lines["tabpfn"]


def suite(tmp_path: Path, fixed: dict[str, dict[str, str]]) -> Path:
    s = {"name": "incontext", "datasets": [{"sklearn": "breast_cancer"}, {"sklearn": "diabetes"}],
         "protocol": {"folds": 2, "max_folds": 1, "sample_sizes": [128]},
         "models": [{"name": m, "trials": 1, "fixed": {"n_estimators": 2, **fixed.get(m, {})}} for m in MODELS]
         + [{"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 20}}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(s, sort_keys=False))
    return path


@needs_extra
@pytest.mark.slow
def test_a_run_with_tiny_checkpoints_finishes_its_cells_and_reports_them(tmp_path, checkpoints, ray_address):
    fixed = {m: {"checkpoint": str(checkpoints[(m, "classification")]),
                 "regressor_checkpoint": str(checkpoints[(m, "regression")])} for m in MODELS}
    db, reports = tmp_path / "r.duckdb", tmp_path / "reports"
    out = subprocess.run([*CLI, "run", str(suite(tmp_path, fixed)), "--db", str(db), "--reports", str(reports),
                          "--address", ray_address], capture_output=True, text=True, env=no_weights_env(), cwd=REPO,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT model, dataset, status, model_kind FROM results WHERE model IN ('tabicl', 'tabpfn')"
                           ).fetchall()
        n_pred = con.execute("SELECT count(*) FROM predictions p JOIN results r USING (cell_id) "
                             "WHERE r.model IN ('tabicl', 'tabpfn')").fetchone()[0]
    assert len(rows) == 4 and all(st == "ok" and kind == "attention" for _, _, st, kind in rows), rows
    assert n_pred > 0
    runs_page = (reports / "runs.html").read_text()
    assert ">tabicl<" in runs_page and ">tabpfn<" in runs_page and "attention network" in runs_page


@needs_extra
@pytest.mark.slow
def test_cells_past_a_models_limits_are_left_out_of_the_plan_not_failed(tmp_path, checkpoints, ray_address):
    """kr-vs-kp's whole training part (1,278 rows) is past TabPFN v2's 1,000 on a CPU: the run says so once,
    plans no such cell (none failed, none missing), and runs the 128-row cells and XGBoost's."""
    shared = REPO.parent / "shared" / "data" / "openml" / "3-kr-vs-kp.parquet"
    s = {"name": "limits", "datasets": [{"name": "kr-vs-kp", "file": str(shared), "target": "class"}],
         "protocol": {"folds": 2, "max_folds": 1, "sample_sizes": [128, "all"]},
         "models": [{"name": "tabpfn", "trials": 1,
                     "fixed": {"n_estimators": 1, "checkpoint": str(checkpoints[("tabpfn", "classification")])}},
                    {"name": "tabpfn", "label": "tabpfn-ctx1000", "trials": 1,  # the declared, labelled option
                     "fixed": {"n_estimators": 1, "context_rows": 1000,
                               "checkpoint": str(checkpoints[("tabpfn", "classification")])}},
                    {"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 10}}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(s, sort_keys=False))
    db = tmp_path / "r.duckdb"
    out = subprocess.run([*CLI, "run", str(tmp_path / "s.yaml"), "--db", str(db), "--no-report", "--address",
                          ray_address], capture_output=True, text=True, env=no_weights_env(), cwd=REPO, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert ("notice: kr-vs-kp: tabpfn not applicable at size all (at the first: 1,278 training rows on a CPU, above "
            "its declared 1,000); those cells are left out of the plan, not failed") in out.stdout, out.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        cells = con.execute("SELECT model, sample_size, status FROM results ORDER BY 1, 2").fetchall()
        planned = con.execute("SELECT count(*) FROM suite_cells WHERE model = 'tabpfn'").fetchone()[0]
        failures = con.execute("SELECT count(*) FROM failures").fetchone()[0]
    assert cells == [("tabpfn", "128", "ok"), ("tabpfn-ctx1000", "128", "ok"), ("tabpfn-ctx1000", "all", "ok"),
                     ("xgboost", "128", "ok"), ("xgboost", "all", "ok")], cells
    assert planned == 1 and failures == 0
    # The report shows those cells as not applicable, and the models' family as in-context.
    reports = tmp_path / "reports"
    rep = subprocess.run([*CLI, "report", "--db", str(db), "--reports", str(reports)], capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    assert rep.returncode == 0, rep.stderr
    acc = (reports / "accuracy.html").read_text()
    listed = acc.split('id="table-not-applicable"')[1].split("</table>")[0]
    assert ">tabpfn<" in listed and ">kr-vs-kp<" in listed and "1,278 training rows on a CPU" in listed, listed
    assert "not applicable" in acc.split('id="table-datasets-all"')[1].split("</table>")[0]
    assert "attention network · in-context" in (reports / "runs.html").read_text()
    # Without a label of its own, a subsampled context is refused before anything runs.
    del s["models"][1]["label"]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(s, sort_keys=False))
    bad = subprocess.run([*CLI, "suites", "check", str(tmp_path / "bad.yaml")], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert bad.returncode == 2 and "fixed.context_rows subsamples its training context" in bad.stderr, bad.stderr


@needs_extra
@pytest.mark.parametrize("command", ["run", "check"])
def test_without_weights_the_suite_is_refused_in_one_line_and_nothing_is_written(tmp_path, command):
    path = suite(tmp_path, {})
    db = tmp_path / "r.duckdb"
    env = {**no_weights_env(), "HF_HUB_OFFLINE": "1", "TABPFN_MODEL_CACHE_DIR": str(tmp_path / "empty-cache"),
           "HF_HOME": str(tmp_path / "empty-hf")}
    argv = ["run", str(path), "--db", str(db), "--no-report"] if command == "run" else ["suites", "check", str(path)]
    before = sorted(p.name for p in tmp_path.iterdir())
    out = subprocess.run([*CLI, *argv], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    errors = out.stderr.strip().splitlines()
    assert errors and "model 'tabicl': no weights: looked in" in errors[0] and "ATTNBENCH_TABICL_CHECKPOINT" in errors[0]
    if command == "run":
        assert len(errors) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not db.exists()


@pytest.mark.skipif(INSTALLED, reason="the fm extra is installed here: its models are registered")
def test_without_the_extra_the_models_say_how_to_add_them(tmp_path):
    out = subprocess.run([*CLI, "models"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    for name, package in (("tabicl", "tabicl"), ("tabpfn", "tabpfn")):
        assert f"not installed: {name} (needs {package}: pip install -e '.[fm]')" in out.stdout
    path = suite(tmp_path, {})
    check = subprocess.run([*CLI, "suites", "check", str(path)], capture_output=True, text=True, cwd=tmp_path,
                           timeout=120)
    assert check.returncode == 2 and "model 'tabicl' needs the tabicl package, an optional extra: pip install -e " \
        "'.[fm]'" in check.stderr, check.stderr
