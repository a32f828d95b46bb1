"""Each cell's search: its space, its searcher, and its early-stopping rungs.

The searchers are Ray Tune's own, driven through their ``Searcher`` interface (``suggest`` /
``on_trial_complete``) by the engine rather than by a Tune experiment, so that the trials of every
cell of a suite can share one queue:

- ``random``: the model's defaults first, then seeded random samples (Tune's ``OptunaSearch`` with
  Optuna's ``RandomSampler``: the samples do not depend on earlier results, so a resumed search
  draws exactly the configurations the uninterrupted one would have);
- ``tpe``: the defaults first, then Optuna's TPE sampler (the protocol of TabR, TabM and TALENT),
  with a few trials of a cell at a time so that each suggestion learns from the ones before;
- ``asha``: ``random`` plus asynchronous successive halving: at epochs 3, 9, 27, … a trial goes on
  only if its validation score is in the top third of those its cell recorded at that rung.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pipeline.learners.resolve import ResolvedModel
from pipeline.records import Status, TrialRecord
from pipeline.spec import ModelSpec

GRACE = 3  # the first rung of a board asked without one (each model's comes from its Learner: grace_for)
REDUCTION_FACTOR = 3
MAX_RUNG_EPOCHS = 10_000


def grace_for(model: ResolvedModel) -> int:
    """ASHA's first rung for the model, in the steps its Learner's rungs count (epochs, boosting rounds)."""
    return int(model.capabilities.grace)


def milestones(grace: int, reduction_factor: int = REDUCTION_FACTOR, max_t: int = MAX_RUNG_EPOCHS) -> list[int]:
    """The epochs (or rounds) at which ASHA compares a cell's trials: grace, grace·rf, grace·rf², …"""
    out, t = [], grace
    while t < max_t:
        out.append(t)
        t *= reduction_factor
    return out


def tune_space(model: ResolvedModel) -> dict[str, Any]:
    """The model's space with the suite's overrides, as Ray Tune domains; fixed values stay constants."""
    from ray import tune

    out: dict[str, Any] = {}
    space = model.space
    for key, dom in space.items():
        if not isinstance(dom, dict):
            out[key] = dom
            continue
        (kind, arg), = dom.items()
        if kind == "choice":
            out[key] = tune.choice(arg)
        elif kind == "uniform":
            out[key] = tune.uniform(*arg)
        elif kind == "loguniform":
            out[key] = tune.loguniform(*arg)
        elif kind == "int":
            out[key] = tune.randint(int(arg[0]), int(arg[1]) + 1)
        elif kind == "logint":
            out[key] = tune.lograndint(int(arg[0]), int(arg[1]) + 1)
    out.update(model.spec.fixed)
    return out


def default_point(model: ResolvedModel) -> dict[str, Any]:
    """The defaults, restricted to the searched keys, with the suite's fixed values.

    Where a default falls outside its domain (a suite narrowed the domain, or declared a default of
    its own model outside the model's space), the default is moved into the domain (clipped to the
    range, or the first choice).
    """
    spec, defaults = model.spec, model.defaults
    point = {}
    for k in tune_space(model):
        v, dom = defaults[k], model.space.get(k)
        if isinstance(dom, dict) and k not in spec.fixed:
            (kind, arg), = dom.items()
            if kind == "choice" and v not in arg:
                v = arg[0]
            elif kind != "choice":
                v = min(max(v, arg[0]), arg[1])
                v = round(v) if kind in ("int", "logint") else v
        point[k] = v
    return point


