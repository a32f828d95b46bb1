"""The engine's parts that need no cluster: searchers and their resumption, ASHA rungs, records and
the store's columns derived from them, failure classification, progress lines."""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from pipeline.data.store import Store
from pipeline.engine import faults
from pipeline.engine.cells import CellPlan, CellState
from pipeline.engine.progress import Counts, Progress
from pipeline.engine.searchers import CellSearch, Rungs, concurrency_cap, default_point, grace_for, milestones
from pipeline.learners.resolve import resolve, resolve_name
from pipeline.models.registry import REGISTRY
from pipeline.records import CellResult, RunRecord, Status, TrialRecord, sql_columns
from pipeline.spec import ModelSpec
from pipeline.train.loop import Diverged


def spec(**kw) -> ModelSpec:
    return ModelSpec(**{"name": "xgboost", "trials": 8, **kw})


def draws(search: CellSearch, n: int) -> list[tuple[int, dict]]:
    out = []
    for _ in range(n):
        i, config = search.suggest()
        out.append((i, config))
        search.complete(i, TrialRecord(cell_id="c", trial_id=str(i), status="ok", val_score=0.5 + 0.01 * i))
    return out


def record(i: int, config: dict, score: float | None = 0.7, status: str = "ok", attempt: int = 1) -> TrialRecord:
    return TrialRecord(cell_id="c", trial_id=f"t{i}-{attempt}", suggestion=i, trial_index=i, attempt=attempt,
                       config=config, status=status, val_score=score)


@pytest.mark.parametrize("kind", ["random", "tpe", "asha"])
def test_every_search_tries_the_defaults_first_then_seeded_distinct_samples(kind):
    s = spec(search=kind, fixed={"n_estimators": 50})
    first = draws(CellSearch(resolve(s), seed=3), 6)
    assert first[0][1] == default_point(resolve(s))
    assert [i for i, _ in first] == list(range(6))
    assert all(c["n_estimators"] == 50 for _, c in first)  # fixed values travel with every suggestion
    assert len({tuple(sorted(c.items())) for _, c in first}) == 6
    assert draws(CellSearch(resolve(s), seed=3), 6) == first  # the same seed, the same search
    assert draws(CellSearch(resolve(s), seed=4), 6)[1:] != first[1:]


def test_a_resumed_random_search_reruns_what_was_lost_and_continues_the_same_sequence():
    s = spec()
    whole = draws(CellSearch(resolve(s), seed=0), 6)
    # Suggestions 0, 1 and 3 were committed; 2 was running when the run stopped.
    done = [record(i, whole[i][1]) for i in (0, 1, 3)]
    resumed = CellSearch(resolve(s), seed=0, done=done)
    assert resumed.suggest() == whole[2]
    assert resumed.suggest() == whole[4]
    assert resumed.suggest() == whole[5]


def test_a_resumed_tpe_search_learns_from_the_history_and_does_not_repeat_it():
    s = spec(search="tpe", trials=20)
    history = draws(CellSearch(resolve(s), seed=0), 5)
    done = [record(i, c, score=0.5 + 0.05 * i) for i, c in history]
    done.append(record(5, {**history[0][1], "max_depth": 2}, score=None, status="error"))  # a failure is history too
    resumed = CellSearch(resolve(s), seed=0, done=done)
    i, config = resumed.suggest()
    assert i == 6
    assert config != default_point(resolve(s))  # the defaults were tried already
    assert config not in [c for _, c in history]


def test_an_infra_loss_and_its_retry_are_one_suggestion():
    s = spec()
    whole = draws(CellSearch(resolve(s), seed=1), 3)
    done = [record(0, whole[0][1]), record(1, whole[1][1], status="infra", score=None),
            record(1, whole[1][1], attempt=2)]
    assert CellSearch(resolve(s), seed=1, done=done).suggest() == whole[2]


def test_tpe_runs_a_few_trials_of_a_cell_at_a_time_and_the_others_are_not_capped():
    assert concurrency_cap(spec(search="tpe", trials=20)) == 4
    assert concurrency_cap(spec(search="tpe", trials=3)) == 1
    assert concurrency_cap(spec(search="random", trials=20)) == 20
    assert concurrency_cap(spec(search="asha", trials=20)) == 20


