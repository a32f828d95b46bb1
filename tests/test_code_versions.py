"""Results know their code. attnbench's own files that decide a model's results are pinned
(pipeline/models/versions.py): a change to one fails here until its version is raised (results change:
the cells of the models that read it run again) or its new digest is recorded under the same version (a
refactor). A local edit runs the models that read the file as modified. A model from outside attnbench is
identified by its module and the user's own modules it imports, not by its whole package."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from pipeline.models import registry, versions
from pipeline.models.import_paths import code_digest
from pipeline.spec import parse_suite

MODELS = ["mlp", "ft_transformer", "tabm", "xgboost", "random_forest"]


def hashes(models: list[dict] | None = None) -> dict[str, str]:
    suite = parse_suite({"name": "v", "datasets": [{"sklearn": "wine"}],
                         "models": models or [{"name": m} for m in MODELS]})
    return dict(suite.model_hashes)


def test_every_pinned_file_is_the_code_its_version_pins():
    stale = {f: versions.file_digest(f) for f, (_, pin) in versions.PINNED.items() if versions.file_digest(f) != pin}
    assert not stale, (
        "these files' code changed: where the change alters results, raise the file's version in "
        "pipeline/models/versions.py (the models that read it run again); where it does not (a refactor), record "
        f"the new digest under the same version and say so in the commit: {stale}")


def test_every_file_of_a_models_code_is_pinned():
    """Each learner and model module is pinned (a new one must be), and every registered model reads its
    module, its Learner, the trial's path, the preprocessing and the scoring."""
    package = versions.PACKAGE
    ours = {p.relative_to(package).as_posix() for d in ("learners", "models", "train") for p in (package / d).glob("*.py")}
    not_code = {"learners/__init__.py", "models/__init__.py", "train/__init__.py", "models/registry.py",
                "models/kinds.py", "models/import_paths.py", "models/versions.py", "models/model_file.py",
                "models/values.py"}  # declarations read and values checked: no computation a result depends on
    assert ours - not_code <= set(versions.PINNED), sorted(ours - not_code - set(versions.PINNED))
    for name in MODELS:
        info = registry.get(name)
        files = set(versions.code_version(info.builder, info.learner).versions)
        assert {"data/preprocess.py", "evaluation.py", "metrics.py", "learners/trial.py",
                versions.module_file(info.learner.partition(":")[0])} <= files, (name, files)


def test_version_1_of_every_file_keeps_the_ids_cells_had_before_versions():
    suite = parse_suite({"name": "v", "datasets": [{"sklearn": "wine"}], "models": [{"name": m} for m in MODELS]})
    assert all(suite.our_code[m].key() == {} for m in MODELS)
    assert all(set(suite.our_code[m].versions.values()) == {1} for m in MODELS)


@pytest.mark.parametrize("file,renewed", [
    ("models/mlp.py", {"mlp"}),
    ("train/loop.py", {"mlp", "ft_transformer", "tabm"}),
    ("learners/xgboost.py", {"xgboost"}),
    ("data/preprocess.py", set(MODELS)),
    ("models/layers.py", {"mlp", "ft_transformer", "tabm"}),
])
def test_a_raised_version_renews_the_cells_of_exactly_the_models_that_read_the_file(file, renewed, monkeypatch):
    before = hashes()
    monkeypatch.setitem(versions.PINNED, file, (2, versions.PINNED[file][1]))
    after = hashes()
    assert {m for m in MODELS if after[m] != before[m]} == renewed


def test_a_local_edit_runs_the_models_that_read_it_as_modified(monkeypatch):
    before = hashes()
    monkeypatch.setitem(versions.PINNED, "models/ft_transformer.py", (1, "0" * 16))  # the checkout ≠ the pin
    suite = parse_suite({"name": "v", "datasets": [{"sklearn": "wine"}], "models": [{"name": m} for m in MODELS]})
    code = suite.our_code["ft_transformer"]
    assert code.modified == {"models/ft_transformer.py": versions.file_digest("models/ft_transformer.py")}
    assert code.words() == "pipeline/models/ft_transformer.py"
    assert '"models/ft_transformer.py":"1+' in code.stored()
    assert {m for m in MODELS if suite.model_hashes[m] != before[m]} == {"ft_transformer"}
    assert not any(suite.our_code[m].modified for m in MODELS if m != "ft_transformer")


