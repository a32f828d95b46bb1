"""A cell as the scheduler runs it: the runner's plan of it (keys, model entry, where its data is, its
committed trials) and its search in progress (trials out, trials ended, the selected one, its result
and its compressed variants)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pipeline.data.preprocess import FoldData
from pipeline.engine.pool import Shape
from pipeline.engine.records import TrialRequest
from pipeline.engine.searchers import CellSearch, concurrency_cap
from pipeline.engine.worker import utcnow
from pipeline.evaluation import select
from pipeline.learners.resolve import ResolvedModel
from pipeline.records import CARRIED, MODEL_FAILURES, CellResult, Status, TrialRecord, VariantRecord
from pipeline.spec import ModelSpec

INFRA_REQUEUES = 1  # a trial lost with its worker runs once more
# What a compressed variant's row takes from its record; the rest (precision, epochs) is the trained model's.
VARIANT_CARRIED = tuple(k for k in CARRIED if k in {f.name for f in dataclasses.fields(VariantRecord)})


@dataclass
class CellPlan:
    """One cell to run, as the runner hands it over: keys, the model entry, where its data is."""

    base: CellResult  # the result's keys, filled in
    model: ResolvedModel  # the suite's model entry, resolved once per run
    seed: int
    data_key: str
    n_features: int
    label: str  # how progress lines name the cell
    prior: list[TrialRecord] = field(default_factory=list)  # committed trials of this attempt (resume)
    predictions: bool = True  # keep each trial's validation and test predictions (`--no-predictions`: not)
    # A trial's expected wall time: the longest of this entry's finished trials on the dataset at this size in
    # the results file (an earlier fold or repeat, an earlier run), None where none finished yet.
    expected_s: float | None = None
    expected_measured: bool = False  # expected_s is a finished trial's of this very work (else a price, or none)

    @property
    def spec(self) -> ModelSpec:
        return self.model.spec

    @property
    def shape(self) -> Shape:
        r = self.spec.resources
        train = self.model.capabilities.distributed and (r.backend == "train" or (r.backend == "auto" and r.workers > 1))
        return Shape(r.cpus, r.gpus, r.workers if train else 0)

    @property
    def cost(self) -> float:
        n = self.base.n_train or 1
        return n * (self.n_features + 1) * self.spec.trials * self.model.capabilities.cost


def search_seconds(trials: list[TrialRecord]) -> float | None:
    """The trials' own time, summed: each trial's ``seconds`` (its wall time inside its worker; for a
    trial lost with its worker, from its start to when the driver gave it up). Not the span from the
    first trial's start to the last one's end: that counts the time the cell's trials waited in the
    queue and, for a cell resumed from an interrupted run, the time no run was going at all (a cell
    read 33.4 s for 0.6 s of trials). It is what the cell's time budget counts too."""
    own = []
    for t in trials:
        if t.seconds is not None:
            own.append(t.seconds)
        elif t.started_at is not None and t.finished_at is not None:
            own.append((t.finished_at - t.started_at).total_seconds())
    return float(sum(own)) if own else None


