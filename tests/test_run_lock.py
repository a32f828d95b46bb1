"""One run at a time per results file: a second `attnbench run` into a file another run is writing is refused
in one line and writes nothing; the first goes on; a lock left by a process that is gone is taken over.
Real processes: two `attnbench run` commands, and a `sleep` standing in for a run that was killed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pipeline.data import run_lock

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
# One cell that trains until its time limit, so that the first run lasts as long on any machine: long
# enough for the second command to find it running (the refusal, in this process, takes under a second).
SLOW = {"name": "lock", "seed": 0, "datasets": [{"sklearn": "breast_cancer"}],
        "protocol": {"folds": 3, "max_folds": 1, "sample_sizes": ["all"]},
        "models": [{"name": "mlp", "trials": 1, "trial_timeout_s": 5,
                    "fixed": {"max_epochs": 1_000_000, "patience": 1_000_000, "d_block": 32}}]}


def attnbench(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipeline.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, **kw)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """A command in this process (the lock's holder is the other process; a refusal or a run with nothing to
    run needs no interpreter of its own): its exit code and what it wrote to stderr."""
    from pipeline import cli as entry

    capsys.readouterr()
    code = entry.main(list(args))
    return code, capsys.readouterr().err


def test_a_second_run_into_the_same_file_is_refused_the_first_goes_on_and_a_dead_run_s_lock_is_taken_over(
        tmp_path: Path, ray_address: str, capsys: pytest.CaptureFixture[str]):
    suite = tmp_path / "lock.yaml"
    suite.write_text(yaml.safe_dump(SLOW))
    db = tmp_path / "r.duckdb"
    # The first run joins the session's Ray (the lock is taken before a run starts or joins one).
    first = attnbench("run", str(suite), "--db", str(db), "--no-report", "--address", ray_address)
    lock = run_lock.lock_path(db)
    deadline = time.monotonic() + 240
    while not lock.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert lock.exists(), first.communicate()
    holder = json.loads(lock.read_text())
    assert holder["pid"] == first.pid and holder["host"] == socket.gethostname()
    code, err = cli(capsys, "run", str(suite), "--db", str(db), "--no-report")
    assert first.poll() is None, "the first run ended before the second was refused: make SLOW slower"
    assert code == 2 and err.count("\n") == 1, err
    assert "another attnbench run is writing this results file" in err and holder["run_id"] in err
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err[-2000:]
    assert not lock.exists()  # released when the run ended
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
        done = con.execute("SELECT count(*) FROM results WHERE status = 'ok'").fetchall()[0][0]
    assert runs == 1 and done == 1  # the refused run left no trace; the first ran every cell once

    # A lock held by a live process that is not a run of this file's (a stand-in): refused, nothing written.
    before = db.read_bytes()
    alive = subprocess.Popen(["sleep", "60"])
    lock.write_text(json.dumps({"host": socket.gethostname(), "pid": alive.pid, "run_id": "killed-run"}))
    code, err = cli(capsys, "run", str(suite), "--db", str(db), "--no-report")
    assert code == 2 and "killed-run" in err and db.read_bytes() == before
    alive.kill()  # now its process is gone: the next run takes the lock over (nothing left to run: no Ray)
    alive.wait()
    code, err = cli(capsys, "run", str(suite), "--db", str(db), "--no-report")
    assert code == 0 and not lock.exists(), err[-2000:]
    lock.write_text("")  # half written by a run that died while writing it, long ago
    os.utime(lock, (time.time() - 60, time.time() - 60))
    code, err = cli(capsys, "run", str(suite), "--db", str(db), "--no-report")
    assert code == 0 and not lock.exists(), err[-2000:]
