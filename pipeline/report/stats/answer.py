"""The overview's answer: per training size, the best model of each family (attention networks, other
networks, gradient boosting, other trees, and any kind a user's model declares), how often each
leader beats the boosting leader, what each costs per 1,000 rows, and a few generated sentences that
say all of that with its coverage. A model's family is its stored kind (``model_kind``), so old
results files keep their families when models are renamed or removed.

A family's representative at a size is, of its models planned on the most of that size's tasks, the one
with the highest mean normalised validation score over them (:mod:`pipeline.report.stats.pick`: the test set chooses nothing); what the
tables show of it is its test scores (of the configurations validation selected), normalised alike. A family
leads a size when its mean is more than 0.005 of normalised score above every other's; closer, they tie. Head-to-head
records compare representatives task by task over the tasks both ran, as won / tied / lost (scores
within the standings' margin, 0.005, tie), with a Wilson interval on the win rate (a tie counts ½); a
model that ran a task without a score loses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pipeline.models.kinds import ATTENTION, BOOSTING, NETWORK, families, models_of_family
from pipeline.records import Status
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import crossover as cross
from pipeline.report.stats import pick
from pipeline.report.stats.standing import MARGIN

FEW_TASKS = 10  # fewer tasks than this: say the answer is anecdotal


@dataclass(frozen=True)
class Leader:
    """A family's best model at one size."""

    model: str
    normalized_score: float  # mean over the tasks it ran
    tasks_scored: int
    tasks_ran: int
    n_tasks: int
    train_s_per_1k: float  # mean over its ok cells at this size
    predict_s_per_1k: float
    epochs_bound: int  # cells whose selected trial kept its last epoch or round
    search_bound: int  # cells whose selected trial was the search's last
    n_cells: int  # its cells at this size that finished (ok or failed; not those not run yet)


@dataclass(frozen=True)
class HeadToHead:
    """A family leader against another, over the tasks both ran: won, tied, lost, and the Wilson
    interval of the win rate (a tie counts ½)."""

    won: int
    tied: int
    lost: int
    low: float
    high: float

    @property
    def n(self) -> int:
        return self.won + self.tied + self.lost

    @property
    def wins(self) -> float:
        return self.won + 0.5 * self.tied

    @property
    def rate(self) -> float:
        return self.wins / self.n if self.n else float("nan")

    @property
    def text(self) -> str:
        return f"won {self.won}, tied {self.tied}, lost {self.lost} of {self.n} task{'s' if self.n != 1 else ''}"


@dataclass
class SizeAnswer:
    size: str
    n_tasks: int
    leaders: dict[str, Leader] = field(default_factory=dict)  # family → leader, in the families' order
    vs_boosting: dict[str, HeadToHead] = field(default_factory=dict)  # every other family → record
    attention_vs_network: HeadToHead | None = None  # the attention leader against the other-network leader
    n_run: int = 0  # the tasks some model has run (fewer than n_tasks while a study runs in chunks)

    @property
    def leading(self) -> list[str]:
        """The families whose representatives' mean normalised score is within 0.005 (``MARGIN``, here on
        the normalised scale) of the highest: level with the top, so more than one is a tie, which no family wins."""
        if not self.leaders:
            return []
        top = max(lead.normalized_score for lead in self.leaders.values())
        return [f for f, lead in self.leaders.items() if lead.normalized_score >= top - MARGIN]

    @property
    def leader(self) -> str | None:
        """The one family ahead of every other by more than the margin; None when none ran or several tie."""
        lead = self.leading
        return lead[0] if len(lead) == 1 else None

    @property
    def leader_text(self) -> str:
        lead = self.leading
        return lead[0] if len(lead) == 1 else ("tie: " + ", ".join(lead) if lead else "—")


