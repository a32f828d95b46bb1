"""``run --time-limit``: a chunk of a long study that ends by itself. At the limit the run stops as an interrupt
does (completed cells saved, nothing recorded as failed, the same command resumes), with its own status,
line and exit code; before it, no trial starts that its entry's earlier trials say would outlast it, and the
run ends as soon as nothing left can finish in time instead of idling to the limit. ``--cheapest-first``:
chunks that finish the most cells first."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from test_faults import BASE, network_until

from pipeline import cli
from pipeline.clock import parse_duration
from pipeline.data.store import Store
from pipeline.engine.cells import fits, in_order
from pipeline.engine.progress import Counts, Progress
from pipeline.engine.scheduler import Scheduler
from pipeline.records import RunStatus
from pipeline.runner import expect_durations


@pytest.mark.parametrize(("text", "seconds"), [("2h", 7200), ("1h45m", 6300), ("90m", 5400), ("30s", 30),
                                                ("5400", 5400), ("1.5h", 5400), ("1m30s", 90)])
def test_durations_read_as_users_write_them(text: str, seconds: float):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "why"), [("1h30", "which unit"), ("0", "above zero"), ("2x", "not a duration"),
                                           ("", "not a duration"), ("h", "not a duration")])
def test_a_duration_that_cannot_be_read_is_refused_with_why(text: str, why: str):
    with pytest.raises(ValueError, match=why):
        parse_duration(text)


def test_a_wrong_time_limit_is_refused_in_one_line_before_any_file_is_written(tmp_path: Path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--db", str(tmp_path / "r.duckdb"), "--time-limit", "1h30"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and "say which unit its last number is in" in err[-1]
    assert list(tmp_path.iterdir()) == []


def test_a_trial_starts_only_while_it_is_expected_to_end_in_time():
    assert fits(None, 0.5)  # no estimate yet: it starts while time is left
    assert fits(60.0, 61.0) and fits(60.0, 60.0)
    assert not fits(60.0, 59.0)
    assert not fits(None, 0.0) and not fits(1.0, -5.0)


def _scheduler(stop_in: float | None, cells: list[_Cell], inflight: int = 0) -> tuple[Scheduler, float]:
    """The scheduler's decisions alone, without a Ray pool: its cells, what runs and its limit."""
    s = Scheduler.__new__(Scheduler)
    now = time.monotonic()
    s.stop_at = None if stop_in is None else now + stop_in
    s.cells = dict.fromkeys(cells)
    s.inflight = dict.fromkeys(range(inflight))
    s.longest, s.shortest_left = {}, None
    s.finished, s.priced, s.priced_at = [], {}, -1
    s.pool = SimpleNamespace(slots=[object()] * 2)
    return s, now


class _Cell:
    """A cell as the limit sees it: its entry, data and size, whether it has a trial to start, and that
    trial's expected time from the file (None: no trial of it finished before the run)."""

    def __init__(self, expected_s: float | None, dataset: str = "d", timeout_s: float = 1800.0, *,
                 model: str = "m", size: str = "all", n_train: int = 100, measured: bool = True) -> None:
        self.plan = SimpleNamespace(expected_s=expected_s, expected_measured=measured and expected_s is not None,
                                    shape="cpu", spec=SimpleNamespace(trial_timeout_s=timeout_s),
                                    base=SimpleNamespace(model=model, dataset=dataset, sample_size=size,
                                                         n_train=n_train, spec_hash="h"))
        self.spec = SimpleNamespace(trials=1)
        self.final: set[int] = set()
        self.running = 0

    def can_dispatch(self, now: float) -> bool:
        return True

    def budget_left(self, now: float) -> bool:
        return True


