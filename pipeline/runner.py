"""The benchmark job: ingest, expand cells, resume, hand every pending cell to the engine.

A cell is dataset × repeat × fold × sample size × subset seed × model. It is done once its result
row commits. Re-running a suite skips cells already done (``--force`` re-runs them); cells that
failed for the model's own reasons are not retried unless ``--retry-failed``; cells lost to
infrastructure (a dead worker) are retried; a cell interrupted mid-search resumes from its
committed trials. The engine (``pipeline.engine``) runs the trials of all cells at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from pipeline.address import check_address
from pipeline.data import ingest as ingest_mod
from pipeline.data import run_lock, sources
from pipeline.data.preprocess import FoldData, build_fold
from pipeline.data.references import Reference
from pipeline.data.store import Store
from pipeline.data.views import install as install_views
from pipeline.errors import AttnbenchError, ClusterLost, SpecError
from pipeline.interrupts import keep_sigterm_handler, sigterm_as_interrupt
from pipeline.plan import Cell, expand, legacy_cell_id, model_kinds, plan_notes, plan_rows
from pipeline.provenance import git_revision, hardware, versions
from pipeline.records import MODEL_FAILURES, CellResult, RunRecord, RunStatus, Status
from pipeline.spec import SuiteSpec
from pipeline.suite_datasets import dataset_label

log = logging.getLogger(__name__)


@dataclass
class Summary:
    run_id: str
    n_cells: int
    n_done: int = 0  # cells this run finished ok
    n_failed: int = 0  # cells this run recorded as failed
    n_skipped: int = 0
    status: RunStatus = RunStatus.RUNNING
    # The suite as it stands after the run (earlier runs' cells included): failed and missing cells.
    suite_failed: int = 0
    suite_missing: int = 0
    # A run its time limit stopped: whether it started any trial, and (where it ended before the limit because
    # no trial left would end in time) the shortest of those trials' expected seconds.
    started_any: bool = False
    shortest_left: float | None = None


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _cells(store: Store, suite: SuiteSpec, progress: Callable[[str], None]
           ) -> tuple[list[ingest_mod.Prepared], list[tuple[Cell, ingest_mod.Prepared]], list[dict[str, Any]]]:
    """Each dataset loaded and checked (nothing written yet), the suite's cells, and those left out as
    not applicable; a suite with no cell at all is refused."""
    specs = sources.expand(suite.datasets)
    if problem := suite.names_problem([dataset_label(s) for s in specs]):  # an OpenML suite's, now known
        raise SpecError(f"{suite.source_path or suite.name}: invalid suite: {problem}")
    prepared = []
    for spec in specs:
        progress(f"  dataset {dataset_label(spec)}: loading")
        prepared.append(ingest_mod.prepare(store, spec, suite.protocol, suite.seed))
    for m in suite.models:  # a local edit of attnbench's code: those cells are not the pinned code's
        if (code := suite.our_code[m.key]).modified:
            progress(f"  notice: {m.key} runs as modified: {code.words()} "
                     f"differ{'s' if len(code.modified) == 1 else ''} from the code its version pins; its cells "
                     "get ids of their own")
    outside: list[dict[str, Any]] = []
    cells = list(expand(suite, prepared, notice=progress, not_applicable=outside))
    if not cells:
        raise AttnbenchError(f"{suite.source_path or suite.name}: the suite expands to no cell at all (every "
                             "sample size is above the datasets' training rows, or max_folds/max_repeats leave "
                             "no fold); add 'all' to protocol.sample_sizes or lower the sizes")
    return prepared, cells, outside


def run_record(suite: SuiteSpec, run_id: str, totals: dict[str, float], argv: list[str] | None, summary: Summary,
               notes: str) -> RunRecord:
    """The run's row of the ``runs`` table as it starts (the scheduler updates its counts)."""
    return RunRecord(run_id=run_id, suite=suite.name, suite_yaml=yaml.safe_dump(suite.model_dump(mode="json")),
                     started_at=now(), status=RunStatus.RUNNING, git_rev=git_revision(), versions=versions(suite),
                     hardware=hardware(totals), argv=" ".join(argv or sys.argv), n_cells=summary.n_cells,
                     n_done=0, n_failed=0, n_skipped=summary.n_skipped, model_code=suite.model_code,
                     plan_notes=notes)


