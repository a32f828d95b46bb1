"""The stored records: a trial, a cell's result, how each ended. The bottom layer of the package.

These dataclasses are the one definition of each record. The DuckDB store derives its ``trials`` and
``results`` columns from their fields (``sql_columns``), and its ``reference_scores`` metric columns from
:class:`Metrics`, so a metric added here is stored everywhere without a hand-kept column list; the engine
fills them, the report reads them back through SQL.

The states a record holds are enums of their stored words (:class:`State`): how a trial or cell ended
(:class:`Status`), why its training stopped (:class:`StopReason`), how a run ended (:class:`RunStatus`).
Code compares with the members; SQL spells them with :attr:`State.sql` and :func:`sql_list`, never by hand.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class State(str, enum.Enum):
    """A state stored as a word. Each member is the string the tables hold (it compares equal to it), so
    results files and shipped references read and write the same words; SQL takes it as :attr:`sql`."""

    def __str__(self) -> str:
        return self.value

    @property
    def sql(self) -> str:
        """The member as an SQL string literal: ``'ok'``."""
        return "'" + self.value.replace("'", "''") + "'"


def sql_list(members: Iterable[State]) -> str:
    """Members of one enum as an SQL list, in the enum's order (whatever order they come in):
    ``('ok', 'stopped')``, for ``status IN …``."""
    chosen = list(members)
    if not chosen:
        raise ValueError("an SQL list needs at least one member")
    order = list(type(chosen[0]))
    return "(" + ", ".join(m.sql for m in sorted(set(chosen), key=order.index)) + ")"


class Status(State):
    """How a trial or a cell ended."""

    OK = "ok"
    STOPPED = "stopped"  # stopped early by ASHA; its best epoch is scored like any other trial's
    ERROR = "error"  # the model raised
    DIVERGED = "diverged"  # the training loss became NaN or infinite
    OOM = "oom"  # out of memory: an allocator's error, or Ray's memory monitor killed the worker
    TIMEOUT = "timeout"  # still running past the hard limit; its worker was killed
    INFRA = "infra"  # lost to the infrastructure: a dead worker or node
    MISSING = "missing"  # a planned cell with no result: the views' word for it, never stored by a run

    @property
    def scored(self) -> bool:
        return self in SCORED


# A trial whose scores count (a search's, a tuning curve's); a cell is scored only when OK.
SCORED = (Status.OK, Status.STOPPED)
MODEL_FAILURES = (Status.ERROR, Status.DIVERGED, Status.OOM, Status.TIMEOUT)


class StopReason(State):
    """Why a fit stopped (a trial's ``stop_reason``, and its cell's). A user's Learner may report a word of
    its own: a record holds it as a plain string."""

    EARLY_STOPPING = "early_stopping"  # the validation score stopped improving
    MAX_EPOCHS = "max_epochs"  # the iteration budget (epochs, boosting rounds) ran out
    TIME_LIMIT = "time_limit"  # the model's time limit ran out; the best finished iteration is kept
    PRUNED = "pruned"  # ASHA cut the trial at a rung; its best epoch is kept
    COMPLETE = "complete"  # no validation-based stopping (a forest, an in-context model): it did all it was asked
    COMPRESSED = "compressed"  # a compressed variant: the trained model compressed, nothing trained


# A fit that stopped for lack of budget, not because it stopped improving.
OUT_OF_BUDGET = (StopReason.MAX_EPOCHS, StopReason.TIME_LIMIT)


class RunStatus(State):
    """How a run (a row of ``runs``) ended, or that it has not."""

    RUNNING = "running"  # started, no end recorded yet
    FINISHED = "finished"
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM: its completed cells are saved
    STOPPED = "stopped"  # its time limit (`run --time-limit`) came: its completed cells are saved
    FAILED = "failed"  # an error ended it
    KILLED = "killed"  # ended without recording its end (SIGKILL, a lost machine); the next run marks it


class Verdict(State):
    """A pair of models on a (dataset, size), as every page, sentence, count and the ``standings`` view word
    it. Each member is that word: ``str(Verdict.NOT_CONVERGED)`` is ``not converged``. The rule that gives
    one is :func:`pipeline.report.stats.verdicts.decide` (the ``standings`` view computes it alike)."""

    AHEAD = "ahead"  # the corrected interval of a − b lies above zero
    BEHIND = "behind"  # ... below zero
    EQUIVALENT = "equivalent"  # the (1 − 2α) interval lies inside ±margin (TOST)
    UNDETERMINED = "undetermined"  # neither: the splits cannot tell, or there is one split
    NOT_CONVERGED = "not converged"  # behind or ahead, but the one behind was still improving at its budget
    NOT_COMPARED = "not compared"  # the two finished no split in common

    @property
    def compared(self) -> bool:
        """Whether its difference counts in a mean over datasets (:data:`COMPARED_VERDICTS`)."""
        return self in COMPARED_VERDICTS

    def reversed(self) -> Verdict:
        """The verdict of b against a."""
        return {Verdict.AHEAD: Verdict.BEHIND, Verdict.BEHIND: Verdict.AHEAD}.get(self, self)


class Power(State):
    """Why an undetermined pair stays so (issue 82 item 2), as the ``standings`` view words it: whether the design
    could decide it at the repeat cap, on the spread its splits show. The rule:
    :func:`pipeline.report.stats.verdicts.power` (the view computes it alike)."""

    UNDERPOWERED = "underpowered"  # even a true difference of zero could not be shown equivalent at the cap
    INCONCLUSIVE = "inconclusive"  # more repeats, to the cap, could decide it


# The verdicts whose difference enters a mean over datasets: every pair with a difference that is not left
# out as not converged (one-split ones included).
COMPARED_VERDICTS = (Verdict.AHEAD, Verdict.BEHIND, Verdict.EQUIVALENT, Verdict.UNDETERMINED)
# The rule's constants, here so that the views (below the report) compute it with the same ones.
VERDICT_MARGIN = 0.005  # accuracy or R²: a difference whose interval lies within ± this is equivalent
VERDICT_ALPHA = 0.05  # the two-sided interval is 1 − α (95%); the equivalence interval 1 − 2α (90%)


@dataclass
class Metrics:
    """The test metrics, declared once: the records below and the scores a fit returns
    (pipeline.evaluation.Scores) take these fields as a base, and the store's ``reference_scores`` its
    metric columns (pipeline.data.schema); the worker, the cell's carried fields, the constant floor and
    the reference tables iterate over ``TEST_METRICS`` instead of naming them again.

    A record lists its fields in table order: those of its head (a base named after it), these, then its
    own (dataclasses order the fields base by base, the last base first)."""

    accuracy: float | None = None
    balanced_accuracy: float | None = None
    roc_auc: float | None = None
    log_loss: float | None = None
    rmse: float | None = None
    r2: float | None = None


TEST_METRICS = tuple(f.name for f in dataclasses.fields(Metrics))


@dataclass
class _VariantHead:
    method: str  # prune, quantize or pca
    retrained: bool = False
    error: str | None = None
    val_score: float | None = None
    val_loss: float | None = None


@dataclass
class VariantRecord(Metrics, _VariantHead):
    """A compressed variant of a trial's model (the suite's ``compress`` option), as its trial keeps it
    (``trials.variants``) and its cell's ``<model>+<method>`` row in ``results`` takes it: the variant's
    scores and cost under the cell's own field names, or the error that stopped it (``error``, the
    other figures empty). ``retrained``: a model trained anew on other inputs (PCA's, on the principal
    components), whose cost is its own training and whose epochs are not the trained model's; otherwise
    the trained model compressed, whose training comes first in its cost (``fit_seconds``, the peaks)."""

    fit_seconds: float | None = None  # training (derived variants) and compressing
    compress_seconds: float | None = None  # compressing alone (PCA's: its training anew)
    predict_seconds: float | None = None
    predict_rows_per_s: float | None = None
    peak_cpu_mb: float | None = None
    peak_gpu_mb: float | None = None
    n_params: int | None = None
    state_bytes: int | None = None  # the size of its saved state_dict
    flops_per_row: float | None = None
    device: str | None = None
    details: dict[str, Any] = field(default_factory=dict)  # what the method did (neurons removed, components)

    @classmethod
    def from_stored(cls, value: Any) -> list[VariantRecord]:
        """A ``trials.variants`` value read back: this record's fields as a list of dicts, or as files
        before it held them, a dict by method."""
        if not value:
            return []
        rows = [{"method": m, **v} for m, v in value.items()] if isinstance(value, dict) else value
        known = {f.name for f in dataclasses.fields(cls)}
        return [cls(**{k: v for k, v in row.items() if k in known}) for row in rows]


@dataclass
class _TrialHead:
    cell_id: str
    trial_id: str
    run_id: str | None = None
    cell_attempt: int = 1
    trial_index: int = 0
    suggestion: int = 0
    attempt: int = 1
    config: dict[str, Any] = field(default_factory=dict)
    status: Status = Status.ERROR
    val_score: float | None = None
    val_loss: float | None = None


@dataclass
class TrialRecord(Metrics, _TrialHead):
    """One trial, as stored in ``trials``: its configuration, validation and test scores, and cost."""

    epochs: int | None = None
    best_epoch: int | None = None
    stop_reason: StopReason | str | None = None
    seconds: float | None = None  # wall time of the whole trial inside its worker
    fit_seconds: float | None = None
    predict_seconds: float | None = None
    predict_rows_per_s: float | None = None
    peak_cpu_mb: float | None = None
    peak_gpu_mb: float | None = None
    n_params: int | None = None
    flops_per_row: float | None = None
    device: str | None = None
    precision: str | None = None  # what a torch model trained and predicted in: fp32, bf16 or fp16
    node: str | None = None  # the Ray node id the trial ran on
    worker: str | None = None  # host:pid of the worker process
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    curve: list[dict[str, Any]] | None = None
    # The suite's `compress` option: each compressed variant's scores and cost, or its error.
    variants: list[VariantRecord] | None = None
    attention: dict[str, Any] | None = field(default=None, metadata={"stored": False})
    # Validation and test predictions (pipeline.predictions.Predictions): the store keeps them in
    # `predictions` and `targets`, not in this table.
    predictions: Any = field(default=None, metadata={"stored": False})

    def __post_init__(self) -> None:
        self.status = Status(self.status)  # a trial read back from the store holds the stored word


@dataclass
class _CellHead:
    cell_id: str
    run_id: str
    suite: str
    dataset: str
    task_type: str
    repeat: int
    fold: int
    sample_size: str
    seed: int
    model: str
    model_name: str
    spec_hash: str
    model_kind: str | None = None  # its Learner's kind (attention, network, boosting, trees, or a user's own)
    status: Status = Status.ERROR
    error: str | None = None
    attempts: int = 1
    best_config: dict[str, Any] | None = None
    best_trial: str | None = None
    n_trials: int = 0
    n_trials_failed: int = 0
    n_train: int | None = None
    n_valid: int | None = None
    n_test: int | None = None
    val_score: float | None = None


@dataclass
class CellResult(Metrics, _CellHead):
    """One cell, as stored in ``results``: the selected trial's test metrics and cost."""

    fit_seconds: float | None = None
    predict_seconds: float | None = None
    predict_rows_per_s: float | None = None
    # The trials' own time: the sum of each trial's seconds (no queue wait, no pause of a resumed cell).
    search_seconds: float | None = None
    peak_cpu_mb: float | None = None
    peak_gpu_mb: float | None = None
    n_params: int | None = None
    flops_per_row: float | None = None
    device: str | None = None
    precision: str | None = None
    epochs: int | None = None
    best_epoch: int | None = None
    stop_reason: StopReason | str | None = None
    finished_at: datetime | None = None
    variant: str | None = None  # a compressed variant's method (prune, quantize, pca); NULL for the model as trained
    split_key: str | None = None  # the split's key (the dataset's checksum and the protocol that split it)

    def __post_init__(self) -> None:
        self.status = Status(self.status)