def test_the_run_ends_when_nothing_left_can_finish_before_the_limit():
    # Ten minutes left, every cell left expected to take an hour, nothing running: stop now, not in ten minutes.
    s, now = _scheduler(600, [_Cell(3600), _Cell(4000)])
    assert s._time_is_up(now) and s.shortest_left == 3600
    # One of them fits: it goes on.
    assert not _scheduler(600, [_Cell(3600), _Cell(300)])[0]._time_is_up(now)
    # No estimate: its own time limit is what it may take (30 minutes do not fit in ten; five do).
    assert _scheduler(600, [_Cell(None)])[0]._time_is_up(now)
    assert not _scheduler(600, [_Cell(None, timeout_s=300)])[0]._time_is_up(now)
    # Something still runs: it may finish in time; wait for it.
    s, now = _scheduler(600, [_Cell(3600)], inflight=1)
    assert not s._time_is_up(now)
    # The limit came: up, whatever runs (those trials are lost, as at Ctrl-C), and not for want of time.
    s, now = _scheduler(600, [_Cell(1)], inflight=2)
    assert s._time_is_up(now + 600) and s.shortest_left is None
    # Every cell ran, before the limit or at it: the run finished.
    s, now = _scheduler(600, [])
    assert not s._time_is_up(now) and not s._time_is_up(now + 600)
    # No limit: never.
    s, now = _scheduler(None, [_Cell(3600)])
    assert not s._time_is_up(now + 1e9)


def test_the_next_trial_is_the_first_in_order_that_ends_in_time():
    long, short, unknown = _Cell(3000, "a"), _Cell(200, "b"), _Cell(None, "c", timeout_s=1800)
    s, now = _scheduler(1000, [long, unknown, short])
    assert s.next_cell("cpu", now) is short  # the longer ones first in order, but they would not end in time
    assert _scheduler(4000, [long, unknown, short])[0].next_cell("cpu", now) is long
    assert _scheduler(None, [long, unknown, short])[0].next_cell("cpu", now) is long  # no limit: the order alone
    # A longer trial of the same entry, data and size finished in this run raises what the next one expects.
    s, now = _scheduler(1000, [short])
    s.longest[("m", "b", "all")] = 1500.0
    assert s.expected(short) == 1500.0 and s.next_cell("cpu", now) is None


def test_cells_of_known_cost_keep_the_slots_busy_until_none_fits_and_the_eta_is_their_prices():
    """Issue 84 item 3: 'stopped at 18 minutes with 22 left', 30 cells of a few seconds waiting, each expected to
    take its 30-minute time limit because its own work had not run yet. Priced from the run's finished trials of
    the same entry (other datasets at the size, or scaled by rows), they start while they fit, and the run ends
    only when none does; the ETA sums the cells' prices, not the trials' pace."""
    waiting = [_Cell(None, f"d{i}", 1800.0, n_train=100) for i in range(30)]
    s, now = _scheduler(22 * 60, waiting)
    assert s.next_cell("cpu", now) is None and s._time_is_up(now)  # nothing known: the limit is all it has
    s, now = _scheduler(22 * 60, waiting)
    s.finished = [{"model": "m", "dataset": "seen", "sample_size": "all", "n_train": 100, "seconds": 5.0,
                   "spec_hash": "h"}]
    assert s.next_cell("cpu", now) is waiting[0] and not s._time_is_up(now)
    assert s.expected(waiting[7]) == pytest.approx(5.0)
    assert s.seconds_left(now) == pytest.approx(30 * 5.0 / 2)  # 30 cells of 5 s on two slots
    # Eight seconds left: a 5-second cell fits, so the run goes on; four: none does, so it ends, said.
    assert not s._time_is_up(s.stop_at - 8) and s.next_cell("cpu", s.stop_at - 8) is waiting[0]
    assert s._time_is_up(s.stop_at - 4) and s.shortest_left == pytest.approx(5.0)
    # A bigger cell of the same entry is scaled by its rows: 5 s at 100 rows, 50 s at 1,000.
    big = _Cell(None, "big", 1800.0, n_train=1000, size="1000")
    s, now = _scheduler(60, [big])
    s.finished = [{"model": "m", "dataset": "seen", "sample_size": "all", "n_train": 100, "seconds": 5.0,
                   "spec_hash": "h"}]
    assert s.expected(big) == 1800.0  # not priced until the limit asks (reprice)
    assert s.next_cell("cpu", now) is big and s.expected(big) == pytest.approx(50.0)
    # A cell nothing says anything of: no ETA from prices (the line falls back to the trials' pace).
    s, now = _scheduler(None, [_Cell(None, model="other")])
    assert s.seconds_left(now) is None
    line = Progress.describe(Counts(cells_total=30, trials_planned=30, trials_done=1, left_s=75.0), 600)
    assert line.endswith("ETA 1:15 (the cells' expected times)")  # not 4:50:00 at the pace of the first trial