def _adoptable(suite: SuiteSpec, cells: list[tuple[Cell, ingest_mod.Prepared]],
               done: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Cells this file holds under their pre-schema-6 id and not under their id of today: legacy id →
    (new id, split key)."""
    if done.empty:
        return {}
    out = {}
    for cell, _ds in cells:
        if cell.cell_id in done.index:
            continue
        old = legacy_cell_id(suite, cell.dataset, cell.split_key, cell.repeat, cell.fold, cell.sample_size,
                             cell.seed, cell.model)
        if old in done.index:
            out[old] = (cell.cell_id, cell.split_key)
    return out


class FoldLoader:
    """Builds a cell's fold arrays on the driver (preprocessing fit on its training rows); each
    dataset's splits are read from DuckDB once."""

    def __init__(self, store: Store, suite: SuiteSpec) -> None:
        self.store, self.suite = store, suite
        self.where: dict[str, tuple[ingest_mod.StoredDataset, str, Cell]] = {}
        self.rows: dict[str, tuple[pd.DataFrame, pd.DataFrame]] = {}

    def key(self, cell: Cell, ds: ingest_mod.StoredDataset, split_key: str) -> str:
        k = f"{cell.dataset}/r{cell.repeat}f{cell.fold}/n{cell.sample_size}/s{cell.seed}"
        self.where.setdefault(k, (ds, split_key, cell))
        return k

    def __call__(self, key: str) -> FoldData:
        ds, split_key, cell = self.where[key]
        if ds.name not in self.rows:
            self.rows = {ds.name: self.store.fold_rows(ds.name, split_key)}  # one dataset at a time
        parts, orders = self.rows[ds.name]
        here = (parts.repeat == cell.repeat) & (parts.fold == cell.fold)
        order = orders[(orders.repeat == cell.repeat) & (orders.fold == cell.fold) & (orders.seed == cell.seed)]
        train_ids = order.row_id.to_numpy()[: cell.n_train]
        valid_ids = np.sort(parts.loc[here & (parts.role == "valid"), "row_id"].to_numpy())
        test_ids = np.sort(parts.loc[here & (parts.role == "test"), "row_id"].to_numpy())
        pre = self.suite.protocol.preprocessing
        return build_fold(ds.features, ds.y, ds.task_type, ds.classes, np.sort(train_ids), valid_ids, test_ids,
                          numeric=pre.numeric, max_categories=pre.max_categories)


# ----------------------------------------------------------------------------------------- ray
def start_ray(address: str | None, num_cpus: int | None, num_gpus: int | None) -> dict[str, float]:
    import ray

    if not ray.is_initialized():
        if address:  # a wrong address is an error in seconds, not a traceback or a wait of minutes
            check_address(address)
        os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # our own progress lines replace Tune's tables
        # Every trial is recorded in DuckDB; Tune's own CSV/JSON/TensorBoard files would be noise.
        os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
        kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False,
                                  "logging_level": logging.WARNING}
        if address:
            try:
                with keep_sigterm_handler():
                    ray.init(address=address, **{k: v for k, v in kwargs.items() if k != "include_dashboard"})
            except (ConnectionError, TimeoutError, ValueError) as err:
                raise AttnbenchError(f"--address {address}: could not join the Ray cluster "
                                     f"({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None
        else:
            # "local" starts our own Ray even when another cluster runs on this machine; without it
            # ray.init() would join that one.
            # No idle workers started ahead: every trial worker is an actor with a runtime_env of its own
            # (pipeline.engine.pool), which a prestarted worker cannot serve, so each sat idle for the run
            # (about 1.4 CPU-seconds and a Python process each, one per CPU).
            for var in ("RAY_enable_worker_prestart", "RAY_prestart_worker_first_driver"):
                os.environ.setdefault(var, "0")
            try:
                with keep_sigterm_handler():
                    ray.init(address="local", num_cpus=num_cpus, num_gpus=num_gpus, **kwargs)
            except Exception as err:  # Ray raises a plain Exception when its node does not come up
                with contextlib.suppress(Exception):
                    ray.shutdown()  # what did start of it
                said = str(err).strip().splitlines()[-1] if str(err).strip() else ""
                raise AttnbenchError(f"the local Ray did not start ({type(err).__name__}{': ' + said if said else ''}); "
                                     "nothing was written: run the same command again once that is fixed") from None
    for name in ("ray.tune", "ray.train", "ray.air"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # With the file loggers off, Tune warns that it cannot re-read trial files; results come from memory.
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    return dict(ray.cluster_resources())


def plan_cells(suite: SuiteSpec, store: Store, loader: FoldLoader,
               pending: list[tuple[Cell, ingest_mod.StoredDataset, str]], attempts: dict[str, int],
               run_id: str, predictions: bool = True) -> list[Any]:
    """The engine's view of each pending cell: keys, model entry, data key, committed trials, and
    whether its trials' predictions are kept."""
    from pipeline.engine.cells import CellPlan
    from pipeline.learners.resolve import resolve

    models: dict[tuple[str, int | None], Any] = {}  # once per run and size rule; each cell carries its entry
    kinds = model_kinds(suite)
    prior = store.committed_trials({cell.cell_id: attempts.get(cell.cell_id, 0) + 1 for cell, _, _ in pending})
    plans = []
    for cell, ds, split_key in pending:
        entry = suite.model(cell.model)
        rule = entry.size_rule(cell.n_train)
        if (cell.model, rule and rule[0]) not in models:
            models[cell.model, rule and rule[0]] = resolve(entry.at(cell.n_train))
        model = models[cell.model, rule and rule[0]]
        base = CellResult(cell_id=cell.cell_id, run_id=run_id, suite=suite.name, dataset=cell.dataset,
                          task_type=ds.task_type, repeat=cell.repeat, fold=cell.fold, sample_size=cell.sample_size,
                          seed=cell.seed, model=cell.model, model_name=model.name, model_kind=kinds[cell.model],
                          spec_hash=suite.cell_hash(cell.model, cell.n_train), split_key=cell.split_key,
                          attempts=attempts.get(cell.cell_id, 0) + 1, n_train=cell.n_train)
        plans.append(CellPlan(base=base, model=model, seed=suite.seed * 1000 + cell.seed, data_key=loader.key(cell, ds, split_key),
                              n_features=int(ds.features.shape[1]), label=_describe(cell),
                              prior=prior.get(cell.cell_id, []), predictions=predictions))
    return plans


def expect_durations(store: Store, plans: list[Any]) -> None:
    """Each plan's ``expected_s``, a trial's expected wall time, so that a run with a time limit starts no trial it
    expects to outlast the limit and starts every one it expects to end in time: the longest finished trial of its
    model entry (this version of it: its spec hash) on its dataset at its size in this results file (any fold,
    repeat or run), else its price from the entry's other trials there (:mod:`pipeline.pricing`: other datasets
    at the size, scaled by rows and features), else from the shipped references' trials of the entry, else none
    (the scheduler prices it from this run's trials as they finish)."""
    from pipeline import pricing
    from pipeline.data import references

    expected = store.longest_trials()
    unknown = []
    for p in plans:
        p.expected_s = expected.get((p.base.model, p.base.spec_hash, p.base.dataset, str(p.base.sample_size)))
        p.expected_measured = p.expected_s is not None
        if p.expected_s is None:
            unknown.append(p)
    for source in (store.trial_prices, lambda: _shipped_trial_prices(references)):
        if not unknown:
            return
        seen = source()
        if len(seen):
            priced = pricing.price_cells(pricing.pending_of(unknown), seen)
            for p, s in zip(unknown, priced.seconds, strict=True):
                p.expected_s = None if pd.isna(s) else float(s)
        unknown = [p for p in unknown if p.expected_s is None]


def _shipped_trial_prices(references: Any) -> pd.DataFrame:
    """Every shipped reference's trials, as ``Store.trial_prices`` gives a file's."""
    frames = []
    for name in references.shipped():
        ref = references.load(name)
        try:
            frames.append(ref.trial_prices())
        finally:
            ref.close()
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _set_aside_other_code(against: Reference, progress: Callable[[str], None]) -> None:
    """A reference's models that ran other code of attnbench than this checkout's are not compared: their
    cells are neither copied beside the suite's nor count as done (one line says which, and what differs)."""
    drift = against.code_drift()
    if not drift:
        return
    against.set_aside = set(drift)
    model, (theirs, here) = next(iter(sorted(drift.items())))
    files = sorted(set(theirs) | set(here))
    differs = ", ".join(f"pipeline/{f} {theirs.get(f, '1')} there, {here.get(f, '1')} here" for f in files[:3])
    rev = against.git_rev()
    progress(f"  notice: the reference {against.name!r} ran {', '.join(sorted(drift))} with other attnbench code than "
             f"this checkout's ({model}: {differs}{', …' if len(files) > 3 else ''}): their cells are not compared; "
             f"re-run them in your suite, or use attnbench {rev[:12] or 'as the reference ran it'} to compare with them")


def _done_cells(store: Store, suite: SuiteSpec, cells: list[tuple[Cell, Any]], splits: set[tuple[Any, ...]],
                against: Reference | None) -> tuple[pd.DataFrame, dict[str, tuple[str, str]]]:
    """The cells done already, by cell id: the file's, then a reference's on these splits; and the old ids
    of a file from before schema 6 that are these cells (its done cells keep their results under the new ids)."""
    done = store.done_cells().set_index("cell_id")
    if against is not None:
        theirs = against.done_cells(splits).set_index("cell_id")
        done = pd.concat([done, theirs[~theirs.index.isin(done.index)]])
    adopt = _adoptable(suite, cells, done)
    if adopt:
        moved = done.loc[list(adopt)].rename(index=lambda old: adopt[old][0])
        done = pd.concat([done.drop(index=list(adopt)), moved])
    return done, adopt


def rerun_line(store: Store, suite: str, pending: list[tuple[Cell, Any]]) -> str | None:
    """What opening an older attnbench's file changed (``Store.upgraded``), and which pending cells ran before
    under another id, per entry, because their entry or attnbench's code for it changed since; or that none
    did. None where the file was not upgraded and no cell runs again."""
    keys = store.result_keys(suite)
    key = ["dataset", "repeat", "fold", "sample_size", "seed", "model"]
    plan = pd.DataFrame([{"dataset": c.dataset, "repeat": c.repeat, "fold": c.fold, "sample_size": c.sample_size,
                          "seed": c.seed, "model": c.model, "new_id": c.cell_id} for c, _ in pending],
                        columns=[*key, "new_id"])
    again = plan.merge(keys.astype({"sample_size": str}), on=key)
    again = again[again.cell_id != again.new_id].drop_duplicates("new_id")
    said = [f"  {store.path.name}: {store.upgraded}"] if store.upgraded else []
    if len(again):
        per = again.model.value_counts()
        said.append(f"  {len(again)} of them ran before under another id and run again, the earlier results kept as "
                    f"history (the superseded view): their entry or attnbench's code for it changed since "
                    f"({', '.join(f'{m} {n}' for m, n in per.items())})")
    elif store.upgraded:
        said.append("  no done cell runs again: no recorded code version of their entries changed")
    return "\n".join(said) or None


def _pending(cells: list[tuple[Cell, Any]], done: pd.DataFrame, *, force: bool, retry_failed: bool
             ) -> tuple[list[tuple[Cell, Any]], dict[str, int]]:
    """The cells to run (not done, or failed and retried, or all with ``force``) and the attempts each
    has had so far."""
    pending = []
    attempts: dict[str, int] = {}
    for cell, ds in cells:
        if cell.cell_id in done.index:
            status = done.loc[cell.cell_id, "status"]
            if not force and (status == Status.OK or (status in MODEL_FAILURES and not retry_failed)):
                continue
            attempts[cell.cell_id] = int(done.loc[cell.cell_id, "attempts"] or 0)
        pending.append((cell, ds))
    return pending, attempts


def _close_dead_runs(store: Store, run_id: str, progress: Callable[[str], None]) -> None:
    """Runs the file still calls running while this one holds its lock ended without recording their end:
    marked killed, finished at their last commit (:meth:`Store.close_dead_runs`), in one progress line."""
    closed = store.close_dead_runs(run_id) if store.exists else pd.DataFrame()
    if len(closed):
        runs = ", ".join(f"{r.run_id} (finished {r.finished_at:%Y-%m-%d %H:%M:%S})" for r in closed.itertuples())
        progress(f"  marked killed: {runs}: still 'running' in the file, yet this run holds its run lock, so it "
                 "ended without recording its end (finished: its last commit, or its start if none)")


def _fit_to_cluster(suite: SuiteSpec, totals: dict[str, float], progress: Callable[[str], None]) -> SuiteSpec:
    """The suite as the cluster can run it: with a notice, GPU shares of models that cannot use them are
    left unused, and with no GPU in the cluster every model runs on the CPU."""
    for m in suite.models:
        if m.resources.gpus and totals.get("GPU") and not m.model_info().capabilities.gpu:
            progress(f"  notice: {m.key} trains on the CPU (its Learner has no GPU mode here); its GPU share "
                     "is reserved but unused")
    if totals.get("GPU") or not any(m.resources.gpus for m in suite.models):
        return suite
    progress("  notice: the suite asks for GPUs but the cluster has none; those models run on CPU")
    return suite.model_copy(update={"models": [
        m.model_copy(update={"resources": m.resources.model_copy(update={"gpus": 0})}) for m in suite.models]})


def run(suite: SuiteSpec, db: str | Path, *, force: bool = False, retry_failed: bool = False,
        address: str | None = None, num_cpus: int | None = None, num_gpus: int | None = None,
        progress: Callable[[str], None] = print, argv: list[str] | None = None, predictions: bool = True,
        against: Reference | None = None, on_cluster_lost: Callable[[ClusterLost], None] | None = None,
        stop_at: float | None = None, cheapest_first: bool = False) -> Summary:
    """Run every cell of the suite that is not done yet. Everything that can refuse the run (the results
    file, each dataset, the cells, the Ray address, a reference's protocol and data) is checked before the
    first write: a refused run leaves the file system as it was. ``against``: reference results
    (:mod:`pipeline.data.references`) whose protocol the suite takes and whose models' results on the
    suite's splits are written beside its own (a cell the reference holds is done). ``on_cluster_lost``:
    what ends the command when the Ray cluster goes away while the engine waits inside a call to Ray
    (otherwise the run raises :class:`ClusterLost`). ``stop_at``: the ``time.monotonic()`` at which the run
    stops, its completed cells saved, no trial started that its entry's earlier trials say would outlast it
    (``Summary.status`` is then ``stopped``; the same command resumes). ``cheapest_first``: take the cells
    in order of expected cost, cheapest first, instead of longest first."""
    from pipeline.engine.progress import Progress
    from pipeline.engine.scheduler import Scheduler

    store = Store(db)
    store.check_writable()
    if against is not None:
        suite = against.adopt_protocol(suite)
    run_id = f"{now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    progress(f"attnbench: suite {suite.name!r} → {Path(db).resolve()}")
    prepared, cells, outside = _cells(store, suite, progress)
    splits = {(c.dataset, c.split_key, c.repeat, c.fold, c.sample_size, c.seed) for c, _ in cells}
    if against is not None:
        against.check(prepared, splits)
        _set_aside_other_code(against, progress)
    done, adopt = _done_cells(store, suite, cells, splits, against)
    pending, attempts = _pending(cells, done, force=force, retry_failed=retry_failed)
    summary = Summary(run_id=run_id, n_cells=len(cells), n_skipped=len(cells) - len(pending))
    progress(f"  {len(cells)} cells, {summary.n_skipped} already done, {len(pending)} to run")
    if line := rerun_line(store, suite.name, pending):
        progress(line)
    # One run writes a results file at a time (pipeline.data.run_lock); a second is refused here, before
    # anything is written.
    lock = run_lock.acquire(db, run_id)
    try:
        # An address that cannot work is refused here. With nothing to run, no cluster is needed: the command
        # records its run and (re)writes the report in seconds.
        totals = start_ray(address, num_cpus, num_gpus) if pending else {}
        # Nothing was written before this line; the run's id is said once it is the id of a run the file records.
        progress(f"  run {run_id}")
        _close_dead_runs(store, run_id, progress)
        stored = {p.name: (ingest_mod.commit(store, p), p.split_key) for p in prepared}
        if adopt:
            store.adopt(adopt)
            progress(f"  {len(adopt)} cells done before keep their results under new ids (a cell id no longer hashes "
                     "the suite's name)")
        if against is not None:
            added = against.copy_into(store, splits)
            progress(f"  reference {against.name!r}: {added} of its cells on this suite's splits written beside yours "
                     f"({against.where})")
        if pending:
            suite = _fit_to_cluster(suite, totals, progress)
        run_row = run_record(suite, run_id, totals, argv, summary, plan_notes(suite, outside))
        store.write_plan(suite.name, *plan_rows(suite, run_id, cells), run=run_row)
        new_views = install_views(store)  # `duckdb results.duckdb` sees the views the pages are built from
        if new_views:
            progress(f"  views added to the file: {', '.join(new_views)}")
        loader = FoldLoader(store, suite)
        to_run = [(cell, *stored[ds.name]) for cell, ds in pending]
        plans = plan_cells(suite, store, loader, to_run, attempts, run_id, predictions)
        if stop_at is not None:
            expect_durations(store, plans)
        resumed = sum(bool(p.prior) for p in plans)
        if resumed:
            progress(f"  {resumed} cells resume their search from {sum(len(p.prior) for p in plans)} committed trials")
        lines = Progress(progress)
        try:
            with sigterm_as_interrupt():
                scheduler = None
                if plans:
                    scheduler = Scheduler(plans, load=loader, store=store, run_row=run_row, progress=lines,
                                          on_cell=CellLines(lines, len(pending)), on_cluster_lost=on_cluster_lost,
                                          stop_at=stop_at, cheapest_first=cheapest_first)
                    scheduler.run()
            summary.status = RunStatus.STOPPED if scheduler is not None and scheduler.stopped else RunStatus.FINISHED
            if scheduler is not None:
                summary.started_any, summary.shortest_left = scheduler.started_any, scheduler.shortest_left
        except KeyboardInterrupt:
            summary.status = RunStatus.INTERRUPTED
            raise
        except BaseException as err:
            summary.status = RunStatus.FAILED
            run_row.error = "".join(traceback.format_exception(err))[-4000:]
            raise
        finally:
            summary.n_done, summary.n_failed = run_row.n_done, run_row.n_failed
            run_row.status, run_row.finished_at = summary.status, now()
            store.upsert_run(run_row)
        counts = store.suite_counts(suite.name)
        summary.suite_failed, summary.suite_missing = counts["failed"], counts["missing"]
    finally:
        lock.release()
    return summary


class CellLines:
    """One progress line per finished cell, numbered ``[k/n]``; a compressed variant's line sits under its
    cell's, unnumbered."""

    def __init__(self, lines: Any, n: int) -> None:
        self.lines, self.n, self.finished = lines, n, 0

    def __call__(self, res: CellResult) -> None:
        if res.variant is not None:
            self.lines.line(f"  {' ' * len(f'[{self.finished}/{self.n}]')} {_label(res)}: {_outcome(res)}")
            return
        self.finished += 1
        self.lines.line(f"  [{self.finished}/{self.n}] {_label(res)}: {_outcome(res)}")


def _label(res: CellResult) -> str:
    return f"{res.dataset} r{res.repeat}f{res.fold} n={res.sample_size}" + (
        f" s{res.seed}" if res.seed else "") + f" {res.model}"


def _describe(cell: Cell) -> str:
    return f"{cell.dataset} r{cell.repeat}f{cell.fold} n={cell.sample_size}" + (
        f" s{cell.seed}" if cell.seed else "") + f" {cell.model}"


def _outcome(res: CellResult) -> str:
    if res.status != Status.OK:
        err = (res.error or "").strip().splitlines()
        return f"{res.status.upper()} {err[-1] if err else ''}"
    metric = f"r2 {res.r2:.3f}" if res.task_type == "regression" else f"acc {res.accuracy:.3f}"
    return f"{metric} ({res.n_trials} trials, {res.search_seconds or 0:.1f} s search, {res.fit_seconds or 0:.1f} s fit)"