def test_a_model_without_a_space_is_suggested_its_fixed_configuration():
    s = spec(space={k: v for k, v in default_point(resolve(spec())).items()})
    search = CellSearch(resolve(s), seed=0)
    assert search.searcher is None
    assert draws(search, 2) == [(0, default_point(resolve(s))), (1, default_point(resolve(s)))]


def test_asha_keeps_the_top_third_at_each_rung_and_ignores_other_epochs():
    rungs = Rungs()
    assert rungs.milestones[:3] == [3, 9, 27]
    assert rungs.decide(3, 0.5)  # the first at a rung always goes on
    assert rungs.decide(3, 0.9)
    assert not rungs.decide(3, 0.6)  # below the top third of (0.5, 0.9, 0.6)
    assert not rungs.decide(3, math.nan)  # a diverging trial stops
    assert rungs.decide(4, 0.0)  # not a rung
    assert rungs.decide(9, 0.1)


def test_a_resumed_asha_cell_keeps_its_rungs_from_the_committed_curves():
    rungs = Rungs()
    rungs.replay([{"epoch": 3, "val_score": 0.9}, {"epoch": 4, "val_score": 0.95}, {"epoch": 9, "val_score": 0.9}])
    rungs.replay([{"epoch": 3, "val_score": 0.8}])
    assert rungs.recorded[3] == [0.9, 0.8] and rungs.recorded[9] == [0.9]
    assert not rungs.decide(3, 0.7)


def test_the_store_derives_its_columns_from_the_records(tmp_path):
    store = Store(tmp_path / "r.duckdb")
    described = store.read("DESCRIBE trials"), store.read("DESCRIBE results")
    trials, results = (dict(zip(d.column_name, d.column_type, strict=True)) for d in described)
    assert list(trials) == [n for n, _ in sql_columns(TrialRecord)]
    assert "attention" not in trials  # kept out of the trials table by its field metadata
    assert list(results) == [n for n, _ in sql_columns(CellResult)]
    assert trials["started_at"] == "TIMESTAMP" and trials["n_params"] == "BIGINT" and trials["config"] == "JSON"
    for f in dataclasses.fields(TrialRecord):  # every stored field has a type the store knows
        assert f.name in trials or not f.metadata.get("stored", True)


def test_a_record_and_its_result_round_trip_through_one_commit(tmp_path):
    store = Store(tmp_path / "r.duckdb")
    t = TrialRecord(cell_id="c1", trial_id="c1-t0", run_id="r", config={"lr": 0.1}, status="ok", val_score=0.8,
                    accuracy=0.75, curve=[{"epoch": 1, "val_score": 0.8}], node="n", worker="h:1")
    res = CellResult(cell_id="c1", run_id="r", suite="s", dataset="d", task_type="binary", repeat=0, fold=0,
                     sample_size="all", seed=0, model="m", model_name="xgboost", spec_hash="h", status="ok",
                     best_trial="c1-t0", accuracy=0.75, val_score=0.8)
    store.commit([t], [(res, None)])
    row = store.query("SELECT * FROM trials").iloc[0]
    assert row.accuracy == 0.75 and row.node == "n" and '"lr"' in row.config
    assert store.query("SELECT best_trial FROM results").best_trial.tolist() == ["c1-t0"]
    # The same cell committed again: its rows replaced, each value as the record held it. A NaN or an infinity
    # is NULL, a numpy scalar its number, a state its word, a time to the microsecond, a dict JSON.
    at = datetime(2026, 11, 30, 5, 6, 7, 123456)
    t2 = dataclasses.replace(t, status=Status.DIVERGED, val_score=math.nan, log_loss=math.inf, accuracy=np.float32(0.5),
                             n_params=np.int64(3_000_000_000), epochs=np.int64(7), started_at=at, config={"d": [1, 2]})
    store.commit([t2], [(dataclasses.replace(res, status=Status.DIVERGED, accuracy=None, val_score=math.nan), None)])
    got = store.query("SELECT status, val_score, log_loss, accuracy, n_params, epochs, started_at, config::VARCHAR AS "
                      "config, typeof(status) AS kind FROM trials")
    assert len(got) == 1
    row = got.iloc[0]
    assert row.status == "diverged" and row.kind == "VARCHAR" and pd.isna(row.val_score) and pd.isna(row.log_loss)
    assert store.query("SELECT count(*) AS n FROM trials WHERE val_score IS NULL AND log_loss IS NULL").n[0] == 1
    assert row.accuracy == 0.5 and row.n_params == 3_000_000_000 and row.epochs == 7
    assert row.started_at == at and json.loads(row.config) == {"d": [1, 2]}
    results = store.query("SELECT status, accuracy, val_score FROM results WHERE val_score IS NULL AND accuracy IS NULL")
    assert results.status.tolist() == ["diverged"]