def size_answer(size: str, cells: pd.DataFrame, kinds: dict[str, str]) -> SizeAnswer:
    """``cells``: rows of the ``expected_cells`` view at this size."""
    scores = agg.task_scores(cells)
    out = SizeAnswer(size, len(scores))
    if scores.empty:
        return out
    ran = agg.task_ran(cells)
    out.n_run = int(ran.any(axis=1).sum())
    norm = agg.normalized_scores(scores, ran=ran).mean()
    picked_by = agg.normalized_scores(agg.task_scores(cells, "val_score").reindex_like(scores), ran=ran).mean()
    ok = cells[cells.status == Status.OK]
    cost = ok.groupby("model")[["train_s_per_1k", "predict_s_per_1k"]].mean()
    bound = cells.groupby("model")[["epochs_bound", "search_bound"]].sum()
    n_cells = cells[cells.status != Status.MISSING].groupby("model").size()  # finished: what a flag is out of
    has_result = set(cells.loc[cells.status != Status.MISSING, "model"])
    planned = agg.tasks_planned(cells).to_dict()
    for family in families(kinds):
        # a model with no result at this size (planned, not run yet: a study in chunks) leads nothing here;
        # one whose every cell failed is still there, at the bottom
        members = [m for m in models_of_family(kinds, family, scores.columns) if m in has_result]
        if not members:
            continue
        # Only the family's models planned on the most of this size's tasks stand for it: a mean over fewer
        # tasks (a one-dataset tuned entry merged in, a model added on a few datasets) is not set against
        # means over all of them.
        most = max(planned.get(m, 0) for m in members)
        members = [m for m in members if planned.get(m, 0) == most]
        best = members[int(pick.index_by_validation(norm[members].to_numpy(), picked_by[members].to_numpy()))]
        out.leaders[family] = Leader(
            best, float(norm[best]), int(scores[best].notna().sum()), int(ran[best].sum()), len(scores),
            float(cost.train_s_per_1k.get(best, np.nan)), float(cost.predict_s_per_1k.get(best, np.nan)),
            int(bound.epochs_bound.get(best, 0)), int(bound.search_bound.get(best, 0)), int(n_cells.get(best, 0)))
    rec = agg.pairwise_record(scores, ran, margin=MARGIN)  # near-ties are ties, as the standings count them

    def record(m: str, other: str) -> HeadToHead:
        won, tied, lost = (int(x.loc[m, other]) for x in (rec.won, rec.tied, rec.lost))
        return HeadToHead(won, tied, lost, *agg.wilson(won + 0.5 * tied, won + tied + lost))

    if BOOSTING in out.leaders:
        for family, lead in out.leaders.items():
            if family != BOOSTING:
                out.vs_boosting[family] = record(lead.model, out.leaders[BOOSTING].model)
    if ATTENTION in out.leaders and NETWORK in out.leaders:  # does attention help, or any well-tuned network?
        out.attention_vs_network = record(out.leaders[ATTENTION].model, out.leaders[NETWORK].model)
    return out