class CellState:
    """A cell's search in progress."""

    def __init__(self, plan: CellPlan) -> None:
        self.plan = plan
        self.spec = plan.spec
        self.cap = concurrency_cap(plan.spec)
        final = self._final(plan.prior)
        self.trials: list[TrialRecord] = list(plan.prior)
        self.final: set[int] = {r.suggestion for r in final}
        self.final_records = final
        self.outstanding: set[int] = set()
        self.requeue: list[TrialRequest] = []
        self.running = 0
        self.next_index = max((r.trial_index for r in plan.prior), default=-1) + 1
        self.spent = sum(r.seconds or 0.0 for r in plan.prior)
        self.search: CellSearch | None = None
        self.selected: TrialRecord | None = None  # the trial validation selected, once the search ended
        self.first_start: float | None = None
        self.data: FoldData | None = None

    @staticmethod
    def _final(prior: list[TrialRecord]) -> list[TrialRecord]:
        """One record per suggestion that has ended for good (a lost first attempt has not)."""
        out: dict[int, TrialRecord] = {}
        for r in sorted(prior, key=lambda r: r.trial_index):
            if r.status != Status.INFRA or r.attempt > INFRA_REQUEUES:
                out[r.suggestion] = r
        return list(out.values())

    @property
    def started(self) -> bool:
        return self.search is not None

    def budget_left(self, now: float) -> bool:
        return self.spent < self.spec.time_budget_s

    def can_dispatch(self, now: float) -> bool:
        if self.running >= self.cap:
            return False
        if self.requeue:
            return True
        return len(self.final) + len(self.outstanding) < self.spec.trials and self.budget_left(now)

    def done(self, now: float) -> bool:
        if self.running or self.requeue or self.outstanding:
            return False
        return len(self.final) >= self.spec.trials or not self.budget_left(now)

    def next_request(self, run_id: str) -> TrialRequest:
        if self.requeue:
            return self.requeue.pop(0)
        assert self.search is not None
        suggestion, config = self.search.suggest()
        self.outstanding.add(suggestion)
        return self.request(suggestion, config, attempt=1)

    def request(self, suggestion: int, config: dict[str, Any], attempt: int) -> TrialRequest:
        p, r = self.plan, self.spec.resources
        index = self.next_index
        self.next_index += 1
        return TrialRequest(
            cell_id=p.base.cell_id, trial_id=f"{p.base.cell_id}-{p.base.attempts}-{index}", trial_index=index,
            suggestion=suggestion, attempt=attempt, model=p.model, config=config, seed=p.seed,
            data_key=p.data_key, cpus=r.cpus, gpus=r.gpus, workers=r.workers, backend=r.backend,
            trial_timeout_s=self.spec.trial_timeout_s, clock=self.spec.clock, asha=self.spec.search == "asha",
            predictions=p.predictions, attention=True)  # every Learner is asked for its feature-attention map: one without answers None

    def result(self) -> tuple[CellResult, dict[str, Any] | None]:
        """The selected trial's (best validation score; ties: lower validation loss) test metrics."""
        res = self.plan.base
        res.n_trials = len(self.trials)
        res.n_trials_failed = sum(not t.status.scored for t in self.trials)
        if self.trials:
            res.search_seconds = search_seconds(self.trials)
        scored = [t for t in self.trials if t.status.scored and t.val_score is not None]
        res.finished_at = utcnow()
        if not scored:
            statuses = [t.status for t in self.trials] or [Status.ERROR]
            res.status = (Status.INFRA if all(s == Status.INFRA for s in statuses)
                          else next((s for s in statuses if s in MODEL_FAILURES), statuses[0]))
            res.error = next((t.error for t in self.trials if t.error), "no trial finished")
            return res, None
        best = select(scored)
        assert best is not None
        res.status = Status.OK
        res.best_config, res.best_trial = best.config, best.trial_id
        for key in CARRIED:
            setattr(res, key, getattr(best, key))
        self.selected = best
        return res, best.attention

    def variants(self, res: CellResult) -> list[CellResult]:
        """The suite's ``compress`` option: one result per method, from the selected trial's variant record
        (the same configuration, compressed), stored as the model ``<key>+<method>``. Where the cell or
        the variant failed, the variant's row says so."""
        out = []
        best = self.selected
        kept = {v.method: v for v in (best.variants or [])} if best is not None and res.status == Status.OK else {}
        for method in self.spec.compress:
            v = dataclasses.replace(res, cell_id=f"{res.cell_id}+{method}", model=f"{res.model}+{method}",
                                    variant=method)
            got = kept.get(method)
            if got is None or got.error is not None:
                v.status = res.status if res.status != Status.OK else Status.ERROR
                v.error = (got.error if got is not None else None) or res.error or f"no {method} variant was recorded"
                for key in CARRIED:
                    setattr(v, key, None)
            else:
                for key in VARIANT_CARRIED:
                    setattr(v, key, getattr(got, key))
                if got.retrained:  # a model of its own, trained anew: the trained model's epochs are not its
                    v.epochs = v.best_epoch = None
                    v.stop_reason = None
            out.append(v)
        return out


def in_order(plans: list[CellPlan], cheapest_first: bool = False) -> list[CellPlan]:
    """The order cells are taken in, one fold's cells together: folds by their cells' total expected cost,
    then cells by cost. Longest first by default, so that no long cell is left to the end of a run while
    the other slots idle; cheapest first (``run --cheapest-first``) finishes the most cells, and the most
    datasets, in the first hours of a run that goes in chunks."""
    by_key: dict[str, float] = defaultdict(float)
    for p in plans:
        by_key[p.data_key] += p.cost
    sign = 1 if cheapest_first else -1
    return sorted(plans, key=lambda p: (sign * by_key[p.data_key], p.data_key, sign * p.cost))


def fits(expected_s: float | None, left_s: float) -> bool:
    """Whether a trial may start with ``left_s`` seconds to the time limit: while time is left, and only if it
    is expected to end in time (:meth:`pipeline.engine.scheduler.Scheduler.expected`; None: while time is left)."""
    return left_s > 0 and (expected_s is None or expected_s <= left_s)


def work_key(plan: CellPlan) -> tuple[str, str, str]:
    """What a trial's expected time is keyed by: the model entry, the dataset and the size."""
    return plan.base.model, plan.base.dataset, str(plan.base.sample_size)
