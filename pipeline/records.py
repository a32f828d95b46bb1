"""The stored records: a trial, a cell's result, how each ended. The bottom layer of the package.

These dataclasses are the one definition of each record. The DuckDB store derives its ``trials`` and
``results`` columns from their fields (``sql_columns``), so a metric added here is stored everywhere
without a hand-kept column list; the engine fills them, the report reads them back through SQL.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class Status(str, enum.Enum):
    """How a trial or a cell ended."""

    OK = "ok"
    STOPPED = "stopped"  # stopped early by ASHA; its best epoch is scored like any other trial's
    ERROR = "error"  # the model raised
    DIVERGED = "diverged"  # the training loss became NaN or infinite
    OOM = "oom"  # out of memory: an allocator's error, or Ray's memory monitor killed the worker
    TIMEOUT = "timeout"  # still running past the hard limit; its worker was killed
    INFRA = "infra"  # lost to the infrastructure: a dead worker or node
    MISSING = "missing"  # a planned cell with no result: the views' word for it, never stored by a run

    def __str__(self) -> str:
        return self.value

    @property
    def scored(self) -> bool:
        return self in (Status.OK, Status.STOPPED)


MODEL_FAILURES = (Status.ERROR, Status.DIVERGED, Status.OOM, Status.TIMEOUT)

# The test metrics, declared once: Scores (pipeline.evaluation), TrialRecord and CellResult carry a field of
# each name (tests/test_layering.py checks it); the worker, the cell's carried fields, the constant
# floor and the reference tables iterate over this tuple instead of naming them again.
TEST_METRICS = ("accuracy", "balanced_accuracy", "roc_auc", "log_loss", "rmse", "r2")


@dataclass
class VariantRecord:
    """A compressed variant of a trial's model (the suite's ``compress`` option), as its trial keeps it
    (``trials.variants``) and its cell's ``<model>+<method>`` row in ``results`` takes it: the variant's
    scores and cost under the cell's own field names, or the error that stopped it (``error``, the
    other figures empty). ``retrained``: a model trained anew on other inputs (PCA's, on the principal
    components), whose cost is its own training and whose epochs are not the trained model's; otherwise
    the trained model compressed, whose training comes first in its cost (``fit_seconds``, the peaks)."""

    method: str  # prune, quantize or pca
    retrained: bool = False
    error: str | None = None
    val_score: float | None = None
    val_loss: float | None = None
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    roc_auc: float | None = None
    log_loss: float | None = None
    rmse: float | None = None
    r2: float | None = None
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
class TrialRecord:
    """One trial, as stored in ``trials``: its configuration, validation and test scores, and cost."""

    cell_id: str
    trial_id: str
    run_id: str | None = None
    cell_attempt: int = 1
    trial_index: int = 0
    suggestion: int = 0
    attempt: int = 1
    config: dict[str, Any] = field(default_factory=dict)
    status: str = Status.ERROR.value
    val_score: float | None = None
    val_loss: float | None = None
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    roc_auc: float | None = None
    log_loss: float | None = None
    rmse: float | None = None
    r2: float | None = None
    epochs: int | None = None
    best_epoch: int | None = None
    stop_reason: str | None = None
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


@dataclass
class CellResult:
    """One cell, as stored in ``results``: the selected trial's test metrics and cost."""

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
    status: str = Status.ERROR.value
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
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    roc_auc: float | None = None
    log_loss: float | None = None
    rmse: float | None = None
    r2: float | None = None
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
    stop_reason: str | None = None
    finished_at: datetime | None = None
    variant: str | None = None  # a compressed variant's method (prune, quantize, pca); NULL for the model as trained
    split_key: str | None = None  # the split's key (the dataset's checksum and the protocol that split it)


# The selected trial's fields that become the cell's (its test metrics and its cost).
CARRIED = ("val_score", *TEST_METRICS, "fit_seconds", "predict_seconds", "predict_rows_per_s", "peak_cpu_mb",
           "peak_gpu_mb", "n_params", "flops_per_row", "device", "precision", "epochs", "best_epoch", "stop_reason")

_SQL = {str: "VARCHAR", int: "INTEGER", float: "DOUBLE", datetime: "TIMESTAMP", dict: "JSON", list: "JSON",
        bool: "BOOLEAN"}
_WIDE = {"n_params": "BIGINT"}


def sql_columns(cls: type) -> list[tuple[str, str]]:
    """``(name, DuckDB type)`` for each stored field of a record dataclass, in field order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.metadata.get("stored", True):
            continue
        tp = hints[f.name]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):  # X | None
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        base = typing.get_origin(tp) or tp
        out.append((f.name, _WIDE.get(f.name) or _SQL[base]))
    return out


def stored(record: Any) -> dict[str, Any]:
    """A record's stored fields as a plain dict."""
    return {name: getattr(record, name) for name, _ in sql_columns(type(record))}