def test_a_compressing_entry_reads_the_variants_code_and_a_plain_one_does_not(monkeypatch):
    plain, compressed = {"name": "mlp"}, {"name": "mlp", "label": "mlp_c", "compress": ["prune"]}
    before = hashes([plain, compressed])
    monkeypatch.setitem(versions.PINNED, "learners/compression.py", (2, versions.PINNED["learners/compression.py"][1]))
    after = hashes([plain, compressed])
    assert after["mlp"] == before["mlp"] and after["mlp_c"] != before["mlp_c"]


def test_the_digest_ignores_comments_docstrings_layout_and_the_named_assignments_but_not_code():
    source = (versions.PACKAGE / "metrics.py").read_text()
    same = "# a comment\n\n" + source.replace('"""', '"""Reworded. ', 1)
    assert versions.syntax_digest(same) == versions.syntax_digest(source)
    changed = source.replace("math.", "math .", 1).replace("return", "return  ", 1) + "\nX = 1\n"
    assert versions.syntax_digest(changed) != versions.syntax_digest(source)
    assert versions.syntax_digest(changed, ignore=("X",)) == versions.syntax_digest(source)


# ------------------------------------------------------------------------------- a user's own code
NET = '''
import torch
from torch import nn
{imports}

class {name}(nn.Module):
    def __init__(self, *, n_num, cat_cardinalities, d_out):
        super().__init__()
        self.lin = nn.Linear(max(n_num, 1), d_out)

    def forward(self, x_num, x_cat):
        return {act}(self.lin(x_num))
'''


