"""End to end through a real local Ray and a real DuckDB file: one result per cell, resume after an
interruption with nothing lost or duplicated, failing trials recorded while the others finish."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from pipeline import runner
from pipeline.data.store import Store
from pipeline.spec import parse_suite

pytestmark = pytest.mark.slow

TINY = {
    "name": "tiny",
    "seed": 1,
    "datasets": [{"sklearn": "wine"}],
    "protocol": {"folds": 3, "sample_sizes": [48, "all"]},
    "models": [
        {"name": "xgboost", "trials": 2, "fixed": {"n_estimators": 60, "early_stopping_rounds": 10}},
        # 500 epochs: about 0.8 s a cell, so that the run spans several commits (the driver commits what
        # finished at most a second apart) and an interrupt after three cells leaves some to resume
        {"name": "mlp", "trials": 3, "space": {"n_blocks": {"choice": [0, 2]}, "d_block": 32},
         "fixed": {"max_epochs": 500, "patience": 500, "lr": 0.003}},
    ],
}


class Interrupt:
    """A progress callback that stops the run (as Ctrl-C would) after ``after`` cells."""

    def __init__(self, after: int) -> None:
        self.after, self.cells = after, 0

    def __call__(self, line: str) -> None:
        if line.lstrip().startswith("["):
            self.cells += 1
            if self.cells >= self.after:
                raise KeyboardInterrupt


def query(db: Path, sql: str, capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess:
    """`attnbench query --db DB SQL`, in this process."""
    from pipeline import cli

    capsys.readouterr()
    rc = cli.main(["query", "--db", str(db), sql])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess([], rc, out, err)


def test_run_interrupt_resume_and_failures(ray_local, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    suite = parse_suite(TINY)
    db = tmp_path / "results.duckdb"
    with pytest.raises(KeyboardInterrupt):
        runner.run(suite, db, progress=Interrupt(after=3))
    store = Store(db)
    n_cells = 3 * 2 * 2  # folds × sizes × models
    # Cells commit in batches: at least the three whose lines were printed, and not all of them.
    kept = len(store.query("SELECT * FROM results"))
    assert 3 <= kept < n_cells
    assert store.query("SELECT status FROM runs").status.tolist() == ["interrupted"]
    # Nothing that was only interrupted is recorded as a failure.
    assert store.query("SELECT count(*) AS n FROM trials WHERE status NOT IN ('ok', 'error')").n[0] == 0

    summary = runner.run(suite, db, progress=lambda _: None)
    assert (summary.n_cells, summary.n_skipped, summary.n_done + summary.n_failed) == (n_cells, kept, n_cells - kept)
    res = store.query("SELECT * FROM results")
    assert len(res) == n_cells and res.cell_id.is_unique
    assert (res.attempts == 1).all()  # nothing ran twice
    assert set(res.groupby(["fold", "sample_size", "model"]).size()) == {1}
    assert (res.status == "ok").all(), res[["model", "status", "error"]]
    assert min(res.n_train) == 48 and max(res.n_train) > 90
    # wine has 3 classes (majority share 0.40): both models must learn, boosting well.
    assert res.loc[res.model == "xgboost", "accuracy"].min() > 0.85, res[["model", "sample_size", "accuracy"]]
    assert res.loc[res.model == "mlp", "accuracy"].min() > 0.7, res[["model", "sample_size", "accuracy"]]
    assert res.loc[res.model == "mlp", "n_params"].gt(0).all()

    # mlp's n_blocks = 0 raises in the constructor: those trials are recorded, the others finish.
    trials = store.query("SELECT t.*, r.model FROM trials t JOIN results r USING (cell_id)")
    bad = trials[trials.status == "error"]
    assert len(bad) >= 1 and (bad.model == "mlp").all()
    assert bad.error.str.contains("n_blocks=0").all()
    assert len(trials[(trials.model == "mlp") & (trials.status == "ok")]) >= 6
    assert not trials.duplicated(["cell_id", "trial_index"]).any()
    # No second training run: each cell's result is its selected trial's own test score.
    best = store.query("SELECT r.accuracy AS cell, t.accuracy AS trial, r.val_score AS v, t.val_score AS tv "
                       "FROM results r JOIN trials t ON t.trial_id = r.best_trial")
    assert len(best) == n_cells and (best.cell == best.trial).all() and (best.v == best.tv).all()
    # Selection by validation only: the selected trial has the cell's best validation score.
    top = trials[trials.status == "ok"].groupby("cell_id").val_score.max()
    chosen = store.query("SELECT cell_id, val_score FROM results").set_index("cell_id").val_score
    assert len(top) == n_cells and (chosen.sort_index() == top.sort_index()).all()

    # A third run has nothing left to do.
    again = runner.run(suite, db, progress=lambda _: None)
    assert (again.n_skipped, again.n_done) == (n_cells, 0)
    assert len(store.query("SELECT * FROM results")) == n_cells

    # The leaderboard view and the read-only query command agree with the table.
    lb = store.query("SELECT * FROM leaderboard")
    assert lb.n_cells.sum() == n_cells
    out = query(db, "SELECT count(*) AS n FROM results", capsys)
    assert out.returncode == 0 and str(n_cells) in out.stdout
    out = query(db, "DELETE FROM results", capsys)
    assert out.returncode != 0 and "read-only" in out.stderr.lower()
    assert len(store.query("SELECT * FROM results")) == n_cells

    # Every scored trial kept its validation and test predictions, and every cell its targets; no
    # prediction outlives its trial (the interrupted run's lost trials left none behind).
    kept = store.query("SELECT p.*, t.status FROM predictions p LEFT JOIN trials t USING (trial_id)")
    assert kept.status.notna().all()
    scored = trials[trials.status.isin(["ok", "stopped"])]
    assert set(kept.trial_id) == set(scored.trial_id) and len(kept) == 2 * len(scored)
    targets = store.query("SELECT * FROM targets")
    assert len(targets) == 2 * n_cells
    # SQL reads them: class probabilities of one test row sum to 1 (to the storage's rounding).
    out = query(db, "SELECT round(list_sum(list_transform(proba[1:3], lambda x: x / 65535)), 3) AS s "
                    "FROM predictions WHERE part = 'test' LIMIT 1", capsys)
    assert out.returncode == 0 and "1.0" in out.stdout, out
    # A post-hoc ensemble's first pick is the trial selection picked: its test score is the cell's.
    from pipeline.report.data import ReportData

    data = ReportData.load(db)
    ens = data.ensembles
    mine = ens[~ens.pooled].merge(res[["fold", "sample_size", "model", "accuracy"]],
                                           on=["fold", "sample_size", "model"])
    assert len(mine) == n_cells
    assert (mine.selected_score - mine.accuracy).abs().max() < 1e-9
    assert ((mine.members >= 1) & (mine.members <= mine.candidates)).all()
    # The accuracy page's table: default, tuned and tuned + ensembled side by side, per size, for the
    # models with a cell whose search scored two configurations or more (one is default = tuned = ensembled:
    # an MLP cell whose other trials drew n_blocks = 0 and failed has nothing to ensemble).
    from pipeline.report.pages.accuracy import ensemble_table

    configs = store.query("SELECT r.sample_size, r.model, count(DISTINCT t.suggestion) AS n FROM trials t "
                          "JOIN results r USING (cell_id) WHERE t.status = 'ok' GROUP BY r.cell_id, 1, 2")
    for size in ("48", "all"):
        table = ensemble_table(data, size, f"table-ensembles-{size}").split("</table>")[0]
        here = configs[configs.sample_size == size]
        searched = set(here.model[here.n > 1])
        assert "xgboost" in searched  # two trials, none fails
        for model in ("xgboost", "mlp"):
            assert (f">{model}<" in table) == (model in searched), (model, table[:500])


def test_torch_with_two_workers_trains_on_ray_train_with_ddp(ray_local, tmp_path: Path):
    """workers > 1 launches a Ray Train TorchTrainer (DDP over gloo on CPU) from a warm trial worker."""
    suite = parse_suite({
        "name": "ddp", "datasets": [{"sklearn": "breast_cancer"}], "protocol": {"folds": 3, "max_folds": 1},
        "models": [{"name": "mlp", "trials": 1, "search": "asha", "fixed": {"max_epochs": 8, "d_block": 32},
                    "resources": {"cpus": 1, "workers": 2}}],
    })
    summary = runner.run(suite, tmp_path / "r.duckdb", progress=lambda _: None)
    store = Store(tmp_path / "r.duckdb")
    res = store.query("SELECT status, error, accuracy, n_params, epochs FROM results")
    assert summary.n_done == 1, res.error.tolist()
    assert res.accuracy[0] > 0.8 and res.n_params[0] > 0 and res.epochs[0] >= 1
    trials = store.query("SELECT status, curve FROM trials")
    assert trials.status.tolist() == ["ok"] and "val_loss" in trials.curve[0]


def test_compressed_variants_are_models_of_their_own(ray_local, tmp_path: Path):
    """A suite's `compress` option scores each trial's pruned, quantized and PCA variants; the selected
    trial's become rows of their own (mlp+prune, ...), and a failed cell's variants are failed rows."""
    suite = parse_suite({
        "name": "compress", "datasets": [{"sklearn": "breast_cancer"}], "protocol": {"folds": 3, "max_folds": 1},
        "models": [{"name": "mlp", "trials": 1, "fixed": {"max_epochs": 15, "d_block": 64},
                    "compress": ["prune", "quantize", "pca"]},
                   {"name": "mlp", "label": "broken", "trials": 1, "fixed": {"d_block": 0, "max_epochs": 2},
                    "compress": ["prune"]}],
    })
    summary = runner.run(suite, tmp_path / "r.duckdb", progress=lambda _: None)
    assert (summary.n_cells, summary.n_done, summary.n_failed) == (2, 1, 1)  # variants are not cells
    store = Store(tmp_path / "r.duckdb")
    res = store.query("SELECT * FROM results").set_index("model")
    assert sorted(res.index) == ["broken", "broken+prune", "mlp", "mlp+pca", "mlp+prune", "mlp+quantize"]
    ok = res.loc[["mlp", "mlp+prune", "mlp+quantize", "mlp+pca"]]
    assert (ok.status == "ok").all() and (ok.accuracy > 0.8).all(), ok[["status", "error"]]
    assert ok.variant.tolist()[1:] == ["prune", "quantize", "pca"] and ok.variant.isna().tolist()[0]
    assert res.loc["mlp+prune", "n_params"] < 0.9 * res.loc["mlp", "n_params"]  # 30% of the hidden neurons go
    assert res.loc["mlp+prune", "fit_seconds"] >= res.loc["mlp", "fit_seconds"]  # it needs the trained model first
    assert res.loc["mlp+quantize", "device"] == "cpu" and pd.isna(res.loc["mlp+quantize", "flops_per_row"])
    assert pd.isna(res.loc["mlp+pca", "epochs"])  # a model trained anew on the components
    assert res.loc["mlp+prune", "best_trial"] == res.loc["mlp", "best_trial"]  # the same configuration
    variants = store.query("SELECT variants FROM trials WHERE cell_id = ?", [res.loc["mlp", "cell_id"]]).variants[0]
    assert [v["method"] for v in json.loads(variants)] == ["prune", "quantize", "pca"]  # VariantRecord's fields
    assert res.loc["broken+prune", "status"] == "error" and "d_block=0" in res.loc["broken+prune", "error"]
    # The report shows them beside the rest.
    from pipeline.report.pages import compute, write_report

    page = (write_report(tmp_path / "r.duckdb", tmp_path / "reports", [compute.SPEC]).parent / "compute.html").read_text()
    assert "mlp+prune" in page and "mlp+quantize" in page
