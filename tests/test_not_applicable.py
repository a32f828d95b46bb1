"""A model that declares limits (an in-context learner's context) through a real run, without the fm
extra: the cells past its limits are left out of the plan, and the report shows them as not applicable
(never failed, never 0) and names the model's family in-context. The learner is a user's own: a
nearest-neighbours model is in-context in the plain sense (fit keeps the rows, predict reads them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "pipeline.cli"]

CTXKNN = '''
from pathlib import Path

from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from pipeline.learners.in_context import InContextLearner, Limits


class KnnContext(InContextLearner):
    kind = "neighbours"
    limits = Limits(max_train_rows=100)

    def estimator(self, regression, path, data):
        k = int(Path(path).read_text())  # its "checkpoint": the number of neighbours
        return KNeighborsRegressor(k) if regression else KNeighborsClassifier(k)
'''


@pytest.mark.slow
def test_cells_past_declared_limits_are_not_applicable_on_the_report(tmp_path: Path, ray_address: str):
    (tmp_path / "ctxknn.py").write_text(CTXKNN)
    (tmp_path / "k.ckpt").write_text("5")
    suite = {"name": "limits", "datasets": [{"sklearn": "breast_cancer"}],
             "protocol": {"folds": 2, "max_folds": 1, "sample_sizes": [64, 128]},
             "models": [{"name": "knn_ctx", "learner": "ctxknn:KnnContext", "trials": 1,
                         "fixed": {"checkpoint": str(tmp_path / "k.ckpt")}},
                        {"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 10}}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(REPO)}
    listing = subprocess.run([*CLI, "models", "s.yaml"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
    assert listing.returncode == 0, listing.stderr
    line = next(x for x in listing.stdout.splitlines() if x.startswith("knn_ctx "))
    assert f"in-context; weights: classification: {tmp_path / 'k.ckpt'}" in line, line

    db, reports = tmp_path / "r.duckdb", tmp_path / "reports"
    out = subprocess.run([*CLI, "run", "s.yaml", "--db", str(db), "--reports", str(reports), "--address",
                          ray_address],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert ("notice: breast_cancer: knn_ctx not applicable at size 128 (at the first: 128 training rows, above its "
            "declared 100); those cells are left out of the plan, not failed") in out.stdout, out.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("SELECT model, sample_size, status FROM results ORDER BY 1, 2").fetchall()
        planned = con.execute("SELECT count(*) FROM suite_cells WHERE model = 'knn_ctx'").fetchone()[0]
    assert got == [("knn_ctx", "64", "ok"), ("xgboost", "128", "ok"), ("xgboost", "64", "ok")], got
    assert planned == 1

    acc = (reports / "accuracy.html").read_text()
    assert 'id="table-not-applicable"' in acc
    na = acc.split('id="table-not-applicable"')[1].split("</table>")[0]
    assert "knn_ctx" in na and "breast_cancer" in na and "128 training rows, above its declared 100" in na
    at_128 = acc.split('id="table-datasets-128"')[1].split("</table>")[0]
    assert "not applicable" in at_128 and ">failed" not in at_128 and ">missing" not in at_128
    at_64 = acc.split('id="table-datasets-64"')[1].split("</table>")[0]
    assert "not applicable" not in at_64
    summary_128 = acc.split('id="table-summary-128"')[1].split("</table>")[0]
    assert "knn_ctx" not in summary_128  # not a task it lost: it is not in the 128-row aggregates at all
    assert "neighbours · in-context" in acc.split('id="table-summary-64"')[1].split("</table>")[0]
    assert "neighbours · in-context" in (reports / "runs.html").read_text()
    index = (reports / "index.html").read_text()
    assert "0 failed · 0 missing" in index
