"""Interrupts of the run itself: Ctrl-C in a terminal, SIGTERM (``ray job stop``, ``kill``), the driver
killed, its local Ray stopped under it. Every cell committed before is kept exactly once, nothing that was
only interrupted is recorded as a failure, and the same command then runs only what is missing."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml
from processes import Spawned, in_process
from test_faults import BASE, QUICK_FIRST, RUNNING, _title, network_until, results

from pipeline.data.store import Store

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


def test_the_driver_killed_mid_run_loses_nothing(tmp_path: Path, ray_local,
                                                  capsys: pytest.CaptureFixture[str]):
    """SIGKILL the driver after its first cell commits; the same command then runs only what is missing (on the
    session's Ray, in this process: the killed run's own local Ray is what the kill is about, not the rerun's)."""
    n_cells = 4
    suite = {**BASE, "datasets": [{"sklearn": "wine"}], "protocol": {"folds": n_cells},
             # Each trial trains until its 1 s limit (as long on any machine; 400 epochs took about a
             # second on one, and a faster one could commit every cell before the kill)
             "models": [{"name": "mlp", "trials": 2, "trial_timeout_s": 1,
                         "fixed": {"max_epochs": 1_000_000, "patience": 1_000_000, "d_block": 32}}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    db = tmp_path / "r.duckdb"
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(tmp_path / "s.yaml"), "--db", str(db), "--no-report",
           "--num-cpus", "1"]
    env = {**os.environ, "RAY_TMPDIR": f"/tmp/abd-{os.getpid()}"}
    env.pop("RAY_ADDRESS", None)
    with (tmp_path / "driver.log").open("w") as log:  # the child keeps its own copy of the descriptor
        driver = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    ray_procs: dict[int, psutil.Process] = {}
    try:
        deadline = time.monotonic() + 180
        n_before = 0
        while time.monotonic() < deadline and driver.poll() is None:
            for q in psutil.Process(driver.pid).children(recursive=True):
                ray_procs.setdefault(q.pid, q)
            if db.exists():
                import duckdb

                try:
                    with duckdb.connect(str(db), read_only=True) as con:
                        n_before = con.execute("SELECT count(*) FROM results").fetchone()[0]
                except duckdb.Error:  # a write in progress, or no results table yet
                    n_before = 0
                if n_before >= 1:
                    break
            time.sleep(0.2)
        assert driver.poll() is None and n_before >= 1, ("the driver finished or wrote nothing in time: "
                                                         + (tmp_path / "driver.log").read_text()[-3000:])
        driver.send_signal(signal.SIGKILL)
        driver.wait(10)
    finally:
        for q in ray_procs.values():  # the killed driver's local Ray, by pid
            with contextlib.suppress(psutil.Error):
                q.kill()
        if driver.poll() is None:
            driver.kill()
    done = results(db)
    assert 1 <= len(done) < n_cells and (done.status == "ok").all() and done.cell_id.is_unique
    last = max(Store(db).query(f"SELECT max(finished_at) AS t FROM {t}").t[0] for t in ("results", "trials"))
    shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
    again = in_process(cmd[3:], capsys)  # the same command, on the session's Ray
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert f"{n_cells - len(done)} cells done, 0 failed, {len(done)} already done before" in again.stdout
    res = results(db)
    assert len(res) == n_cells and res.cell_id.is_unique and (res.status == "ok").all() and (res.attempts == 1).all()
    assert set(done.cell_id) <= set(res.cell_id)
    first = res.set_index("cell_id").loc[done.cell_id]
    assert (first.run_id.to_numpy() == done.run_id.to_numpy()).all()  # untouched by the second run
    runs = Store(db).query("SELECT status, finished_at FROM runs ORDER BY started_at")
    # The killed run never got to write its end: the next one marks it killed, finished at its last commit.
    assert runs.status.tolist() == ["killed", "finished"] and runs.finished_at[0] == last
    assert "marked killed: " + done.run_id.iloc[0] in again.stdout


def test_ctrl_c_in_a_terminal_then_sigterm_interrupt_cleanly_and_a_rerun_completes_each_cell_once(
        tmp_path: Path, ray_address: str, capsys: pytest.CaptureFixture[str]):
    """Ctrl-C typed into a real terminal (tmux): the run stops, records nothing that was only interrupted
    as a failure, is marked interrupted and exits 130. SIGTERM (``ray job stop``, ``kill``) does the same
    to the resumed run. A third run completes the rest, each cell once, each search with exactly its
    trials (the interrupted trials run again, the committed ones do not)."""
    suite = {**BASE, "datasets": [{"sklearn": "wine"}],
             "protocol": {"folds": 3, "sample_sizes": [32, 64, "all"]},
             # Each trial trains until its 0.75 s limit, so that the run lasts as long on any machine (at 150
             # epochs a fast one can finish the cells left between a signal and its handling)
             "models": [{"name": "mlp", "trials": 2, "trial_timeout_s": 0.75,
                         "fixed": {"max_epochs": 1_000_000, "patience": 1_000_000, "d_block": 64}}]}
    n_cells = 9
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    db, code_file = tmp_path / "r.duckdb", tmp_path / "exit"
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(tmp_path / "s.yaml"), "--db", str(db), "--no-report",
           "--num-cpus", "2"]
    env = {**os.environ, "RAY_TMPDIR": f"/tmp/abi-{os.getpid()}"}
    env.pop("RAY_ADDRESS", None)
    sock = f"abn-{os.getpid()}"
    tmux = ["tmux", "-L", sock]
    shell = f"cd {REPO} && {' '.join(cmd)}; echo $? > {code_file}; sleep 60"
    subprocess.run([*tmux, "new-session", "-d", "-s", "run", "-x", "200", "-y", "50", shell], env=env, check=True)

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", "run", "-S", "-200"], capture_output=True,
                              text=True).stdout

    def n_results() -> int:
        return len(results(db)) if db.exists() else 0

    try:
        deadline = time.monotonic() + 180
        while f"[2/{n_cells}]" not in screen():
            assert not code_file.exists() and time.monotonic() < deadline, screen()
            time.sleep(0.2)
        subprocess.run([*tmux, "send-keys", "-t", "run", "C-c"], check=True)
        while not code_file.exists():
            assert time.monotonic() < deadline, screen()
            time.sleep(0.2)
        assert code_file.read_text().strip() == "130", screen()
        assert "interrupted; completed cells are saved" in screen()
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)

    def check_clean(status: str) -> int:
        store = Store(db)
        assert store.query("SELECT status FROM runs ORDER BY started_at").status.tolist()[-1] == status
        trials = store.query("SELECT * FROM trials")
        assert (trials.status == "ok").all(), trials[["status", "error"]]  # nothing interrupted is a failure
        res = results(db)
        assert (res.status == "ok").all() and res.cell_id.is_unique and (res.attempts == 1).all()
        return len(res)

    first = check_clean("interrupted")
    # Cells that finish while the interrupt is handled are kept; the SIGTERM below needs two or more
    # cells left to land between them.
    assert 2 <= first <= n_cells - 3, first

    # SIGTERM as `ray job stop` sends it: to the driver alone, of a run that joined a cluster (here the
    # session's; a local Ray's own SIGTERM is test_sigterm_after_ray_started_is_an_interrupt_not_exit_status_15).
    term = subprocess.Popen([*cmd[:-2], "--address", ray_address], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while n_results() < first + 1:  # the resumed run has committed a cell of its own
        assert term.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    term.send_signal(signal.SIGTERM)
    out, _ = term.communicate(timeout=60)
    assert term.returncode == 130, out[-3000:]
    second = check_clean("interrupted")
    assert first < second < n_cells, (first, second)

    shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
    # The rest on the session's Ray: what is resumed is the file's, not the cluster's (and a third local
    # Ray start would add nothing the two above did not test).
    again = in_process(cmd[3:-2], capsys)
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert f"{n_cells - second} cells done, 0 failed, {second} already done before" in again.stdout
    assert check_clean("finished") == n_cells
    trials = Store(db).query("SELECT cell_id, count(*) AS n, count(DISTINCT suggestion) AS s FROM trials GROUP BY 1")
    assert (trials.n == 2).all() and (trials.s == 2).all(), trials


def test_sigterm_after_ray_started_is_an_interrupt_not_exit_status_15(tmp_path: Path):
    """ray.init installs a SIGTERM handler that exits with status 15; a command that turned SIGTERM into
    an interrupt keeps it past the start of Ray (a SIGTERM while the report is written is still an
    interrupt, exit 130, with its message)."""
    code = (
        "import os, signal, time\n"
        "from pipeline.interrupts import sigterm_as_interrupt\n"
        "from pipeline.runner import start_ray\n"
        "with sigterm_as_interrupt():\n"
        "    start_ray(None, 1, 0)\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(30)\n"
        "    except KeyboardInterrupt as err:\n"
        "        print('interrupted by', err)\n"
        "        raise SystemExit(130)\n"
    )
    env = {**os.environ, "RAY_TMPDIR": f"/tmp/abt-{os.getpid()}"}  # Ray's socket paths stay under 108 bytes
    env.pop("RAY_ADDRESS", None)
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=120)
    finally:
        shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
    assert done.returncode == 130, done.stdout + done.stderr[-2000:]
    assert "interrupted by signal 15" in done.stdout