@dataclass
class RunRecord:
    """One run, as stored in ``runs``: what ran and where, how it ended, and its cells' counts (the scheduler
    updates them with each commit)."""

    run_id: str
    suite: str
    suite_yaml: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    status: RunStatus = RunStatus.RUNNING
    git_rev: str | None = None
    versions: dict[str, Any] | None = None
    hardware: dict[str, Any] | None = None
    argv: str | None = None
    n_cells: int | None = None
    n_done: int = 0
    n_failed: int = 0
    n_skipped: int | None = None
    error: str | None = None
    model_code: dict[str, Any] | None = None
    plan_notes: str | None = field(default=None, metadata={"sql": "JSON"})  # JSON text (pipeline.plan.plan_notes)

    def __post_init__(self) -> None:
        self.status = RunStatus(self.status)


# The selected trial's fields that become the cell's (its test metrics and its cost).
CARRIED = ("val_score", *TEST_METRICS, "fit_seconds", "predict_seconds", "predict_rows_per_s", "peak_cpu_mb",
           "peak_gpu_mb", "n_params", "flops_per_row", "device", "precision", "epochs", "best_epoch", "stop_reason")

_SQL = {str: "VARCHAR", int: "INTEGER", float: "DOUBLE", datetime: "TIMESTAMP", dict: "JSON", list: "JSON",
        bool: "BOOLEAN"}
_WIDE = {"n_params": "BIGINT"}


def sql_columns(cls: type) -> list[tuple[str, str]]:
    """``(name, DuckDB type)`` for each stored field of a record dataclass, in field order."""
    return list(_sql_columns(cls))


@functools.cache  # read for every record stored; type hints are slow to evaluate
def _sql_columns(cls: type) -> tuple[tuple[str, str], ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.metadata.get("stored", True):
            continue
        tp = hints[f.name]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):  # X | None
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        base = typing.get_origin(tp) or tp
        if isinstance(base, type) and issubclass(base, State):
            base = str
        out.append((f.name, f.metadata.get("sql") or _WIDE.get(f.name) or _SQL[base]))
    return tuple(out)


def stored(record: Any) -> dict[str, Any]:
    """A record's stored fields as a plain dict."""
    return {name: getattr(record, name) for name, _ in sql_columns(type(record))}