def test_a_run_stopped_at_its_time_limit_keeps_its_cells_and_the_same_command_resumes(
        ray_local, tmp_path: Path, capsys, monkeypatch):
    suite = {**BASE, "name": "limit", "datasets": [{"sklearn": "wine"}], "protocol": {"folds": 3},
             "models": [network_until(0.5)]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(suite))
    db = tmp_path / "r.duckdb"
    base = ["run", str(path), "--db", str(db), "--no-report"]
    # A limit that has passed before the first trial can start: the run stops with every cell pending.
    first = [*base, "--time-limit", "0.01s"]
    monkeypatch.setattr(sys, "argv", ["attnbench", *first])  # what the resume line repeats
    code = cli.main(first)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_STOPPED == 5, err
    assert err[-1] == ("attnbench: stopped at its time limit (0:00:00) with 3 cells of suite 'limit' to run; "
                       f"completed cells are saved — `{shlex.join(['attnbench', *first])}` resumes the run")
    store = Store(db)
    runs = store.query("SELECT status, n_done, n_failed FROM runs")
    assert runs.status.tolist() == [RunStatus.STOPPED.value] and runs.n_done[0] == runs.n_failed[0] == 0
    assert store.query("SELECT count(*) AS n FROM trials").n[0] == 0  # nothing ran, nothing recorded as failed
    # Where no trial left would end in time (nothing of the entry anywhere, in the file or the shipped references,
    # under its label: each may take its 600 s limit), it says so.
    long = {**suite, "models": [{**network_until(0.5), "trial_timeout_s": 600, "label": "never-seen-net"}]}
    (tmp_path / "long.yaml").write_text(yaml.safe_dump(long))
    code = cli.main(["run", str(tmp_path / "long.yaml"), "--db", str(tmp_path / "long.duckdb"), "--no-report",
                     "--time-limit", "2m"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 5 and err[-1] == ("attnbench: no trial left would end within the time limit (0:02:00): the shortest "
                                     "is expected to take 0:10:00; give a longer --time-limit"), err
    # The same command with time enough: every cell, once, and the run reads finished.
    assert cli.main([*base, "--time-limit", "1h"]) == 0
    done = store.query("SELECT cell_id, status FROM results")
    assert len(done) == 3 and done.cell_id.is_unique and (done.status == "ok").all()
    assert store.query("SELECT status FROM runs ORDER BY started_at").status.tolist() == [
        RunStatus.STOPPED.value, RunStatus.FINISHED.value]
    # What a later chunk expects of a trial: the longest of its entry's finished trials on that data and size.
    runs = store.query("SELECT max(t.seconds) AS s, any_value(r.spec_hash) AS h FROM trials t JOIN results r "
                       "USING (cell_id)")
    longest, spec = runs.s[0], runs.h[0]
    n = int(store.query("SELECT any_value(n_train) AS n FROM results").n[0])
    plans = [SimpleNamespace(base=SimpleNamespace(model="mlp", dataset=d, sample_size="all", spec_hash=h, n_train=n),
                             expected_s=None) for d, h in (("wine", spec), ("iris", spec), ("wine", "other"))]
    expect_durations(store, plans)
    assert plans[0].expected_s == pytest.approx(longest) and longest > 0.4 and plans[0].expected_measured
    # Other data, another version of the entry: priced from that trial (the same rows), not measured.
    assert plans[1].expected_s == pytest.approx(longest) and not plans[1].expected_measured
    assert plans[2].expected_s == pytest.approx(longest) and not plans[2].expected_measured


def test_cells_go_longest_first_or_cheapest_first_one_folds_cells_together():
    """The order cells are taken in (:func:`in_order`): folds by their cells' total expected cost, then cells
    by cost; cheapest first (`run --cheapest-first`) is the same order with both keys turned."""
    def plan(key: str, cost: float) -> SimpleNamespace:
        return SimpleNamespace(data_key=key, cost=cost, name=f"{key}{cost:g}")

    plans = [plan("a", 1), plan("b", 50), plan("a", 3), plan("c", 2), plan("b", 1), plan("c", 2.5)]
    longest = [p.name for p in in_order(plans)]  # type: ignore[arg-type]
    cheapest = [p.name for p in in_order(plans, cheapest_first=True)]  # type: ignore[arg-type]
    assert longest == ["b50", "b1", "c2.5", "c2", "a3", "a1"]
    assert cheapest == ["a1", "a3", "c2", "c2.5", "b1", "b50"]