def test_failures_are_classified_by_what_they_say():
    assert faults.classify(Diverged("loss is nan")) == Status.DIVERGED
    assert faults.classify(RuntimeError("CUDA out of memory. Tried to allocate")) == Status.OOM
    assert faults.classify(MemoryError()) == Status.OOM
    assert faults.classify(faults.TrialTimeout("past 10 s")) == Status.TIMEOUT
    assert faults.classify(ValueError("n_blocks=0")) == Status.ERROR
    assert faults.lost_worker_status(RuntimeError("Task was killed due to the node running low on memory")) \
        == Status.OOM
    assert faults.lost_worker_status(RuntimeError("ActorDiedError: the actor died")) == Status.INFRA
    assert faults.hard_limit_s(100) == 150 and faults.hard_limit_s(4) == 14
    assert Status.STOPPED.scored and not Status.INFRA.scored


def test_progress_prints_plain_status_lines_off_a_terminal():
    lines: list[str] = []
    p = Progress(lines.append)
    assert not p.live
    c = Counts(cells_total=10, cells_done=3, cells_failed=1, cells_running=2, trials_planned=40, trials_done=10,
               slots_busy=2, slots=2)
    p.status(c)  # too soon after the start for a plain line
    p.status(c, force=True)
    p.line("[4/10] done")
    assert lines[0].strip().startswith("cells 4/10 done (1 failed), 2 running, 4 pending")
    assert "slots 2/2 busy" in lines[0] and "ETA" in lines[0] and lines[1] == "[4/10] done"
    assert Progress.describe(c, 60).endswith("ETA 3:00 (10/40 trials)")  # 10 of 40 trials took a minute


def test_progress_line_fits_a_narrow_terminal():
    """A live line wider than the terminal wraps, and "\\r" then redraws only its last row: the live line
    takes the terminal's width, the short form where the full one does not fit, cut where neither does."""
    c = Counts(cells_total=120, cells_done=30, cells_failed=1, cells_running=2, trials_planned=400, trials_done=100,
               slots_busy=2, slots=2)
    full = Progress.describe(c, 3725)
    assert len(full) > 79 and Progress.describe(c, 3725, width=len(full)) == full
    short = Progress.describe(c, 3725, width=79)
    assert short == "31/120 done (1 failed) · 2 running · 1:02:05 · ETA 3:06:15" and len(short) <= 79
    assert len(Progress.describe(c, 3725, width=30)) == 30