def test_the_local_ray_stopped_under_a_run_ends_it_with_one_line_and_exit_4(tmp_path: Path, ray_local,
                                                                            capsys: pytest.CaptureFixture[str]):
    """`ray stop --force` under a run, for this run's Ray only (SIGKILL to every process of the local
    Ray the command started, as `ray stop --force` sends, not to another session's): the command ends
    within seconds with exit code 4 and one line (what happened, that completed cells are saved, the
    command that resumes), not a minute's wait, status 1 and Ray's log; the cell done before is kept,
    and the command it names runs only the cell that was missing."""
    suite = {**BASE, "models": [QUICK_FIRST, network_until(10)]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    db, log = tmp_path / "r.duckdb", tmp_path / "out.log"
    cmd = ["run", str(tmp_path / "s.yaml"), "--db", str(db), "--no-report", "--num-cpus", "1"]
    env = {**os.environ, "RAY_TMPDIR": f"/tmp/abs-{os.getpid()}"}
    env.pop("RAY_ADDRESS", None)
    driver = Spawned()
    try:
        with log.open("w") as out:
            run = driver.start([sys.executable, "-m", "pipeline.cli", *cmd], env=env, cwd=REPO, stdout=out,
                               stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while True:  # the TabM cell is done, and the MLP's trial runs on its worker
            driver.snapshot()  # the driver's Ray: the processes it started (GCS, raylet, workers...)
            if "[1/2]" in log.read_text() and any(_title(q).startswith(RUNNING) for q in driver.seen.values()):
                break
            assert run.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)
        ray_procs = [q for q in driver.seen.values() if q.pid != run.pid]
        assert any(_title(q).endswith("gcs_server") or q.name() == "gcs_server" for q in ray_procs)
        stopped_at = time.monotonic()
        for q in ray_procs:
            with contextlib.suppress(psutil.Error):
                q.kill()
        code = run.wait(timeout=60)
        took = time.monotonic() - stopped_at
    finally:
        driver.stop()
    output = log.read_text()
    assert code == 4, output[-3000:]
    assert took < 45, took  # well under Ray's own 60 s wait on a lost cluster, which it would otherwise show
    after = output[output.index("[1/2]"):].splitlines()[1:]
    lost = [line for line in after if "the Ray cluster went away" in line]
    assert len(lost) == 1 and len(after) < 5, after  # one line, no dump
    resume = re.search(r"completed cells are saved — `attnbench (.+)` resumes the run", lost[0])
    assert resume, lost[0]
    res = results(db)
    assert res.model.tolist() == ["tabm"] and (res.status == "ok").all()  # finished before, kept

    # The command it names, verbatim, on the session's Ray (in this process): the stopped Ray was this test's point
    shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
    again = in_process(shlex.split(resume.group(1)), capsys)
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert "1 cells done, 0 failed, 1 already done before" in again.stdout, again.stdout
    res = results(db)
    assert len(res) == 2 and (res.status == "ok").all() and res.cell_id.is_unique
