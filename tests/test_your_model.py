"""A model of one's own through the one door every model takes: the example package installed with pip
(its entry point registers it), a torch module and a Learner named by import path in a suite, and
models that raise or diverge mid-training; all through the real command line and a real local Ray.
Bad declarations are refused with one line that names the suite file and the key, writing nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import tomllib
import yaml
from test_bad_input import snapshot

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "gated_attention"
CLI = [sys.executable, "-m", "pipeline.cli"]

# A user's own modules, in the working directory of the run: one that raises in its third training
# step, one whose outputs are NaN from the start (the loss diverges).
MYNETS = '''
import torch
from torch import nn


class Raising(nn.Module):
    def __init__(self, *, n_num, cat_cardinalities, d_out, width=8):
        super().__init__()
        self.lin = nn.Linear(n_num, d_out)
        self.steps = 0

    def forward(self, x_num, x_cat):
        if self.training:
            self.steps += 1
            if self.steps == 3:
                raise RuntimeError("my model broke at step 3")
        return self.lin(x_num)


class Diverging(nn.Module):
    def __init__(self, *, n_num, cat_cardinalities, d_out):
        super().__init__()
        self.lin = nn.Linear(n_num, d_out)

    def forward(self, x_num, x_cat):
        return self.lin(x_num) * float("nan")
'''

BROKEN = "raise ImportError('this module needs a library that is not installed')\n"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The example package installed with pip (into a folder of its own, put on PYTHONPATH: the
    test environment stays as it was)."""
    target, source = tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("src") / "gated_attention"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--target", str(target), str(source)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (target / "attnbench_gated" / "gated.py").is_file()
    return target


def env_with(site: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([str(site)] if site else []))
    return env


def test_models_lists_the_installed_package_and_the_suites_own(installed: Path):
    out = subprocess.run([*CLI, "models", str(EXAMPLE / "suite-import-paths.yaml")], cwd=EXAMPLE,
                         env=env_with(installed), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines()[1:]}
    assert "attention network" in lines["gated_attention"] and "package attnbench-gated-attention" in lines["gated_attention"]
    assert "attention network" in lines["gated"] and "attnbench_gated.gated:GatedAttentionNet" in lines["gated"]
    assert lines["neighbours"].split()[1] == "neighbours" and "NeighboursLearner" in lines["neighbours"]
    assert "attnbench" in lines["ft_transformer"].split() and "ASHA on boosting rounds" in lines["xgboost"]