def family_crossovers(curves: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """Per dataset, the size from which the best model of each family but boosting (the best of its
    family at every size) beats the best boosting model for good: the columns of
    :func:`pipeline.report.stats.aggregate.crossover` with ``family`` instead of ``model``."""
    boosting = models_of_family(kinds, BOOSTING)
    parts = []
    for family in families(kinds):
        members = sorted(models_of_family(kinds, family))
        if family == BOOSTING or not members or not boosting:
            continue
        label = f"best {family}"
        c = cross.crossover(curves, members, boosting, best_label=label)
        c = c[c.model == (members[0] if len(members) == 1 else label)]
        parts.append(c.assign(family=family))
    if not parts:
        return pd.DataFrame(columns=[c if c != "model" else "family" for c in cross.CROSSOVER_COLUMNS])
    return pd.concat(parts, ignore_index=True).drop(columns="model")


def still_improving(r: Any) -> bool:
    """Whether a crossover row's 'never' rests on a challenger still improving at its budget (its
    ``bound``; a row without one, or with NaN there, is not)."""
    b = getattr(r, "bound", False)
    return bool(pd.notna(b) and b)


def crossover_text(r: Any) -> str:
    """A crossover row (of :func:`family_crossovers` or :func:`pipeline.report.stats.aggregate.crossover`) in
    words; a verdict resting on one split says so."""
    one = " — one split" if getattr(r, "n_splits", 2) == 1 else ""
    if r.verdict == "one size":
        return f"not measured: one training size ({r.at_n:,.0f} rows)"
    if r.verdict == "level":
        return f"level at {r.at_n:,.0f} rows, the largest size{one}"
    if r.verdict == "never":
        if still_improving(r):  # behind while still improving at its budget: not converged
            return f"not converged (behind at {r.behind_at:,.0f} rows, still improving ⚑){one}"
        return f"never (behind at {r.behind_at:,.0f} rows){one}"
    if r.verdict == "ahead":
        return f"ahead at every size (from {r.crossover_n:,.0f} rows){one}"
    return f"{r.crossover_n:,.0f} rows ({r.before} at {r.behind_at:,.0f}){one}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def size_sentence(a: SizeAnswer) -> str | None:
    """One training size's answer in words: who leads on mean normalised score, and each family's record
    against the boosting leader (and attention's against the other networks'); None where nothing is planned."""
    if not a.leaders:
        return (f"At {_size(a.size)} ({a.n_tasks} task{'s' if a.n_tasks != 1 else ''} planned): no result yet."
                if a.n_tasks else None)
    lead = a.leading
    parts = [f"{fam} ({best.model}) {best.normalized_score:.2f}" for fam, best in a.leaders.items()]
    who = (f"{lead[0]} leads" if len(lead) == 1 else
           f"{' and '.join(lead) if len(lead) == 2 else ', '.join(lead[:-1]) + ' and ' + lead[-1]} tie")
    tasks = f"{a.n_tasks} task{'s' if a.n_tasks != 1 else ''}"
    if a.n_run < a.n_tasks:
        tasks += f" planned, {a.n_run} run so far"
    text = (f"At {_size(a.size)} ({tasks}), {who} on mean "
            f"normalised score: {', '.join(parts)}.")
    uneven = [f"{best.model} ran {best.tasks_ran}" for best in a.leaders.values() if best.tasks_ran < a.n_run]
    if uneven:
        text += (f" Each mean is over the tasks its model ran ({'; '.join(uneven)} of the {a.n_run}): "
                 "compare them with that in mind.")
    for fam, h in a.vs_boosting.items():
        if not h.n:
            continue
        side = ("better than" if h.low > 0.5 else "worse than" if h.high < 0.5 else "not distinguishable from")
        text += (f" Against {a.leaders[BOOSTING].model}, {a.leaders[fam].model} {h.text} both ran "
                 f"({_pct(h.rate)} with a tie as ½, 95% interval {_pct(h.low)}–{_pct(h.high)}): {side} an even match.")
    an = a.attention_vs_network
    if an is not None and an.n:
        side = ("better than" if an.low > 0.5 else "worse than" if an.high < 0.5 else "not distinguishable from")
        text += (f" Against the best non-attention network, {a.leaders[NETWORK].model}, "
                 f"{a.leaders[ATTENTION].model} {an.text} both ran ({_pct(an.rate)} with a tie as ½, 95% "
                 f"interval {_pct(an.low)}–{_pct(an.high)}): {side} an even match.")
    return text


def summary_sentences(answers: list[SizeAnswer], crossovers: pd.DataFrame, coverage: dict[str, int],
                      sizes: bool = True) -> list[str]:
    """A few plain sentences: coverage first, then one per size (:func:`size_sentence`; left out with
    ``sizes=False``, where a table says them), then the crossovers and the caveats.

    ``coverage`` has datasets, sizes, splits (per dataset and size, most), cells, cells_ok."""
    out = [f"Based on {coverage['datasets']} dataset{'s' if coverage['datasets'] != 1 else ''} at "
           f"{coverage['sizes']} training size{'s' if coverage['sizes'] != 1 else ''}, up to {coverage['splits']} "
           f"split{'s' if coverage['splits'] != 1 else ''} (folds × seeds) each; {coverage['cells_ok']:,} of "
           f"{coverage['cells']:,} cells finished."]
    if answers and max(a.n_tasks for a in answers) < FEW_TASKS:
        out.append(f"With fewer than {FEW_TASKS} datasets per size this answer describes these datasets, "
                   "not tabular data in general: the intervals are wide.")
    if sizes:
        out += [t for t in map(size_sentence, answers) if t]
    for family, g in crossovers.groupby("family", sort=False):
        measured = g[g.verdict != "one size"]
        text = f"Crossover ({family} beats boosting from some size on, and at every larger size): "
        if measured.empty:
            out.append(text + f"not measured on any of {len(g)} datasets: each was run at one training size, "
                       "and a crossover needs at least two.")
            continue
        found = measured.crossover_n.dropna()
        parts = []
        if not found.empty:
            where = (f"{found.min():,.0f}" if found.min() == found.max() else f"{found.min():,.0f}–{found.max():,.0f}")
            parts.append(f"on {len(found)} of {len(measured)} datasets, at {where} training rows")
        else:
            parts.append(f"none on any of {len(measured)} datasets")
        level, never = (int((measured.verdict == v).sum()) for v in ("level", "never"))
        if level:
            parts.append(f"level at the largest size on {level}")
        if never and not found.empty:
            parts.append(f"never on {never}")
        one = int((measured.n_splits == 1).sum())
        text += "; ".join(parts) + "."
        if len(measured) < len(g):
            text += f" Not measured on {len(g) - len(measured)} (one training size)."
        if one:
            text += (" 1 of these verdicts rests on one split." if one == 1 else
                     f" {one} of these verdicts rest on one split each.")
        out.append(text)
    bound: dict[str, list[int]] = {}
    for a in answers:
        for best in a.leaders.values():
            k = bound.setdefault(best.model, [0, 0])
            k[0] += best.epochs_bound
            k[1] += best.n_cells
    bound = {m: k for m, k in bound.items() if k[0]}
    if bound:
        out.append("Budget-bound: " + "; ".join(f"{m} kept its last epoch or round in {k} of {n} cells"
                                                for m, (k, n) in sorted(bound.items()))
                   + ". Such a model was still improving when training stopped: it may rank higher with more epochs.")
    return out


FLOOR_PARTS = 6  # past this many (model, size) pairs the floor sentence counts per model


def floor_sentence(cells: pd.DataFrame) -> str | None:
    """The cells (rows of ``expected_cells``) that scored no better than the constant predictor, by model
    and size, in one sentence; None when every finished cell cleared it."""
    ok = cells[cells.status == Status.OK]
    if ok.empty or not ok.no_better_than_constant.any():
        return None
    g = ok.groupby(["model", "sample_size"], sort=True).no_better_than_constant.agg(["sum", "size"]).reset_index()
    g = g[g["sum"] > 0].assign(order=lambda f: f.sample_size.map(_size_order))
    g = g.sort_values(["model", "order"], kind="stable")
    if len(g) <= FLOOR_PARTS:
        parts = [f"{r.model} in {int(r['sum'])} of {int(r['size'])} finished cells at {_size(r.sample_size)}"
                 for _, r in g.iterrows()]
    else:  # a study's many (model, size) pairs: a total per model; the Accuracy page counts them per size (⊘)
        per = ok.groupby("model", sort=True).no_better_than_constant.agg(["sum", "size"])
        parts = []
        for m, r in per[per["sum"] > 0].iterrows():
            at = g[g.model == m]
            most = at[at["sum"] == at["sum"].max()].sample_size.tolist()  # every size tied for the most
            parts.append(f"{m} in {int(r['sum'])} of {int(r['size'])} finished cells, most at "
                         + (_size(most[0]) if len(most) == 1 else
                            f"{', '.join(_size(x).split(' ')[0] for x in most[:-1])} and {_size(most[-1])} (tied)"))
        parts[-1] += " (the Accuracy page's summary tables count them per size, ⊘)"
    return ("No better than a constant predictor (the majority class, or the training mean): " + "; ".join(parts)
            + ". There the model learned nothing, so its score says nothing about its kind of model: look at its "
            "budget (epochs, learning rate) before reading these cells as a loss.")


def _size_order(size: str) -> float:
    return float("inf") if size == "all" else float(size)


def _size(size: str) -> str:
    return "all training rows" if size == "all" else f"{int(size):,} training rows"