def user_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """(b) a single-file builder importing a sibling helper; (c) two builders in one package."""
    (tmp_path / "helper.py").write_text("import torch\n\ndef act(x):\n    return torch.relu(x)\n")
    (tmp_path / "single.py").write_text(NET.format(imports="from helper import act", name="Net", act="act"))
    pkg = tmp_path / "twonets"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(NET.format(imports="", name="A", act="torch.relu"))
    (pkg / "b.py").write_text(NET.format(imports="from . import parts", name="B", act="parts.act"))
    (pkg / "parts.py").write_text("import torch\n\ndef act(x):\n    return torch.tanh(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def digests(*paths: str) -> dict[str, str]:
    importlib.invalidate_caches()
    for name in [m for m in sys.modules if m in ("helper", "single") or m.startswith("twonets")]:
        del sys.modules[name]
    return {p: code_digest(p)["digest"] for p in paths}


PATHS = ("single:Net", "twonets.a:A", "twonets.b:B")


@pytest.mark.parametrize("edit,changed", [
    (("helper.py", "torch.relu", "torch.tanh"), {"single:Net"}),  # (b) the helper a builder imports
    (("twonets/a.py", "torch.relu", "torch.sigmoid"), {"twonets.a:A"}),  # (c) one builder of two in a package
    (("twonets/parts.py", "torch.tanh", "torch.relu"), {"twonets.b:B"}),  # a relative import's module
    # `from . import parts` imports the package itself (its __init__ runs): B reads it, A does not
    (("twonets/__init__.py", "", "X = 1\n"), {"twonets.b:B"}),
])
def test_a_users_builder_is_identified_by_its_module_and_the_own_modules_it_imports(edit, changed, tmp_path, monkeypatch):
    root = user_code(tmp_path, monkeypatch)
    before = digests(*PATHS)
    f = root / edit[0]
    text = f.read_text()
    assert edit[1] in text
    f.write_text(text.replace(edit[1], edit[2]) if edit[1] else edit[2])
    after = digests(*PATHS)
    assert {p for p in PATHS if after[p] != before[p]} == changed
    info = code_digest("single:Net")
    assert info["modules"] == ["helper", "single"]  # torch, an installed library, is not the user's


def test_a_users_learner_reads_the_attnbench_files_it_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    example = Path(__file__).resolve().parents[1] / "examples" / "gated_attention"
    monkeypatch.syspath_prepend(str(example))
    models = [{"name": "nn_user", "learner": "attnbench_gated.neighbours:NeighboursLearner", "kind": "trees"}]
    before = hashes(models)
    suite = parse_suite({"name": "v", "datasets": [{"sklearn": "wine"}], "models": models})
    assert "learners/base.py" in suite.our_code["nn_user"].versions
    monkeypatch.setitem(versions.PINNED, "learners/base.py", (2, versions.PINNED["learners/base.py"][1]))
    assert hashes(models)["nn_user"] != before["nn_user"]


# ------------------------------------------------------------------- end to end, in a copy of the checkout
@pytest.mark.slow
def test_in_a_copy_of_the_checkout_edits_rerun_exactly_the_edited_models_cells(tmp_path: Path, ray_address: str):
    """(a) attnbench's own MLP forward edited, (b) the helper a single-file builder imports edited, (c) one of
    two builders in one package edited, all three before one run: it re-runs exactly the three cells of those
    models, not the fourth (the other builder of that package); a run with nothing edited runs nothing. The
    edited models' old cells are history (superseded, 'replaced'), and each run records the code it ran: an
    edited builder's digest changes with its edit and only then. (Which edit reaches which model, one at a time, in process: our own files in
    test_a_raised_version_renews_the_cells_of_exactly_the_models_that_read_the_file, a user's in
    test_a_users_builder_is_identified_by_its_module_and_the_own_modules_it_imports.)"""
    import json
    import shutil
    import subprocess

    import yaml

    from pipeline.data.store import Store

    co = tmp_path / "checkout"
    # Its byte-code too (copy2 keeps the files' times, so each stays valid until its source is edited): the run's
    # driver and workers would otherwise compile the whole package again.
    shutil.copytree(versions.PACKAGE, co / "pipeline")
    with pytest.MonkeyPatch.context() as mp:
        user_code(co, mp)
    nets = [{"name": n, "builder": p, "kind": "network", "trials": 1, "fixed": {"max_epochs": 2}}
            for n, p in (("single", "single:Net"), ("a", "twonets.a:A"), ("b", "twonets.b:B"))]
    suite = {"name": "edits", "datasets": [{"sklearn": "wine"}],
             "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": ["all"]},
             "models": [{"name": "mlp", "trials": 1, "fixed": {"max_epochs": 2}}, *nets]}
    (co / "s.yaml").write_text(yaml.safe_dump(suite))

    def run() -> str:
        out = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "s.yaml", "--db", "r.duckdb", "--no-report",
                              "--address", ray_address], cwd=co, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        return out.stdout + out.stderr

    def edit(rel: str, old: str, new: str) -> None:
        f = co / rel
        assert old in f.read_text()
        f.write_text(f.read_text().replace(old, new, 1))

    assert "4 cells done, 0 failed, 0 already done before" in run()
    assert "4 cells, 4 already done, 0 to run" in run()  # nothing edited: nothing runs
    edit("pipeline/models/mlp.py", "return self.head(self.blocks(x))", "return self.head(torch.tanh(self.blocks(x)))")
    edit("helper.py", "torch.relu", "torch.tanh")  # (b)
    edit("twonets/a.py", "torch.relu", "torch.sigmoid")  # (c)
    out = run()
    assert "3 cells done, 0 failed, 1 already done before" in out, out
    assert "notice: mlp runs as modified: pipeline/models/mlp.py differs from the code its version pins" in out
    store = Store(co / "r.duckdb")
    sup = store.query("SELECT model, why FROM superseded ORDER BY model")
    assert sup.values.tolist() == [["a", "replaced"], ["mlp", "replaced"], ["single", "replaced"]]
    code = [json.loads(c) for c in store.query("SELECT model_code FROM runs ORDER BY started_at").model_code]
    assert len(code) == 3  # runs: first, unchanged, edited

    def digests(model: str, builder: str) -> list[str]:
        return [c[model][builder]["digest"] for c in code]

    a, b, single = digests("a", "twonets.a:A"), digests("b", "twonets.b:B"), digests("single", "single:Net")
    assert a[0] == a[1] != a[2] and single[0] == single[1] != single[2] and b[0] == b[1] == b[2]