def test_usage_reads_busy_time_overlap_and_node_spread_from_the_trials():
    import pandas as pd

    from pipeline.engine.usage import usage

    t0 = pd.Timestamp("2026-01-01 00:00:00")
    at = lambda s: t0 + pd.Timedelta(seconds=s)  # noqa: E731
    # node a runs cells 1 and 2 over [0, 4]; node b runs cell 3 over [1, 3], then cell 1 over [3, 5].
    rows = [("c1", 0, 4, "a"), ("c2", 0, 2, "a"), ("c3", 1, 3, "b"), ("c1", 3, 5, "b"),
            ("c2", None, None, "a")]  # a trial that never ran (lost before it started) counts nowhere
    frame = pd.DataFrame([{"cell_id": c, "started_at": None if s is None else at(s),
                           "finished_at": None if e is None else at(e),
                           "seconds": None if s is None else e - s, "node": n} for c, s, e, n in rows])
    u = usage(frame)
    assert (u.trials, u.busy_s, u.span_s, u.nodes) == (4, 10.0, 5.0, 2)
    assert u.cells_at_once == 3  # c1, c2, c3 over [1, 2]
    assert u.cells_at_once_on_every_node == 3
    assert u.efficiency(slots=4) == pytest.approx(10 / 20) and u.efficiency(slots=4, wall_s=10) == pytest.approx(0.25)
    # Back to back on one node, an end and the next start at the same instant do not overlap.
    serial = frame.iloc[[1, 2]].assign(node="a", started_at=[at(0), at(2)], finished_at=[at(2), at(4)])
    assert usage(serial).cells_at_once == 1 and usage(frame.iloc[:0]).trials == 0


ROUNDS_MODELS = sorted(n for n, i in REGISTRY.items() if i.capabilities.rungs == "boosting rounds")


def rounds_key(name: str) -> str:
    """The key that caps a boosting model's rounds."""
    return "iterations" if "iterations" in REGISTRY[name].defaults else "n_estimators"


@pytest.mark.parametrize("model", ROUNDS_MODELS)
def test_asha_stops_a_boosting_trial_at_a_rung_and_scores_its_best_round(model):
    """Boosting trials meet ASHA's rungs on their rounds (10, 30, 90, …): a cut stops training there,
    the trial keeps its best round so far and is scored like any other; no cut, no stop."""
    import numpy as np
    from sklearn.datasets import load_breast_cancer

    from pipeline.data.preprocess import build_fold
    from pipeline.engine.records import TrialRequest
    from pipeline.engine.worker import run_trial

    x, y = load_breast_cancer(return_X_y=True, as_frame=True)
    ids = np.random.default_rng(0).permutation(len(y))
    data = build_fold(x, y.astype(str), "binary", ["0", "1"], ids[:300], ids[300:400], ids[400:])
    rounds = rounds_key(model)
    req = TrialRequest(cell_id="c", trial_id="t", trial_index=0, suggestion=0, attempt=1, model=resolve_name(model),
                       config={rounds: 400, "early_stopping_rounds": 400, "learning_rate": 0.02}, seed=0,
                       data_key="k", cpus=1, gpus=0, workers=1, backend="auto", trial_timeout_s=60,
                       attention=False, asha=True)
    asked: list[tuple[int, float]] = []

    def cut_at_30(step: int, score: float) -> bool:
        asked.append((step, score))
        return step < 30

    rec = run_trial(req, data, decide=cut_at_30)
    assert rec.status == Status.STOPPED.value and rec.stop_reason == "pruned", rec.error
    # Asked after every round (the warm worker forwards only the rungs to the board), on minus the log-loss.
    assert [s for s, _ in asked] == list(range(1, 31)) and all(score < 0 for _, score in asked)
    assert rec.epochs <= 30 and rec.accuracy > 0.85 and len(rec.curve) == 30
    assert milestones(grace_for(req.model))[:3] == [10, 30, 90]
    assert milestones(grace_for(resolve_name("mlp")))[:2] == [3, 9]  # epochs: the torch Learner's own grace

    assert rec.epochs == 30 and rec.best_epoch <= 30  # rounds run, and the round kept

    full = run_trial(req, data, decide=lambda step, score: True)
    assert full.status == Status.OK.value and len(full.curve) == 400
    # All 400 rounds ran (early stopping is 400 rounds too): out of budget, still improving at a slow rate.
    assert full.epochs == 400 and full.stop_reason == "max_epochs" and full.best_epoch <= 400
    early = run_trial(dataclasses.replace(req, asha=False, config={rounds: 400, "early_stopping_rounds": 5,
                                                                   "learning_rate": 0.5}), data)
    assert early.stop_reason == "early_stopping" and early.best_epoch + 5 == early.epochs < 400


