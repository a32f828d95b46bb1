"""The metric is a choice (issue 84 item 6): a suite's protocol names the test metric verdicts read (ROC-AUC on an
imbalanced binary task, say); the standings say which, every score and the constant floor are read on it, and the
same cells read another way keep their ids (it changes how results are read, not how a cell runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from processes import in_process as cli

from pipeline.data.store import Store
from pipeline.data.views import temporary_views

pytestmark = pytest.mark.slow
MODELS = [{"name": "ft_transformer", "trials": 1, "fixed": {"max_epochs": 3, "d_token": 16}},
          {"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 10}}]


def _suite(path: Path, metric: str | None) -> None:
    protocol = {"folds": 3, "sample_sizes": ["all"], **({"metric": metric} if metric else {})}
    path.write_text(yaml.safe_dump({"name": "m", "seed": 0, "datasets": [{"sklearn": "breast_cancer"}],
                                    "protocol": protocol, "models": MODELS}))


def _read(db: Path, sql: str):
    return Store(db).query(sql, prepare=temporary_views)


def test_verdicts_read_the_suites_metric(ray_local, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    suite, db = tmp_path / "m.yaml", tmp_path / "r.duckdb"
    _suite(suite, None)
    assert cli(["run", str(suite), "--db", str(db), "--no-report"], capsys).returncode == 0
    plain = _read(db, "SELECT metric, diff FROM standings WHERE versus = 'best gradient boosting' AND family_best")
    assert plain.metric.tolist() == ["accuracy"]
    ids = set(_read(db, "SELECT cell_id FROM results").cell_id)

    _suite(suite, "roc_auc")
    again = cli(["run", str(suite), "--db", str(db), "--no-report"], capsys)
    assert "6 cells, 6 already done, 0 to run" in again.stdout, again.stdout  # the same cells, read another way
    assert set(_read(db, "SELECT cell_id FROM results").cell_id) == ids
    auc = _read(db, "SELECT metric, model, versus_model, diff FROM standings "
                    "WHERE versus = 'best gradient boosting' AND family_best")
    assert auc.metric.tolist() == ["roc_auc"]
    means = _read(db, "SELECT model, avg(roc_auc) AS auc FROM results GROUP BY model").set_index("model").auc
    row = auc.iloc[0]
    assert row["diff"] == pytest.approx(means[row.model] - means[row.versus_model])  # the difference of their AUCs
    floor = _read(db, "SELECT DISTINCT score_name, constant_score FROM expected_cells")
    assert floor.score_name.tolist() == ["roc_auc"] and floor.constant_score.round(6).tolist() == [0.5]

    _suite(suite, "log_loss")  # lower is better: read negated, so a positive difference is still the model ahead
    cli(["run", str(suite), "--db", str(db), "--no-report"], capsys)
    loss = _read(db, "SELECT model, score FROM scores")
    stored = _read(db, "SELECT model, log_loss FROM current_results")
    assert sorted(loss.score.round(9)) == sorted((-stored.log_loss).round(9))


def test_a_regression_metric_leaves_a_classification_dataset_on_accuracy():
    from pipeline.plan import read_on

    assert read_on("rmse", "regression") == "rmse" and read_on("rmse", "binary") is None
    assert read_on("roc_auc", "binary") == "roc_auc" and read_on("roc_auc", "regression") is None
    assert read_on(None, "multiclass") is None


def test_the_pages_say_which_metric_they_read():
    import pandas as pd

    from pipeline.report.data import metric_words

    board = pd.DataFrame({"task_type": ["binary", "regression", "multiclass"], "metric": ["roc_auc", "r2", "roc_auc"]})
    assert metric_words(board) == "ROC-AUC for classification, R² for regression"
    assert metric_words(board.iloc[:1]) == "ROC-AUC for classification"
    assert metric_words(pd.DataFrame()) == "accuracy for classification, R² for regression"

