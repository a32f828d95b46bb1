"""What the scheduler hands a worker: one trial's request (the records it gets back are
:mod:`pipeline.records`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.learners.resolve import ResolvedModel


@dataclass(frozen=True)
class TrialRequest:
    """One configuration to fit on one cell's data; everything a worker needs besides the arrays."""

    cell_id: str
    trial_id: str
    trial_index: int
    suggestion: int  # the searcher's sequence number; a re-queued trial keeps it
    attempt: int  # 1, or 2 when a lost trial is re-queued
    model: ResolvedModel  # the suite's model entry, resolved once per run
    config: dict[str, Any]  # the searcher's suggestion (the searched keys and the suite's fixed values)
    seed: int
    data_key: str  # which cached fold arrays to use
    cpus: float
    gpus: float
    workers: int
    backend: str
    trial_timeout_s: float
    attention: bool  # ask the learner for its feature-attention map (a model without one answers None)
    asha: bool = False  # ask the rung board at each rung whether to go on
    predictions: bool = True  # return the validation and test predictions (stored for post-hoc ensembles)
    clock: str = "wall"  # what trial_timeout_s is read on: wall, or the trial process's CPU seconds (pipeline.clock)