def test_a_resumed_cells_search_seconds_are_its_trials_own_not_the_pause_between_runs():
    """Two trials committed by a run that was then stopped, two more an hour later by the run that
    resumed the cell: the search took the trials' own 0.6 s, not the hour between (the compute page
    ranks on it)."""
    base = CellResult(cell_id="c", run_id="r2", suite="s", dataset="d", task_type="binary", repeat=0, fold=0,
                      sample_size="all", seed=0, model="xgboost", model_name="xgboost", spec_hash="h")
    t0 = datetime(2026, 1, 1, 12, 0, 0)

    def trial(i: int, start: datetime, seconds: float) -> TrialRecord:
        return TrialRecord(cell_id="c", trial_id=f"c-1-{i}", trial_index=i, suggestion=i, config={}, status="ok",
                           val_score=0.5 + 0.01 * i, seconds=seconds, started_at=start,
                           finished_at=start + timedelta(seconds=seconds))

    prior = [trial(0, t0, 0.1), trial(1, t0 + timedelta(seconds=0.1), 0.2)]
    later = t0 + timedelta(hours=1)
    cell = CellState(CellPlan(base=base, model=resolve(spec(trials=4)), seed=0, data_key="k", n_features=3,
                              label="c", prior=prior))
    cell.trials += [trial(2, later, 0.15), trial(3, later, 0.15)]  # two at once, on two workers
    res, _ = cell.result()
    assert res.n_trials == 4 and res.status == "ok"
    assert res.search_seconds == pytest.approx(0.6)
    # A trial lost with its worker has the driver's seconds; one with none counts from its start to its end.
    lost = dataclasses.replace(trial(4, later, 2.0), status="infra", seconds=None)
    cell.trials.append(lost)
    assert cell.result()[0].search_seconds == pytest.approx(2.6)


def test_a_run_waiting_inside_a_call_to_a_lost_ray_is_ended_by_the_cluster_watch(monkeypatch):
    """The cluster goes while the scheduler waits inside a call to Ray (one that needs Ray's head waits
    for Ray's own 60 s, and Ray then ends the process with status 1): the watch thread sees the cluster
    gone and, the loop not having ended the run within STUCK_S, hands the loss to ``on_cluster_lost``
    (the command's one line and exit code)."""
    import threading

    from pipeline.engine import scheduler as sch

    class Gone:  # the cluster's head is gone from the start
        def gone(self, every_s: float = 0.5) -> str:
            return "its gcs_server process exited (killed by signal 9)"

    monkeypatch.setattr(sch, "ClusterWatch", Gone)
    monkeypatch.setattr(sch, "STUCK_S", 0.2)
    released, told = threading.Event(), []

    def on_cluster_lost(err: Exception) -> None:  # the command prints its line and exits here
        told.append(str(err))
        released.set()

    run = sch.Scheduler([], load=lambda _: None, store=None, run_row=RunRecord(run_id="r", suite="s"),
                        progress=Progress(lambda _: None, live=False), on_cell=lambda _: None,
                        on_cluster_lost=on_cluster_lost)
    monkeypatch.setattr(run, "_resize", lambda force=False: released.wait(30))  # a call to Ray that does not return
    monkeypatch.setattr(run, "_warm_imports", lambda: None)
    run.run()
    assert told == ["the Ray cluster went away mid-run: its gcs_server process exited (killed by signal 9)"]


def test_a_compressed_variants_record_reads_back_as_it_was_stored():
    """A trial's variants are stored as their records' fields (``trials.variants``) and read back as the
    same records by a resumed run; a file from before the record (a dict by method) reads too."""
    import json

    from pipeline.data.rows import sql_value
    from pipeline.records import VariantRecord

    kept = [VariantRecord(method="prune", accuracy=0.9, n_params=10, fit_seconds=1.5, details={"neurons_removed": 3}),
            VariantRecord(method="pca", retrained=True, error="PCA needs numeric features")]
    assert VariantRecord.from_stored(json.loads(sql_value(kept))) == kept
    assert VariantRecord.from_stored({"prune": {"accuracy": 0.9, "bytes": 5}}) == [VariantRecord(method="prune",
                                                                                                 accuracy=0.9)]
    assert VariantRecord.from_stored(None) == []