def concurrency_cap(spec: ModelSpec) -> int:
    """How many trials of one cell may run at once: TPE learns from finished trials, so it gets a
    few at a time; random samples and ASHA need no cap."""
    if spec.search == "tpe":
        return max(1, min(4, spec.trials // 5))
    return spec.trials


class CellSearch:
    """The searcher of one cell: hands out numbered suggestions and hears how each ended."""

    def __init__(self, model: ResolvedModel, seed: int, done: list[TrialRecord] | None = None) -> None:
        import optuna
        from ray.tune.search.optuna import OptunaSearch
        from ray.tune.search.sample import Domain

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        spec = model.spec
        space = tune_space(model)
        self.constants = {k: v for k, v in space.items() if not isinstance(v, Domain)}
        self.domains = {k: v for k, v in space.items() if isinstance(v, Domain)}
        defaults = {k: v for k, v in default_point(model).items() if k in self.domains}
        done = [r for r in (done or []) if r.attempt == 1 or r.status != Status.INFRA]  # one per suggestion
        by_suggestion = {r.suggestion: r for r in done}
        self.redo: list[tuple[int, dict[str, Any]]] = []
        self.next = 0
        self.searcher: Any = None
        if self.domains:
            sampler: optuna.samplers.BaseSampler
            # A resumed TPE search is told its history below; its own draws get a seed of their own, or
            # its start-up phase would draw the configurations of the interrupted run again.
            if spec.search == "tpe":
                sampler = optuna.samplers.TPESampler(seed=seed + 100_003 * (max(by_suggestion, default=-1) + 1))
            else:
                sampler = optuna.samplers.RandomSampler(seed=seed)
            first = [] if (spec.search == "tpe" and 0 in by_suggestion) else [defaults]
            self.searcher = OptunaSearch(metric="val_score", mode="max", points_to_evaluate=first, sampler=sampler)
            self.searcher.set_search_properties(None, None, self.domains)
        if not by_suggestion:
            return
        if spec.search == "tpe":  # the history is what TPE learns from: tell it, then go on numbering
            for r in done:
                if self.searcher is not None and r.config:
                    params = {k: r.config[k] for k in self.domains if k in r.config}
                    value = r.val_score if r.val_score is not None and math.isfinite(r.val_score) else None
                    self.searcher.add_evaluated_point(params, value if value is not None else 0.0,
                                                      error=value is None)
            self.next = max(by_suggestion) + 1
            return
        # Random samples do not depend on results: draw the same sequence again, skip what is done,
        # and run again what was lost (a trial in flight when the run stopped).
        for i in range(max(by_suggestion) + 1):
            n, config = self._draw()
            if i in by_suggestion:
                self.complete(n, by_suggestion[i])
            else:
                self.redo.append((n, config))

    def _draw(self) -> tuple[int, dict[str, Any]]:
        n = self.next
        self.next += 1
        config = self.searcher.suggest(str(n)) if self.searcher is not None else {}
        return n, {**self.constants, **config}

    def suggest(self) -> tuple[int, dict[str, Any]]:
        """The next suggestion's number and its full configuration (searched values and constants)."""
        return self.redo.pop(0) if self.redo else self._draw()

    def complete(self, suggestion: int, record: TrialRecord) -> None:
        if self.searcher is None:
            return
        ok = record.val_score is not None and math.isfinite(record.val_score)
        self.searcher.on_trial_complete(str(suggestion), result={"val_score": record.val_score} if ok else None,
                                        error=not ok)


class Rungs:
    """Asynchronous successive halving over the epochs (or boosting rounds) of one cell's trials.
    A score is higher-is-better: validation accuracy or −RMSE for torch models, minus the validation
    loss (the booster's eval metric) for boosting."""

    def __init__(self, grace: int = GRACE, reduction_factor: int = REDUCTION_FACTOR,
                 max_t: int = MAX_RUNG_EPOCHS) -> None:
        self.rf = reduction_factor
        self.milestones = milestones(grace, reduction_factor, max_t)
        self.recorded: dict[int, list[float]] = {m: [] for m in self.milestones}

    def decide(self, epoch: int, score: float) -> bool:
        """Record a trial's score at ``epoch``; False when it should stop (below the rung's top 1/rf)."""
        if epoch not in self.recorded:
            return True
        score = score if math.isfinite(score) else -math.inf
        rung = self.recorded[epoch]
        rung.append(score)
        finite = [s for s in rung if math.isfinite(s)]
        if not finite:
            return True
        cutoff = float(np.percentile(finite, (1 - 1 / self.rf) * 100))
        return score >= cutoff

    def replay(self, curve: list[dict[str, Any]] | None) -> None:
        """Record a finished trial's rung scores from its curve (a resumed search keeps its rungs): torch
        curves hold epochs and validation scores, boosting curves rounds and validation losses."""
        for point in curve or []:
            step = point.get("epoch", point.get("iteration"))
            score = point.get("val_score")
            if score is None and isinstance(point.get("val_loss"), int | float):
                score = -point["val_loss"]
            if step in self.recorded and isinstance(score, int | float):
                self.recorded[step].append(float(score))


class RungBoard:
    """The rungs of every ASHA cell of a run, in one small Ray actor that trials ask at each rung."""

    def __init__(self) -> None:
        self.cells: dict[str, Rungs] = {}

    def replay(self, cell_id: str, curves: list[list[dict[str, Any]] | None], grace: int = GRACE) -> None:
        rungs = self.cells.setdefault(cell_id, Rungs(grace))
        for curve in curves:
            rungs.replay(curve)

    def decide(self, cell_id: str, epoch: int, score: float, grace: int = GRACE) -> bool:
        return self.cells.setdefault(cell_id, Rungs(grace)).decide(epoch, score)

    def forget(self, cell_id: str) -> None:
        self.cells.pop(cell_id, None)
