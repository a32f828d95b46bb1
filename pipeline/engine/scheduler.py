"""The suite-level scheduler: every pending cell of a run in flight at once, on warm workers.

Each cell keeps its own search (searcher, trial and seconds budget, ASHA rungs); the trials of every
cell share one queue and go to whichever warm worker of their shape is free. Cells are taken in order
of expected cost, longest first (or cheapest first: :func:`in_order`), one fold's cells together (so each
fold's arrays are prepared and sent once); a cell's trials are capped where its searcher needs it (TPE).

The driver is the only DuckDB writer. Finished trials are committed in batches at most
``FLUSH_EVERY_S`` apart, and a cell's result (the selected trial's test metrics and cost) with them
once its search ends; the commits run on one writer thread of the driver, so that dispatching never
waits for the disk, and a cell's line is printed once its commit is done. A lost worker re-queues its trial once (the lost attempt stays on record as
``infra``) and is replaced; a trial past its hard limit has its worker killed and is recorded as
``timeout``. An interrupt (SIGINT, SIGTERM) stops dispatching, ends what runs without recording it,
commits what finished, and leaves the rest to the next run, which resumes each cell's search from
its committed trials. A time limit (``stop_at``, ``run --time-limit``) ends the run the same way when it
comes, and before it starts no trial expected to outlast it (:meth:`Scheduler.expected`: the longest trial
of its entry on its data and size so far, else its own time limit): a chunk of a long study ends with little
work in flight to lose. The Ray cluster going away under the run (``ray stop``, a lost head) ends it
the same way, at once, as :class:`~pipeline.errors.ClusterLost` (see ``faults.ClusterWatch``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from pipeline.data.preprocess import FoldData
from pipeline.engine.cells import INFRA_REQUEUES, CellPlan, CellState, fits, in_order, work_key
from pipeline.engine.faults import ClusterWatch, hard_limit_s, lost_worker_status
from pipeline.engine.pool import Shape, Slot, WorkerPool
from pipeline.engine.progress import Counts, Progress
from pipeline.engine.records import TrialRequest
from pipeline.engine.searchers import CellSearch, grace_for
from pipeline.engine.worker import utcnow
from pipeline.errors import ClusterLost
from pipeline.records import CellResult, RunRecord, Status, TrialRecord

log = logging.getLogger(__name__)
FLUSH_EVERY_S = 1.0
RESIZE_EVERY_S = 1.0
WAIT_S = 0.05
PREFETCH = 4  # folds whose arrays are prepared before their first cell starts
STUCK_S = 3.0  # after the cluster went, how long the loop has to end the run itself (see _watchdog)


@dataclass
class Running:
    slot: Slot
    req: TrialRequest
    cell: CellState
    started: float


class Scheduler:
    def __init__(self, plans: list[CellPlan], *, load: Callable[[str], FoldData], store: Any, run_row: RunRecord,
                 progress: Progress, on_cell: Callable[[CellResult], None],
                 on_cluster_lost: Callable[[ClusterLost], None] | None = None, stop_at: float | None = None,
                 cheapest_first: bool = False) -> None:
        self.load = load
        self.stop_at = stop_at  # time.monotonic() at which the run stops (None: no limit)
        self.stopped = False  # the time limit ended the run
        self.started_any = False  # a trial was dispatched in this run
        self.shortest_left: float | None = None  # ended before its limit: the shortest trial left, expected
        # (model, dataset, size) → the longest trial of it finished in this run: what a time limit expects next
        self.longest: dict[tuple[str, str, str], float] = {}
        # This run's finished trials, as pricing.py reads them: a cell whose work has no finished trial, in the
        # file or in this run, is priced from them (the entry's trials on other datasets, or scaled by rows).
        self.finished: list[dict[str, Any]] = []
        self.priced: dict[CellState, float] = {}
        self.priced_at = -1  # len(self.finished) when self.priced was made
        self.on_cluster_lost = on_cluster_lost
        self.store = store
        self.run_row = run_row
        self.progress = progress
        self.on_cell = on_cell
        plans = in_order(plans, cheapest_first)
        # Cells not finished, in the order above (a dict as an ordered set: a finished cell leaves in
        # O(1)); the started ones, which alone can finish, are kept apart so that each turn of the loop
        # looks at those only (it took a pass over every cell, quadratic in a suite's cells).
        self.cells: dict[CellState, None] = dict.fromkeys(CellState(p) for p in plans)
        self.active: dict[CellState, None] = {}
        self.resumed_done = [c for c in self.cells if c.done(0.0)]  # every trial already on record
        self.users: Counter[str] = Counter(p.data_key for p in plans)
        self.refs: dict[str, Any] = {}
        self.meta: dict[str, FoldData] = {}
        self.inflight: dict[Any, Running] = {}
        self.to_write: list[TrialRecord] = []
        self.to_commit: list[tuple[CellResult, dict[str, Any] | None]] = []
        self.last_flush = time.monotonic()
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attnbench-commit")
        self.writing: tuple[Future[None], list[tuple[CellResult, dict[str, Any] | None]], RunRecord,
                            list[TrialRecord]] | None = None
        self.last_resize = 0.0
        self.counts = Counts(cells_total=len(plans),
                             trials_planned=sum(max(0, p.spec.trials - len(CellState._final(p.prior))) for p in plans))
        libraries = sorted({lib for p in plans for lib in p.model.capabilities.libraries})
        warm = {(p.model.name, tuple(p.model.spec.compress), p.base.task_type): (p.model, p.base.task_type)
                for p in plans}
        self.pool = WorkerPool(libraries, notice=progress.line, warm=list(warm.values()))
        self.board: Any = None
        if any(p.spec.search == "asha" for p in plans):
            import ray

            from pipeline.engine.searchers import RungBoard

            board: Any = ray.remote(num_cpus=0)(RungBoard)
            self.board = board.remote()
        self.n_done = self.n_failed = 0
        self.watch = ClusterWatch()

    # ------------------------------------------------------------------------------------------ loop
    def run(self) -> None:
        """Run every cell to its end; KeyboardInterrupt (Ctrl-C, SIGTERM) stops early, losing only
        the trials that were running, and so does the time limit (``stopped`` then says so)."""
        ended = threading.Event()
        if self.on_cluster_lost is not None:
            threading.Thread(target=self._watchdog, args=(ended,), name="attnbench-cluster-watch", daemon=True).start()
        try:
            self._finish_cells()  # results whose every trial is on record: kept whatever the limit
            if self._time_is_up(time.monotonic()):  # no trial would end in time: no worker starts for nothing
                self.stopped = True
                self._abandon()
                return
            self._resize(force=True)
            self._warm_imports()  # while the workers start
            deadline = time.monotonic() + 60
            # Waits for a worker only where one is starting: cells whose every trial is on record (an
            # interrupted commit) need none, and waited the whole minute for one that never came.
            while self.cells and self.pool.slots and not self.pool.n_ready() and time.monotonic() < deadline:
                self._check_cluster()
                self.pool.poll()
                if not self._prefetch():  # the first folds' arrays, while the workers start
                    time.sleep(WAIT_S)
            while self.cells or self.inflight:
                now = time.monotonic()
                self._check_cluster()  # before any call that would block on a Ray that is gone
                self._resize()
                self._dispatch(now)
                self._collect()
                self._check_timeouts()
                self._finish_cells()
                if self._time_is_up(time.monotonic()):
                    self.stopped = True
                    self._abandon()
                    return
                self._flush()
                self._status()
            self._flush(force=True)
        except KeyboardInterrupt:
            self._abandon()
            raise
        except ClusterLost:
            # As an interrupt, but no call to Ray: its actors went with it, and asking it to end them
            # would block. What finished is committed; the running trials run again on resume.
            ended.set()  # this loop ends the run itself: the watch thread has nothing to do
            self.inflight.clear()
            self.pool.slots.clear()
            self._flush(force=True)
            raise
        finally:
            ended.set()
            self.pool.shutdown()
            self.writer.shutdown(wait=True)
            self.progress.close()

    def _watchdog(self, ended: threading.Event) -> None:
        """For a cluster lost while this loop waits inside a call to Ray: such a call waits for Ray's
        own timeout (60 s) and then Ray ends the process with status 1. If the loop has not ended the
        run ``STUCK_S`` after the cluster went, ``on_cluster_lost`` is called from here (the command's
        one line and exit code). Every cell whose line was printed is committed; trials that finished
        since the last commit (under a second's worth) run again on resume."""
        assert self.on_cluster_lost is not None
        watch = ClusterWatch()
        while not ended.wait(0.5):
            reason = watch.gone(every_s=0.0)
            if reason:
                if not ended.wait(STUCK_S):
                    self.on_cluster_lost(ClusterLost(f"the Ray cluster went away mid-run: {reason}"))
                return

    def _check_cluster(self) -> None:
        reason = self.watch.gone()
        if reason:
            raise ClusterLost(f"the Ray cluster went away mid-run: {reason}")

    @staticmethod
    def _warm_imports() -> None:
        import optuna  # noqa: F401
        from ray.tune.search.optuna import OptunaSearch  # noqa: F401

    def _abandon(self) -> None:
        """An interrupt: end the running trials without a record (nothing failed), keep what finished."""
        self.inflight.clear()
        self.pool.shutdown()
        try:
            self._flush(force=True)
        except KeyboardInterrupt:  # a second Ctrl-C while committing: commit anyway, it is short
            self._flush(force=True)

    # ------------------------------------------------------------------------------------- dispatch
    def _demand(self) -> dict[Shape, int]:
        """Trials each shape could run at once now: what each cell has left, within its cap."""
        demand: Counter[Shape] = Counter()
        for c in self.cells:
            left = max(0, c.spec.trials - len(c.final)) if c.budget_left(0) else c.running + len(c.requeue)
            demand[c.plan.shape] += min(left, c.cap)
        return dict(demand)

    def _resize(self, force: bool = False) -> None:
        now = time.monotonic()
        failed = self.pool.poll()
        for slot, err in failed:
            self.progress.line(f"  notice: a worker ({slot.shape}) failed to start: {err}")
        if not force and now - self.last_resize < RESIZE_EVERY_S:
            return
        self.last_resize = now
        self.pool.resize(self._demand())

    def _dispatch(self, now: float) -> None:
        for slot in self.pool.idle():
            cell = self.next_cell(slot.shape, now)
            if cell is None:
                continue
            self.started_any = True
            if not cell.started:
                self._start(cell)
            req = cell.next_request(self.run_row.run_id)
            ref = slot.actor.run.remote(req, [self.refs[cell.plan.data_key]], self.board)
            slot.busy = True
            cell.running += 1
            cell.first_start = cell.first_start or now
            self.inflight[ref] = Running(slot, req, cell, time.monotonic())

    def _fits(self, cell: CellState, now: float) -> bool:
        if self.stop_at is None:
            return True
        self.reprice()
        return fits(self.expected(cell), self.stop_at - now)

    def expected(self, cell: CellState) -> float:
        """A trial of ``cell``'s expected wall time: the longest of its entry's finished trials on its data and
        size, in the file before the run (:attr:`CellPlan.expected_s`) or in this run; else its price from the
        file's trials (the runner's) or from this run's (:meth:`reprice`); else its time limit."""
        p = cell.plan
        known = [x for x in (p.expected_s if p.expected_measured else None, self.longest.get(work_key(p)))
                 if x is not None]
        if known:
            return max(known)
        priced = self.price(cell)
        return float(p.spec.trial_timeout_s) if priced is None else priced

    def price(self, cell: CellState) -> float | None:
        """``cell``'s price where its work has no finished trial: the runner's from the file, else this run's."""
        return cell.plan.expected_s if cell.plan.expected_s is not None else self.priced.get(cell)

    def reprice(self) -> None:
        """The cells whose work has no finished trial and no price from the file, priced from this run's
        finished trials; once per trial finished since the last time (a run without a limit never asks)."""
        if self.priced_at == len(self.finished) or not self.finished:
            return
        from pipeline import pricing

        self.priced_at = len(self.finished)
        open_ = [c for c in self.cells if c.plan.expected_s is None and work_key(c.plan) not in self.longest]
        if not open_:
            return
        import pandas as pd

        got = pricing.price_cells(pricing.pending_of([c.plan for c in open_]), pd.DataFrame(self.finished))
        self.priced = {c: float(s) for c, s in zip(open_, got.seconds, strict=True) if not pd.isna(s)}

    def seconds_left(self, now: float) -> float | None:
        """The run's expected wall time left: each unfinished cell's trials left at their expected time (a running
        trial's less what it has run), over the slots; None before any slot exists, or while a cell has neither a
        finished trial of its work nor a price (the progress line then gives the trials' pace)."""
        slots = len(self.pool.slots)
        if not slots:
            return None
        work = 0.0
        for c in self.cells:
            left = max(0, c.spec.trials - len(c.final) - c.running) if c.budget_left(now) else 0
            if left and work_key(c.plan) not in self.longest and not c.plan.expected_measured and self.price(c) is None:
                return None  # a cell nothing says anything of: its time limit is no estimate
            work += left * self.expected(c)
        for run in self.inflight.values():
            work += max(0.0, self.expected(run.cell) - (now - run.started))
        return work / slots

    def next_cell(self, shape: Shape, now: float) -> CellState | None:
        """The first cell in order with a trial of ``shape`` to start now, in time for the limit."""
        return next((c for c in self.cells if c.plan.shape == shape and c.can_dispatch(now) and self._fits(c, now)),
                    None)

    def _time_is_up(self, now: float) -> bool:
        """The time limit has come, or nothing runs and no trial left would end before it: nothing more
        can finish in this run."""
        if self.stop_at is None or not (self.cells or self.inflight):  # every cell ran: finished, not stopped
            return False
        if now >= self.stop_at:
            return True
        if self.inflight or any(c.can_dispatch(now) and self._fits(c, now) for c in self.cells):
            return False
        waiting = [self.expected(c) for c in self.cells if c.can_dispatch(now)]
        self.shortest_left = min(waiting) if waiting else None
        return True

    def _put(self, key: str) -> None:
        import ray

        if key not in self.refs:
            data = self.load(key)
            self.meta[key] = data
            self.refs[key] = ray.put(data)

    def _prefetch(self) -> bool:
        """Prepare the fold arrays of one of the next cells to start, if any (at most ``PREFETCH`` folds
        ahead of those in use); True if it did."""
        ahead = 0
        for cell in self.cells:
            if cell.started:
                continue
            key = cell.plan.data_key
            if key not in self.refs:
                self._put(key)
                return True
            ahead += 1
            if ahead >= PREFETCH:
                return False
        return False

    def _start(self, cell: CellState) -> None:
        key = cell.plan.data_key
        self._put(key)
        data = self.meta[key]
        base = cell.plan.base
        base.task_type, base.n_train, base.n_valid, base.n_test = (data.task_type, len(data.train), len(data.valid),
                                                                   len(data.test))
        cell.plan.model = cell.plan.model.for_task(data.task_type)  # defaults that differ by task
        cell.search = CellSearch(cell.plan.model, cell.plan.seed, cell.final_records)
        if self.board is not None and cell.spec.search == "asha" and cell.plan.prior:
            self.board.replay.remote(base.cell_id, [t.curve for t in cell.plan.prior], grace_for(cell.plan.model))
        self.counts.cells_running += 1
        self.active[cell] = None

    # -------------------------------------------------------------------------------------- collect
    def _collect(self) -> None:
        import ray

        if not self.inflight:
            if not self._prefetch():
                time.sleep(WAIT_S)
            return
        if len(self.inflight) >= self.pool.n_ready() and self._prefetch():  # every worker busy: get ahead
            return
        refs = list(self.inflight)
        ready, _ = ray.wait(refs, num_returns=1, timeout=WAIT_S)
        if ready:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in ready:
            run = self.inflight.pop(ref)
            try:
                rec: TrialRecord = ray.get(ref)
            except Exception as err:  # the worker is gone (killed, its node lost, Ray's memory monitor)
                self._lost(run, err)
                continue
            run.slot.busy = False
            self._record(run, rec)

    def _lost(self, run: Running, err: BaseException) -> None:
        import ray.exceptions

        self.watch.last = 0.0  # ask now: a worker lost with the whole cluster is not a trial's failure
        self._check_cluster()
        self.pool.drop(run.slot)
        # RayTaskError: our code raised outside the model (a bug), recorded as the trial's error.
        status = Status.ERROR if isinstance(err, ray.exceptions.RayTaskError) else lost_worker_status(err)
        text = f"{type(err).__name__}: {err}"[-4000:]
        rec = self._placeholder(run, status, text)
        requeue = status == Status.INFRA and run.req.attempt <= INFRA_REQUEUES
        self._record(run, rec, final=not requeue)
        if requeue:
            last = text.strip().splitlines()
            self.progress.line(f"  {run.cell.plan.label}: trial {run.req.trial_index} lost to the infrastructure "
                               f"({last[-1][:200] if last else '?'}); running it again")
            cell, req = run.cell, run.req
            cell.requeue.append(cell.request(req.suggestion, req.config, attempt=req.attempt + 1))

    def _placeholder(self, run: Running, status: Status, error: str) -> TrialRecord:
        req = run.req
        started = utcnow()
        seconds = time.monotonic() - run.started
        from datetime import timedelta

        return TrialRecord(cell_id=req.cell_id, trial_id=req.trial_id, trial_index=req.trial_index,
                           suggestion=req.suggestion, attempt=req.attempt, config=dict(req.config), status=status,
                           error=error, seconds=seconds, started_at=started - timedelta(seconds=seconds),
                           finished_at=started, node=run.slot.where.get("node"), worker=run.slot.where.get("worker"))

    def _record(self, run: Running, rec: TrialRecord, final: bool = True) -> None:
        cell = run.cell
        cell.running -= 1
        rec.run_id = self.run_row.run_id
        rec.cell_attempt = cell.plan.base.attempts
        cell.trials.append(rec)
        cell.spent += rec.seconds or 0.0
        if rec.seconds is not None and rec.status == Status.OK:
            key = work_key(cell.plan)
            self.longest[key] = max(self.longest.get(key, 0.0), float(rec.seconds))
            b = cell.plan.base
            self.finished.append({"model": b.model, "dataset": b.dataset, "sample_size": str(b.sample_size),
                                  "n_train": b.n_train, "seconds": float(rec.seconds), "spec_hash": b.spec_hash,
                                  "n_features": cell.plan.n_features})
        self.to_write.append(rec)
        if final:
            cell.outstanding.discard(run.req.suggestion)
            cell.final.add(run.req.suggestion)
            self.counts.trials_done += 1
            if cell.search is not None:
                cell.search.complete(run.req.suggestion, rec)

    def _check_timeouts(self) -> None:
        from pipeline.engine.faults import TrialTimeout

        now = time.monotonic()
        for ref, run in list(self.inflight.items()):
            limit = hard_limit_s(run.req.trial_timeout_s, run.req.clock)
            if now - run.started <= limit:
                continue
            del self.inflight[ref]
            self.pool.drop(run.slot)  # kills the actor and the runaway fit in it; the pool replaces it
            msg = (f"{TrialTimeout.__name__}: still running {now - run.started:.0f} s after it started; "
                   f"trial_timeout_s is {run.req.trial_timeout_s:g} ({run.req.clock} clock) and the model did not stop at it")
            self._record(run, self._placeholder(run, Status.TIMEOUT, msg))

    # ---------------------------------------------------------------------------------------- finish
    def _finish_cells(self) -> None:
        now = time.monotonic()
        for cell in self.resumed_done:
            self._start(cell)  # a resumed search whose trials had all been committed: its result only
        self.resumed_done = []
        for cell in [c for c in self.active if c.done(now)]:
            del self.active[cell], self.cells[cell]
            res, attention = cell.result()
            self.to_commit.append((res, attention))
            self.to_commit.extend((v, None) for v in cell.variants(res))
            self.counts.cells_running -= 1
            key = cell.plan.data_key
            self.users[key] -= 1
            if not self.users[key]:
                self.refs.pop(key, None)
                self.meta.pop(key, None)
            if self.board is not None and cell.spec.search == "asha":
                self.board.forget.remote(cell.plan.base.cell_id)

    def _flush(self, force: bool = False) -> None:
        """Hand what finished to the writer thread (one commit at a time; what finishes meanwhile waits
        for the next). ``force``: commit everything now and wait for it (the end of a run, an interrupt)."""
        self._committed(wait=force)
        if self.writing is not None or not (self.to_write or self.to_commit):
            return
        if not force and time.monotonic() - self.last_flush < FLUSH_EVERY_S:
            return
        trials, cells = self.to_write, self.to_commit
        base = [res for res, _ in cells if res.variant is None]  # a compressed variant is not a cell of its own
        n_ok = sum(res.status == Status.OK for res in base)
        run_row = replace(self.run_row, n_done=self.n_done + n_ok, n_failed=self.n_failed + len(base) - n_ok)
        self.to_write, self.to_commit = [], []
        self.writing = (self.writer.submit(self.store.commit, trials, cells, run_row), cells, run_row, trials)
        if force:
            self._committed(wait=True)

    def _committed(self, wait: bool = False) -> None:
        """Once a commit is done: count its cells and print their lines (a commit that failed raises)."""
        if self.writing is None:
            return
        future, cells, run_row, trials = self.writing
        if not wait and not future.done():
            return
        future.result()
        for rec in trials:  # stored now: the driver need not hold the arrays any longer
            rec.predictions = None
        self.writing = None
        self.last_flush = time.monotonic()
        self.run_row.n_done, self.run_row.n_failed = run_row.n_done, run_row.n_failed
        self.n_done, self.n_failed = run_row.n_done, run_row.n_failed
        self.counts.cells_done, self.counts.cells_failed = self.n_done, self.n_failed
        for res, _ in cells:
            self.on_cell(res)

    def _status(self) -> None:
        self.counts.slots_busy = self.pool.n_busy()
        self.counts.slots = len(self.pool.slots)
        if self.progress.due():
            self.reprice()
            self.counts.left_s = self.seconds_left(time.monotonic())
        self.progress.status(self.counts)
