"""Faults during a run: every cell finished before a fault is kept exactly once, the faulty cell is
recorded with a status and its error, infrastructure failures are retried, model failures are not, and
a re-run completes only what is missing."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest
import yaml
from processes import Spawned, free_port, in_process, run_working, wait_for_port, wait_working

from pipeline import runner
from pipeline.data.store import Store
from pipeline.engine.faults import hard_limit_s
from pipeline.spec import parse_suite

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
QUIET = {"progress": lambda _: None}

BASE = {"name": "faults", "seed": 0, "datasets": [{"sklearn": "diabetes"}],
        "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": ["all"]}}
GOOD = {"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 30, "early_stopping_rounds": 10}}
# For a fault mid-trial on one CPU: the engine takes cells in order of expected cost, so this TabM cell (a
# few epochs; a network of twice the MLP's cost) runs first and is done before the fault; then an MLP that
# trains until its time limit (so it lasts as long on any machine), the trial the fault hits.
QUICK_FIRST = {"name": "tabm", "trials": 1, "fixed": {"max_epochs": 2}}


def network_until(seconds: float) -> dict:
    return {"name": "mlp", "trials": 1, "trial_timeout_s": seconds,
            "fixed": {"max_epochs": 1_000_000, "patience": 1_000_000, "d_block": 64}}


def results(db: Path):
    return Store(db).query("SELECT * FROM results ORDER BY model")


def test_model_failures_are_recorded_not_retried_and_the_rest_is_kept(ray_local, tmp_path: Path):
    """NaN loss → diverged; a model too large to allocate → oom; boosting that would run long stops at
    its time limit and keeps its best round; a network whose limit passes inside its first epoch (a
    3 s epoch, say, at a limit of 0.01 s) stops there, with no epoch to keep → timeout."""
    suite = parse_suite({**BASE, "models": [
        GOOD,
        {"name": "mlp", "label": "nan", "trials": 1,
         "fixed": {"lr": 1e8, "clip_norm": 0, "warmup_frac": 0, "max_epochs": 5}},
        {"name": "mlp", "label": "huge", "trials": 1, "fixed": {"d_block": 1_000_000, "n_blocks": 2, "max_epochs": 2}},
        {"name": "xgboost", "label": "long", "trials": 1, "trial_timeout_s": 1,
         "fixed": {"n_estimators": 200_000, "early_stopping_rounds": 200_000, "max_depth": 8, "learning_rate": 1e-3}},
        # wide enough that one step takes longer than the limit: the default MLP's first epoch on these
        # 240-300 rows now finishes within 10 ms on a fast core, and the trial then keeps it (status ok)
        {"name": "mlp", "label": "slow", "trials": 1, "trial_timeout_s": 0.01,
         "fixed": {"max_epochs": 50, "d_block": 1024, "n_blocks": 4}},
    ]})
    db = tmp_path / "r.duckdb"
    summary = runner.run(suite, db, **QUIET)
    assert (summary.n_done, summary.n_failed) == (2, 3)
    res = results(db).set_index("model")
    assert res.loc["xgboost", "status"] == "ok" and res.loc["xgboost", "r2"] > 0.2
    assert res.loc["nan", "status"] == "diverged" and "training loss became" in res.loc["nan", "error"]
    assert res.loc["huge", "status"] == "oom" and "allocate memory" in res.loc["huge", "error"]
    assert res.loc["long", "status"] == "ok" and res.loc["long", "stop_reason"] == "time_limit"
    assert 1 <= res.loc["long", "epochs"] < 200_000
    assert res.loc["slow", "status"] == "timeout" and "during the first epoch" in res.loc["slow", "error"]
    trials = Store(db).query("SELECT t.status, t.seconds, r.model FROM trials t JOIN results r USING (cell_id)")
    slow = trials[trials.model == "slow"]
    assert slow.status.tolist() == ["timeout"] and slow.seconds.iloc[0] < 5
    # The long boosting trial stopped at its own 1 s limit, well before the hard limit would have killed it
    # (each trial's own measure: the run's start-up on a loaded machine is not part of it).
    assert trials[trials.model == "long"].seconds.iloc[0] < hard_limit_s(1)
    # A plain re-run retries none of them; --retry-failed re-runs exactly the three failures.
    assert runner.run(suite, db, **QUIET).n_skipped == 5
    res = results(db)
    assert len(res) == 5 and res.cell_id.is_unique and (res.attempts == 1).all()


RUNNING = "ray::TrialWorker.run"  # the title Ray gives an actor's process while it runs that method


def _title(p: psutil.Process) -> str:
    try:
        return (p.cmdline() or [""])[0]
    except psutil.Error:
        return ""


def trial_workers() -> dict[int, str]:
    """The trial workers alive in this process's Ray session, found through Ray (its actor table, kept
    by the GCS: the actor's class, state and process id), each with what it does now: its process title,
    which Ray sets to ``ray::TrialWorker.run`` while a trial runs there and ``ray::TrialWorker`` between
    trials. (ray.util.state would say the same through the dashboard, which a run does not start.) A
    process's start time does not tell: Ray starts worker processes ahead, idle, and makes one an
    actor's when it is asked for one."""
    from ray._private.state import actors

    out = {}
    for actor in actors(actor_state_name="ALIVE").values():
        if actor["ActorClassName"] == "TrialWorker" and actor.get("Pid"):
            with contextlib.suppress(psutil.Error):
                out[int(actor["Pid"])] = _title(psutil.Process(int(actor["Pid"])))
    return out


