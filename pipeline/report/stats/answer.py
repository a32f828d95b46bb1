"""The overview's answer: per training size, the best model of each family (attention networks, other
networks, gradient boosting, other trees, and any kind a user's model declares), how each family's best
fares against boosting's best dataset by dataset, what each costs per 1,000 rows, and a few generated
sentences that say all of that with its coverage. A model's family is its stored kind (``model_kind``), so
old results files keep their families when models are renamed or removed.

Two picks, named apart on the page. A family's *leader at a size* is, of its models planned on the most of
that size's tasks, the one with the highest mean normalised validation score over them
(:mod:`pipeline.report.stats.pick`: the test set chooses nothing); the table shows its mean normalised test
score and its cost. A family leads a size when its leader's mean is more than 0.005 of normalised score above
every other's; closer, they tie. A family's *best on a dataset* is its model with the best mean validation
score on that (dataset, size): the pick the ``standings`` view makes, and the per-dataset standings, the
crossovers and the claims read. The verdicts counted per size are those of each family's best on each dataset
against boosting's best there (:class:`pipeline.report.stats.verdicts.Tally`: ahead, equivalent, behind,
undetermined, not converged), with a Wilson interval on each share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pipeline.models.kinds import ATTENTION, BOOSTING, NETWORK, families, models_of_family
from pipeline.records import Status, Verdict
from pipeline.report.stats import aggregate as agg
from pipeline.report.stats import crossover as cross
from pipeline.report.stats import pick
from pipeline.report.stats.standing import best_rows
from pipeline.report.stats.standing import standings as standings_at_largest
from pipeline.report.stats.verdicts import MARGIN, Tally

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


@dataclass
class SizeAnswer:
    size: str
    n_tasks: int
    leaders: dict[str, Leader] = field(default_factory=dict)  # family → leader at this size, in the families' order
    # every other family → the verdicts of its best on each dataset against boosting's best there
    vs_boosting: dict[str, Tally] = field(default_factory=dict)
    attention_vs_network: Tally | None = None  # the best attention network's against the best other network's
    n_run: int = 0  # the tasks some model has run (fewer than n_tasks while a study runs in chunks)
    # the validation rows of each task whose picks the verdicts rest on (:func:`pick.small_validation`)
    n_valid: list[float] = field(default_factory=list)

    @property
    def small_validation(self) -> str:
        """Where the picks of this size were made on validation parts of fewer than 200 rows, in words ('' where
        none was)."""
        return pick.small_validation(self.n_valid)

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


def size_answer(size: str, cells: pd.DataFrame, kinds: dict[str, str], standings: pd.DataFrame | None = None
                ) -> SizeAnswer:
    """``cells``: rows of the ``expected_cells`` view at this size; ``standings``: the ``standings`` view's
    rows at this size (the verdicts counted)."""
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
    rows = standings if standings is not None else pd.DataFrame()
    if len(rows):
        for family in out.leaders:
            if family != BOOSTING and BOOSTING in out.leaders:
                out.vs_boosting[family] = Tally.of(best_rows(rows, family, BOOSTING).verdict)
        if ATTENTION in out.leaders and NETWORK in out.leaders:  # does attention help, or any well-tuned network?
            out.attention_vs_network = Tally.of(best_rows(rows, ATTENTION, NETWORK).verdict)
        picked = rows.drop_duplicates(["dataset", "split_key"])
        out.n_valid = [float(x) for x in picked.n_valid]
    return out


def family_crossovers(standings: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """Per dataset, the size from which the best model of each family but boosting (its best on the dataset
    at every size, by validation) beats the best boosting model for good: the columns of
    :func:`pipeline.report.stats.crossover.crossover` with ``family`` instead of ``model``, from the verdicts
    of the ``standings`` view."""
    parts = []
    for family in families(kinds):
        if family == BOOSTING:
            continue
        c = cross.crossover(cross.family_line(standings, family, f"best {family}"))
        if len(c):
            parts.append(c.assign(family=family))
    if not parts:
        return pd.DataFrame(columns=[c if c != "model" else "family" for c in cross.CROSSOVER_COLUMNS])
    return pd.concat(parts, ignore_index=True).drop(columns="model")


def still_improving(r: Any) -> bool:
    """Whether a crossover row's verdict is not converged: ahead or behind, the one behind still improving
    at its budget (its ``bound``; a row without one, or with NaN there, is not)."""
    b = getattr(r, "bound", False)
    return bool(pd.notna(b) and b)


def crossover_text(r: Any) -> str:
    """A crossover row (of :func:`family_crossovers` or :func:`pipeline.report.stats.crossover.crossover`) in
    words; the verdict at the largest size as :meth:`Decision.words` says it (its fold count with it)."""
    d = getattr(r, "decision", None)
    said = d.words() if d is not None else str(r.verdict)
    if r.verdict == cross.ONE_SIZE:
        return f"not measured: one training size ({r.at_n:,.0f} rows)"
    if r.verdict == cross.NEVER:
        return f"never (behind at {r.behind_at:,.0f} rows)"
    if r.verdict == Verdict.NOT_CONVERGED:
        if d is not None and d.diff > 0:
            return f"not converged (ahead at {r.at_n:,.0f} rows, the boosting model still improving ⚑)"
        return f"not converged (behind at {r.at_n:,.0f} rows, still improving ⚑)"
    if r.verdict == cross.AHEAD_EVERYWHERE:
        return f"ahead at every size (from {r.crossover_n:,.0f} rows)"
    if r.verdict == cross.CROSSOVER:
        return f"{r.crossover_n:,.0f} rows ({r.before} at {r.behind_at:,.0f})"
    return f"{said} at {r.at_n:,.0f} rows, the largest size"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def tally_sentence(t: Tally, who: str, against: str) -> str:
    """A family's verdicts against another's over a size's datasets, in words, with the Wilson interval of
    the share ahead."""
    low, high = t.interval(Verdict.AHEAD)
    return (f"Against the best {against} model of each dataset, the best {who} is {t.text()} "
            f"(ahead on {_pct(t.share(Verdict.AHEAD))}, 95% interval {_pct(low)}–{_pct(high)}).")


def size_sentence(a: SizeAnswer) -> str | None:
    """One training size's answer in words: who leads on mean normalised score (the leaders at this size),
    each family's verdicts against boosting's dataset by dataset (and attention's against the other
    networks'), and where the picks were made on small validation parts; None where nothing is planned."""
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
    for fam, t in a.vs_boosting.items():
        if t.n:
            text += " " + tally_sentence(t, fam, BOOSTING)
    an = a.attention_vs_network
    if an is not None and an.n:
        text += " " + tally_sentence(an, ATTENTION, NETWORK)
    if a.small_validation:
        text += " " + small_sentence(a.small_validation)
    return text


def small_sentence(said: str) -> str:
    """What :func:`pipeline.report.stats.pick.small_validation` said, as a sentence of its own."""
    return (f"Each family's best was {said}: a best picked on so few rows is a best by luck as much as by skill, "
            "and its verdict may be another family's best's.")


def headline_sentence(standings: pd.DataFrame, kinds: dict[str, str]) -> str | None:
    """The answer in one sentence: at each dataset's largest size run with both, each family's best against
    the best boosting model there, counted by verdict (the per-dataset standings of the sample-size page, and
    claim 1's, from the same ``standings`` rows), and where those picks were made on small validation parts."""
    parts: list[str] = []
    valid: dict[tuple[str, str, str], float] = {}
    folds: list[int] = []
    for family in families(kinds):
        table = standings_at_largest(standings, family)
        if family == BOOSTING or table.empty:
            continue
        parts.append(f"the best {family} is {Tally.of(table.standing).text()}")
        valid |= dict(zip(zip(table.dataset, table.split_key, table.sample_size), table.n_valid))
        folds += list(table.n_folds)
    if not parts:
        return None
    text = (f"At each dataset's largest size run, against the best {BOOSTING} model there (each side's best picked "
            f"on validation): {'; '.join(parts)}.")
    if folds and max(folds) <= 1:
        text += " Every verdict here rests on one fold, which gives no interval: more folds could decide them."
    said = pick.small_validation(list(valid.values()))
    return text + (" " + small_sentence(said) if said else "")


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
        measured = g[g.verdict != cross.ONE_SIZE]
        text = f"Crossover ({family} ahead of boosting from some size on, and at every larger size): "
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
        for word, said in ((Verdict.EQUIVALENT, "equivalent at the largest size"),
                           (Verdict.UNDETERMINED, "undetermined there"), (cross.NEVER, "behind there (never)"),
                           (Verdict.NOT_CONVERGED, "not converged there")):
            count = int((measured.verdict == word).sum())
            if count:
                parts.append(f"{said} on {count}")
        one = int((measured.n_splits == 1).sum())
        text += "; ".join(parts) + "."
        if len(measured) < len(g):
            text += f" Not measured on {len(g) - len(measured)} (one training size)."
        if one:
            text += (" 1 of these verdicts rests on one fold, so is undetermined." if one == 1 else
                     f" {one} of these verdicts rest on one fold each, so are undetermined.")
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