@pytest.mark.slow
def test_your_models_run_beside_ours_and_keep_their_kind(installed: Path, tmp_path: Path):
    """One run: the installed example (entry point), the same module by import path, a Learner by import
    path, a model that raises mid-training and one that diverges, beside FT-Transformer and XGBoost. Then
    the report is rebuilt without the package installed: every model keeps the kind its run stored."""
    (tmp_path / "mynets.py").write_text(MYNETS)
    quick = {"max_epochs": 4, "patience": 2, "batch_size": 64}
    suite = {"name": "yours", "datasets": [{"sklearn": "breast_cancer"}],
             "protocol": {"folds": 2, "max_folds": 1, "sample_sizes": ["all"]},
             "models": [
                 {"name": "gated_attention", "trials": 1, "fixed": quick},
                 {"name": "gated_by_path", "builder": "attnbench_gated.gated:GatedAttentionNet", "kind": "attention",
                  "defaults": {"d_token": 8}, "trials": 1, "fixed": quick},
                 {"name": "neighbours", "learner": "attnbench_gated.neighbours:NeighboursLearner", "trials": 2},
                 {"name": "raising", "builder": "mynets:Raising", "kind": "Network", "trials": 1, "fixed": quick},
                 {"name": "diverging", "builder": "mynets:Diverging", "kind": "linear", "trials": 1, "fixed": quick},
                 {"name": "ft_transformer", "trials": 1, "fixed": {**quick, "d_token": 8, "n_blocks": 1}},
                 {"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 20}}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    db, reports = tmp_path / "r.duckdb", tmp_path / "reports"
    out = subprocess.run([*CLI, "run", "s.yaml", "--db", str(db), "--reports", str(reports), "--num-cpus", "2"],
                         cwd=tmp_path, env=env_with(installed), capture_output=True, text=True, timeout=1800)  # a hang's bound only: it
    # takes about a minute alone and five beside the rest of the suite on two cores
    assert out.returncode == 3, out.stdout[-3000:] + out.stderr[-3000:]  # the two broken models' cells failed
    assert "2 cells of suite 'yours' failed" in out.stderr, out.stderr

    con = duckdb.connect(str(db), read_only=True)
    got = {(m, s): (k, st) for m, s, k, st in con.execute(
        "SELECT model, sample_size, model_kind, status FROM results").fetchall()}
    for size in ("all",):
        for model, kind in (("gated_attention", "attention"), ("gated_by_path", "attention"),
                            ("neighbours", "neighbours"), ("ft_transformer", "attention"), ("xgboost", "boosting")):
            assert got[(model, size)] == (kind, "ok"), (model, size, got)
        assert got[("raising", size)] == ("network", "error")
        assert got[("diverging", size)] == ("linear", "diverged")
    error = con.execute("SELECT t.error FROM trials t JOIN results r USING (cell_id) WHERE r.model = 'raising' "
                        "LIMIT 1").fetchone()[0]
    assert "my model broke at step 3" in error
    versions = json.loads(con.execute("SELECT versions FROM runs").fetchone()[0])
    assert {"torch", "xgboost", "scikit-learn"} <= set(versions)  # the libraries the models' Learners name
    # The code behind each model of one's own: the installed package's carries its distribution's version,
    # for both doors to it; a module of the working directory has none.
    code = json.loads(con.execute("SELECT model_code FROM runs").fetchone()[0])
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    for model, path in (("gated_attention", "attnbench_gated.gated:GatedAttentionNet"),
                        ("gated_by_path", "attnbench_gated.gated:GatedAttentionNet"),
                        ("neighbours", "attnbench_gated.neighbours:NeighboursLearner")):
        assert code[model][path]["versions"] == {project["name"]: project["version"]}, (model, code[model])
    assert code["raising"]["mynets:Raising"]["versions"] == {}
    con.close()

    # The report, rebuilt here, where the package is not installed and the suite's own models are unknown.
    from pipeline.models.registry import REGISTRY
    from pipeline.report.pages import write_report

    assert not {"gated_attention", "gated_by_path", "neighbours"} & set(REGISTRY)
    write_report(db, tmp_path / "again")
    for page in ("index", "accuracy", "tuning", "compute", "memory", "runs"):  # one size: no curves
        html = (tmp_path / "again" / f"{page}.html").read_text()
        assert "gated_attention" in html and "neighbours" in html, page
    attention = (tmp_path / "again" / "attention.html").read_text()  # the maps of models that give one
    assert "gated_attention: weights" in attention and "neighbours" not in attention
    index = (tmp_path / "again" / "index.html").read_text()
    for header in ("best attention network", "best gradient boosting", "best neighbours",
                   "neighbours vs gradient boosting"):
        assert header in index, header
    runs = (tmp_path / "again" / "runs.html").read_text()
    assert "<td>gated_by_path</td><td>gated_by_path</td><td>attention</td><td>attention network</td>" in runs


# A suite entry → the words its one line must hold (with the suite file's name).
BAD = {
    "module_not_found": ({"builder": "nomodule.nets:Net"}, "models.0.builder: cannot import 'nomodule.nets'"),
    "no_such_class": ({"builder": "mynets:Nope"}, "models.0.builder: module 'mynets' has no 'Nope'"),
    "not_a_module_class": ({"builder": "json:loads"}, "models.0.builder: 'json:loads' is not a torch nn.Module"),
    "not_a_learner": ({"learner": "mynets:Raising"}, "models.0.learner: 'mynets:Raising' is not a Learner subclass"),
    "module_fails_to_import": ({"builder": "broken:Net"}, "cannot import 'broken' (ImportError: this module needs"),
    "unknown_search_key": ({"builder": "mynets:Raising", "space": {"depth": {"int": [1, 3]}}},
                           "unknown space key(s) ['depth']"),
    "default_it_does_not_take": ({"builder": "mynets:Diverging", "defaults": {"width": 3}},
                                 "defaults ['width']: 'mynets:Diverging' takes no such argument"),
    "both_doors": ({"builder": "mynets:Raising", "learner": "attnbench_gated.neighbours:NeighboursLearner"},
                   "give one of 'builder'"),
    "name_taken": ({"name": "mlp", "builder": "mynets:Raising"}, "model 'mlp' is registered (attnbench)"),
    "kind_of_a_registered_model": ({"name": "mlp", "kind": "attention"}, "'kind' describe a model of your own"),
    "asha_without_rungs": ({"learner": "attnbench_gated.neighbours:NeighboursLearner", "search": "asha"},
                           "its Learner has none"),
    "builder_without_kind": ({"builder": "mynets:Raising"},
                             "builder 'mynets:Raising' needs a 'kind': one of attention, network, boosting, trees"),
    "kind_not_a_word": ({"builder": "mynets:Raising", "kind": "attention?"},
                        "kind 'attention?': write one of attention, network, boosting, trees"),
}


def write_bad_suites(tmp_path: Path) -> None:
    (tmp_path / "mynets.py").write_text(MYNETS)
    (tmp_path / "broken.py").write_text(BROKEN)
    for case, (entry, _) in BAD.items():
        models = [{"name": "mine", "trials": 1, **entry}]
        (tmp_path / f"{case}.yaml").write_text(yaml.safe_dump({"name": "bad", "datasets": [{"sklearn": "wine"}],
                                                              "models": models}, sort_keys=False))


def test_every_bad_declaration_is_one_line_naming_the_file_and_key(tmp_path: Path):
    write_bad_suites(tmp_path)
    out = subprocess.run([*CLI, "suites", "check", *(f"{case}.yaml" for case in BAD)], cwd=tmp_path,
                         env=env_with(EXAMPLE), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    lines = out.stderr.strip().splitlines()
    assert lines[-1] == f"attnbench: {len(BAD)} of {len(BAD)} suite files have problems", lines
    for case, (_, words) in BAD.items():
        line = [x for x in lines if x.startswith(f"attnbench: error: {case}.yaml: invalid suite: models.0")]
        assert len(line) == 1 and words in line[0], (case, lines)


@pytest.mark.parametrize("case", ["module_not_found", "module_fails_to_import"])
def test_a_refused_run_of_a_bad_model_writes_nothing(case: str, tmp_path: Path):
    write_bad_suites(tmp_path)
    before = snapshot(tmp_path)
    out = subprocess.run([*CLI, "run", f"{case}.yaml", "--db", "r.duckdb", "--address", "127.0.0.1:9"],
                         cwd=tmp_path, env=env_with(EXAMPLE), capture_output=True, text=True, timeout=120)
    err = out.stderr.strip()
    assert out.returncode == 2 and len(err.splitlines()) == 1, err[-3000:]
    assert err.startswith(f"attnbench: error: {case}.yaml: invalid suite: models.0.builder: cannot import"), err
    assert snapshot(tmp_path) == before  # no results file, no report folder, nothing else