def running_trial_workers(timeout_s: float = 60) -> list[psutil.Process]:
    """The trial workers of this session that are running a trial now (waits for one)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        busy = [psutil.Process(pid) for pid, title in trial_workers().items() if title.startswith(RUNNING)]
        if busy:
            return busy
        time.sleep(0.1)
    return []


def the_one_running_trial_worker(timeout_s: float = 60, settled_s: float = 1.0) -> list[psutil.Process]:
    """The trial worker running a trial once it has been the only one for ``settled_s`` (waits for it)."""
    deadline = time.monotonic() + timeout_s
    alone_since, pid = time.monotonic(), None
    while time.monotonic() < deadline:
        busy = [p for p, title in trial_workers().items() if title.startswith(RUNNING)]
        if len(busy) != 1 or busy[0] != pid:
            alone_since, pid = time.monotonic(), (busy[0] if len(busy) == 1 else None)
        elif time.monotonic() - alone_since >= settled_s:
            return [psutil.Process(busy[0])]
        time.sleep(0.1)
    return []


def test_a_trial_that_hangs_is_abandoned_at_the_hard_limit(ray_local, tmp_path: Path):
    """A trial that never returns (its worker stopped with SIGSTOP mid-training, as a deadlocked library
    would leave it) is abandoned at the hard limit: recorded as timeout, its worker killed and replaced;
    the cell finished before it is kept."""
    suite = parse_suite({**BASE, "models": [
        # busy until stopped: 20 s, not 5, so that it is still training when the boosting cell ends on a loaded
        # machine (at 5 it once reached its soft limit first and finished, never stopped)
        GOOD, {"name": "mlp", "label": "hangs", "trials": 1, "trial_timeout_s": 20,
               "fixed": {"max_epochs": 1_000_000, "patience": 1_000_000, "d_block": 64}}]})
    stopped: list[int] = []
    first_cell_done = threading.Event()

    def progress(line: str) -> None:
        if "[1/2]" in line:
            first_cell_done.set()

    def stop_the_busy_worker() -> None:
        first_cell_done.wait(120)
        # The boosting cell is done: the one trial running is the network's. A worker's title can lag its
        # trial's end by a moment (CI once stopped the boosting worker, idle by then, and the network ran to
        # its soft limit), so wait until one worker alone has said it runs a trial for a second.
        for actor in the_one_running_trial_worker()[:1]:
            with contextlib.suppress(psutil.Error):
                actor.send_signal(signal.SIGSTOP)
                stopped.append(actor.pid)

    stopper = threading.Thread(target=stop_the_busy_worker, daemon=True)
    stopper.start()
    summary = runner.run(suite, tmp_path / "r.duckdb", progress=progress)
    stopper.join(5)
    assert stopped, "no trial worker was found to stop"
    assert (summary.n_done, summary.n_failed) == (1, 1)
    res = results(tmp_path / "r.duckdb").set_index("model")
    assert res.loc["xgboost", "status"] == "ok"
    assert res.loc["hangs", "status"] == "timeout" and "TrialTimeout" in res.loc["hangs", "error"]
    # Abandoned at the hard limit, not long after: the scheduler's own measure of the trial's run (the run's
    # start-up and the boosting cell before it, slow on a loaded machine, are not part of it).
    ran_s = int(re.search(r"still running (\d+) s after it started", res.loc["hangs", "error"]).group(1))
    assert hard_limit_s(20) <= ran_s + 1 < hard_limit_s(20) + 15, res.loc["hangs", "error"]
    worker = Store(tmp_path / "r.duckdb").query(
        "SELECT t.worker FROM trials t JOIN results r USING (cell_id) WHERE r.model = 'hangs'").worker
    assert worker.str.endswith(f":{stopped[0]}").all(), (worker.tolist(), stopped)  # the one stopped was the trial's
    # The scheduler has asked Ray to kill the stopped worker; woken, it goes (a stopped process cannot
    # act on the request, as a deadlocked one's RPC thread would).
    with contextlib.suppress(psutil.NoSuchProcess):
        worker = psutil.Process(stopped[0])
        worker.resume()
        worker.wait(timeout=30)


def test_a_worker_killed_mid_trial_is_an_infra_failure_retried_once(ray_local, tmp_path: Path):
    """The worker training the network is SIGKILLed mid-trial (the boosting cell has committed): the lost
    trial is recorded as infra and runs again on a replacement worker; nothing else is lost."""
    suite = parse_suite({**BASE, "models": [
        # The network trains until its 12 s limit stops it (so it lasts as long on any machine; a fixed
        # epoch count finished within the kill's 0.5 s on a fast one) and its result is kept as usual.
        GOOD, {"name": "mlp", "trials": 1, "trial_timeout_s": 12,
               "fixed": {"max_epochs": 1_000_000, "patience": 1_000_000, "d_block": 64}}]})
    killed: list[int] = []
    first_cell_done = threading.Event()
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if "[1/2]" in line:
            first_cell_done.set()

    def kill_the_workers() -> None:
        first_cell_done.wait(120)
        # The boosting cell is done: the one trial running is the network's. (Not the idle worker too: the
        # scheduler, not yet told it died, would give it the retry, and the cell would fail with two
        # infra trials, its retry spent.)
        for actor in running_trial_workers():
            with contextlib.suppress(psutil.NoSuchProcess):
                actor.send_signal(signal.SIGKILL)
                killed.append(actor.pid)

    killer = threading.Thread(target=kill_the_workers, daemon=True)
    killer.start()
    summary = runner.run(suite, tmp_path / "r.duckdb", progress=progress)
    killer.join(5)
    assert killed, "no trial worker was found to kill"
    assert any("lost to the infrastructure" in line for line in lines), lines
    assert (summary.n_done, summary.n_failed) == (2, 0)
    res = results(tmp_path / "r.duckdb").set_index("model")
    assert (res.status == "ok").all() and (res.attempts == 1).all()
    trials = Store(tmp_path / "r.duckdb").query(
        "SELECT t.* FROM trials t JOIN results r USING (cell_id) WHERE r.model = 'mlp' ORDER BY trial_index")
    # The lost trial stays on record (infra, with Ray's error); the re-queued one is numbered on,
    # keeps its configuration, and ran on another worker.
    assert trials.status.tolist() == ["infra", "ok"] and trials.trial_index.tolist() == [0, 1]
    assert trials.attempt.tolist() == [1, 2] and trials.config[0] == trials.config[1]
    assert trials.worker[0] != trials.worker[1] and trials.worker[0].endswith(f":{killed[0]}")
    assert "died" in trials.error[0].lower() or "unavailable" in trials.error[0].lower()
    assert res.loc["mlp", "best_trial"] == trials.trial_id[1] and res.loc["mlp", "n_trials"] == 2


def test_a_kill_by_rays_memory_monitor_is_recorded_as_oom(tmp_path: Path):
    """Ray's memory monitor kills the trial's worker (threshold set 2 GiB above the machine's memory in use
    now, room for what a test beside this one allocates meanwhile; the network's weights, gradients and
    Adam's moments need about 4 GB); Tune's search is not aborted, the trial and the cell are recorded as
    oom, the other cell is kept."""
    vm = psutil.virtual_memory()
    threshold = (vm.total - vm.available + 2 * 2**30) / vm.total
    suite = {**BASE, "models": [
        GOOD, {"name": "mlp", "label": "hog", "trials": 1,
               "fixed": {"d_block": 8000, "n_blocks": 4, "max_epochs": 3, "batch_size": 8}}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    env = {**os.environ, "RAY_memory_usage_threshold": f"{threshold:.3f}", "RAY_memory_monitor_refresh_ms": "100",
           "RAY_TMPDIR": f"/tmp/abm-{os.getpid()}"}
    env.pop("RAY_ADDRESS", None)
    out = run_working([sys.executable, "-m", "pipeline.cli", "run", str(tmp_path / "s.yaml"), "--db",
                       str(tmp_path / "r.duckdb"), "--no-report", "--num-cpus", "1"], env=env, cwd=REPO)
    shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
    assert out.returncode == 3, out.stdout + out.stderr[-3000:]
    res = results(tmp_path / "r.duckdb").set_index("model")
    assert res.loc["xgboost", "status"] == "ok"
    assert res.loc["hog", "status"] == "oom", res.loc["hog", "error"]
    assert "memory" in res.loc["hog", "error"].lower()


def test_a_worker_node_removed_mid_run_loses_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A three-process local cluster: a head with no CPUs (so every trial runs on a worker node) and one
    worker node, SIGKILLed whole (raylet, object store, trial actor) mid-trial of the MLP's cell. The
    TabM cell, done first, stays; the lost trial is recorded as infra and its cell runs again on a
    replacement node (as a cloud autoscaler would start one); a re-run then has nothing left to do."""
    ray = str(Path(sys.executable).with_name("ray"))
    temp = f"/tmp/abn-{os.getpid()}"
    gcs = free_port()
    # Notice a dead node within ~2 s rather than Ray's default ~30 s.
    env = {**os.environ, "RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "3",
           "RAY_health_check_initial_delay_ms": "0", "RAY_USAGE_STATS_ENABLED": "0",
           # `ray start` turns token auth on by itself when ~/.ray/auth_token exists; this cluster has none.
           "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    quiet = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}

    def node(name: str, *args: str) -> Spawned:
        procs = Spawned()
        procs.start([ray, "start", "--block", "--node-ip-address=127.0.0.1", f"--temp-dir={temp}-{name}", *args],
                    **quiet)
        return procs

    suite = {**BASE, "models": [QUICK_FIRST, network_until(10)]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    db, log = tmp_path / "r.duckdb", tmp_path / "driver.log"
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(tmp_path / "s.yaml"), "--db", str(db), "--no-report",
           "--address", f"127.0.0.1:{gcs}"]
    nodes: list[Spawned] = []
    driver = Spawned()
    try:
        nodes.append(node("head", "--head", f"--port={gcs}", "--num-cpus=0", "--include-dashboard=false"))
        wait_for_port(gcs, timeout_s=300)  # a hang's bound: Ray starts slowly on two loaded cores
        victim = node("a", f"--address=127.0.0.1:{gcs}", "--num-cpus=1")  # one trial at a time
        nodes.append(victim)
        with log.open("w") as out:
            run = driver.start(cmd, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        def mlp_training() -> bool:  # the worker node's trial worker that trains the MLP (its own process tree)
            victim.snapshot()
            return any(_title(q).startswith(RUNNING) for q in victim.seen.values())

        try:
            wait_working(run, until=lambda: "[1/2]" in log.read_text(), what="the driver")
            wait_working(run, until=mlp_training, what="the driver")
        except AssertionError as err:
            raise AssertionError(f"{err}\n{log.read_text()[-3000:]}") from None
        # Mid-trial: the MLP trains until its 10 s limit.
        victim.kill()
        killed_at = datetime.now(timezone.utc)
        nodes.append(node("b", f"--address=127.0.0.1:{gcs}", "--num-cpus=1"))  # the replacement
        wait_working(run, what="the driver")
        assert run.returncode == 0, log.read_text()[-4000:]
        output = log.read_text()
        assert "lost to the infrastructure" in output, output[-3000:]
        print(output)
        assert "2 cells done, 0 failed" in output, output[-3000:]

        res = results(db).set_index("model")
        assert len(res) == 2 and res.cell_id.is_unique and (res.status == "ok").all() and (res.attempts == 1).all()
        # Done before the fault (its trial finished in its worker before the kill; on a busy machine the driver
        # may record the cell's result after it) and kept: one attempt, not run again.
        first = Store(db).query("SELECT t.finished_at FROM trials t JOIN results r USING (cell_id) "
                                "WHERE r.model = 'tabm'").finished_at
        assert len(first) == 1 and first[0] < killed_at.replace(tzinfo=None)
        trials = Store(db).query(
            "SELECT t.* FROM trials t JOIN results r USING (cell_id) WHERE r.model = 'mlp' ORDER BY trial_index")
        assert trials.status.tolist() == ["infra", "ok"], trials[["status", "error"]]
        # Ray's own words, kept on record: the actor's node died, or (when the trial noticed before the
        # cluster declared the node dead) the actor became unreachable.
        assert re.search(r"Actor(Died|Unavailable)Error", trials.error[0]), trials.error[0]

        again = in_process(cmd[3:], capsys)  # nothing left to run: no Ray is joined, no interpreter needed
        print(output)  # (in_process read what was printed before: the driver's log again, for a failure below)
        assert again.returncode == 0, again.stdout + again.stderr[-3000:]
        assert "0 cells done, 0 failed, 2 already done before" in again.stdout, again.stdout
        assert len(results(db)) == 2
    finally:
        driver.stop()
        for n in reversed(nodes):
            n.stop()
        for name in ("head", "a", "b"):
            shutil.rmtree(f"{temp}-{name}", ignore_errors=True)
