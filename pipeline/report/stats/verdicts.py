"""One verdict for a pair of models on a (dataset, size), from their differences split by split (issue 58
item 1, issue 61): *ahead*, *behind*, *equivalent* or *undetermined*, or *not converged*, each a
:class:`Verdict` carried by a :class:`Decision` with the figures it rests on.

For models a and b and the splits both finished (a split: one fold of one repeat, its subset seeds
averaged), ``d_j`` = a's test score − b's on split j (accuracy or R²). Their mean is the difference; its
interval is the **Nadeau–Bengio corrected resampled t** (Nadeau & Bengio, *Inference for the
generalization error*, Machine Learning 52, 2003)::

    s² = the variance of the d_j (ddof 1),   J = the number of splits
    half width = t(1 − α/2, J − 1) · s · √(1/J + n_test/n_train)

Why not the plain t-interval (√(1/J)): the splits of (repeated) cross-validation are not independent
draws. Every two folds share most of their training rows, and every repeat tests the same rows again, so
the d_j move together, and more repeats shrink s/√J without telling more about how the two models
compare on other data of this size. The term n_test/n_train is Nadeau and Bengio's estimate of that
correlation (ρ ≈ n_test/n, so ρ/(1 − ρ) = n_test/n_train): whatever J, the interval stays at least
t · s · √(n_test/n_train) wide. For k-fold cross-validation n_test/n_train = 1/(k − 1) (:func:`ratio`
with ``folds``). tests/report/test_verdicts.py simulates repeated k-fold cross-validation of two ridge
regressions (2,000 datasets a design) and measures the coverage of the true difference: the corrected 95%
interval covers it 97.8% of the time under the study's 5-fold × 2 (the plain one 87.9%), 98.6% under 5-fold
× 4 (plain 78.4%: more repeats narrow it, not the data). The correction errs wide, as Nadeau and Bengio
found it does: it leaves more pairs undetermined rather than call a difference the shared rows made.

Where a size's training rows are a subset of the fold's training part (a learning curve's smaller sizes),
give the design's ``folds`` (or the ratio of the fold's test part to its whole training part), not the
subset's rows: subsets of the training parts share fewer rows than the parts do, so the fold's ratio
already bounds the sharing, while n_test/subset rows would grow without bound as the subset shrinks (the
same simulation, 3-fold × 4 on 20-row subsets of 40-row training parts with 1/(k − 1): 98.5%, plain 82.2%).

The decision, checked in this order (:func:`decide`):

1. no split in common: *not compared* (nothing to decide);
2. one split: *undetermined*. One split has no variance, so no interval and neither test can be done;
   calling a one-split difference ahead past the margin (as the standings did) would let one fold say
   more than two that disagree. What the split showed stays data: ``diff`` and :attr:`Decision.lean`,
   and ``n_splits == 1`` (:meth:`Decision.words` says "(one fold)"), never a suffix glued onto a word;
3. *equivalent* when the (1 − 2α) corrected interval lies strictly inside ±``margin``: two one-sided
   tests (TOST) at level α, each rejecting a difference at or past one side of the margin;
4. *ahead* (difference > 0) or *behind* when the (1 − α) corrected interval excludes zero; *not
   converged* instead when the model behind was still improving when its epochs, rounds or time ran out
   (``bound``), as the standings said it;
5. *undetermined* otherwise: the interval holds zero and reaches past the margin.

Equivalence is checked before a difference: an interval can exclude zero and lie within the margin (a
difference real but smaller than 0.005); it reads *equivalent*, as the margin is what we call too small
to matter. The 90% interval lies inside the 95% one, so this is the only case in which both tests pass.

``MARGIN``: 0.005 of accuracy or of R², half a point of accuracy: the margin the standings, the crossover,
the tuning and the overview compare with today. (With study-every-dataset's three folds the corrected 90%
interval reaches t(0.95, 2) · √(1/3 + 1/2) ≈ 2.7 s each side, so equivalence needs folds that agree
within a fraction of the margin; where they do not, the honest word is undetermined.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.records import COMPARED_VERDICTS, VERDICT_ALPHA, VERDICT_MARGIN, Power, Verdict
from pipeline.report.stats.aggregate import wilson

MARGIN = VERDICT_MARGIN  # accuracy or R²: a difference whose interval lies within ± this is equivalent
ALPHA = VERDICT_ALPHA  # the two-sided interval is 1 − α (95%); the equivalence interval 1 − 2α (90%)
METHOD = "Nadeau-Bengio corrected resampled t"
# The verdicts whose difference enters a mean over datasets: every pair with a difference that is not
# left out as not converged. Verdict (its words) lives in pipeline/records.py, beside the other stored words,
# so that the standings view renders it too.
COMPARED = COMPARED_VERDICTS
__all__ = ["ALPHA", "COMPARED", "MARGIN", "METHOD", "ORDER", "Decision", "Power", "Tally", "Verdict", "cap_splits",
           "corrected_interval", "decide", "decisions", "detectable", "from_row", "half_width", "pair_key", "power",
           "projected", "ratio", "versus"]


@dataclass(frozen=True)
class Decision:
    """Model a against model b on one (dataset, size): the verdict and what it rests on. ``diff``: the mean
    over splits of a − b; ``low``/``high`` its (1 − α) corrected interval, ``eq_low``/``eq_high`` the
    (1 − 2α) one the equivalence test uses (NaN under two splits); ``n_splits``: the splits both finished
    (the fold count, as data); ``folds``: the k of the k-fold design when given; ``ratio``: n_test/n_train
    of the correction."""

    verdict: Verdict
    diff: float
    low: float
    high: float
    eq_low: float
    eq_high: float
    n_splits: int
    margin: float = MARGIN
    alpha: float = ALPHA
    ratio: float = float("nan")
    folds: int | None = None
    method: str = METHOD
    bound: tuple[bool, bool] = (False, False)  # whether a, b were still improving when their budget ran out

    @property
    def one_split(self) -> bool:
        return self.n_splits == 1

    @property
    def has_interval(self) -> bool:
        return self.n_splits >= 2

    @property
    def lean(self) -> Verdict | None:
        """Where the mean lies, whatever the interval: ahead or behind when past the margin, equivalent
        within it, None without a split. What a one-split decision showed (its verdict is undetermined)."""
        if not self.n_splits or math.isnan(self.diff):
            return None
        if abs(self.diff) <= self.margin:
            return Verdict.EQUIVALENT
        return Verdict.AHEAD if self.diff > 0 else Verdict.BEHIND

    def words(self) -> str:
        """The verdict as a page says it: its word, and "(one fold)" when it rests on one split."""
        return f"{self.verdict} (one fold)" if self.one_split else str(self.verdict)

    def sentence(self) -> str:
        """The verdict with its figures: ``ahead: +0.012, 95% interval +0.004 to +0.020 over 6 folds``."""
        if not self.n_splits:
            return f"{self.verdict}: no split in common"
        if self.one_split:
            side = "within" if self.lean is Verdict.EQUIVALENT else "past"
            return f"{self.words()}: {self.diff:+.3f} on one fold, {side} ±{self.margin:g}; no interval from one fold"
        level = f"{1 - self.alpha:.0%}"
        return (f"{self.verdict}: {self.diff:+.3f}, {level} interval {self.low:+.3f} to {self.high:+.3f} over "
                f"{self.n_splits} folds (corrected for shared training rows; equivalent within ±{self.margin:g})")

    def at(self, margin: float) -> Decision:
        """The same splits read at another equivalence ``margin`` (a reader's region of practical equivalence:
        ±0.01 is the field's usual one for accuracy); only the equivalence test depends on it."""
        verdict = _verdict(self.n_splits, self.low, self.high, self.eq_low, self.eq_high, margin, self.bound)
        return Decision(verdict, self.diff, self.low, self.high, self.eq_low, self.eq_high, self.n_splits, margin,
                        self.alpha, self.ratio, self.folds, self.method, self.bound)

    def reversed(self) -> Decision:
        """The same decision read as b against a."""
        return Decision(self.verdict.reversed(), -self.diff, -self.high, -self.low, -self.eq_high, -self.eq_low,
                        self.n_splits, self.margin, self.alpha, self.ratio, self.folds, self.method, self.bound[::-1])


def ratio(*, folds: int | None = None, n_train: float | None = None, n_test: float | None = None) -> float:
    """n_test/n_train of the correction: 1/(k − 1) for ``folds`` = k of k-fold cross-validation, else
    ``n_test``/``n_train`` (for a subset of a fold's training part, the whole part's rows: see the
    module's notes). Exactly one of the two must be given."""
    sizes = n_train is not None or n_test is not None
    if (folds is not None) == sizes or (sizes and (n_train is None or n_test is None)):
        raise ValueError("give either folds (k of k-fold) or both n_train and n_test")
    if folds is not None:
        if folds < 2:
            raise ValueError(f"k-fold needs k >= 2, got {folds}")
        return 1.0 / (folds - 1)
    assert n_train is not None and n_test is not None
    if n_train <= 0 or n_test <= 0:
        raise ValueError(f"n_train and n_test must be positive, got {n_train} and {n_test}")
    return float(n_test) / float(n_train)


def _values(diffs: Iterable[float] | np.ndarray) -> np.ndarray:
    """The differences as floats, NaN (a split one side did not finish) left out."""
    d = np.asarray(diffs if isinstance(diffs, np.ndarray) else list(diffs), dtype=float).ravel()
    return d[~np.isnan(d)]


def corrected_interval(diffs: Iterable[float] | np.ndarray, test_over_train: float,
                       level: float = 1 - ALPHA) -> tuple[float, float, float]:
    """Mean of ``diffs`` and its two-sided ``level`` Nadeau–Bengio interval (``test_over_train``: the
    correction's n_test/n_train; 0 gives the plain t-interval). NaN bounds under two values."""
    d = _values(diffs)
    if not len(d):
        return float("nan"), float("nan"), float("nan")
    mean = float(d.mean())
    if len(d) < 2:
        return mean, float("nan"), float("nan")
    half = half_width(float(d.std(ddof=1)), len(d), test_over_train, level)
    return mean, mean - half, mean + half


def half_width(sd: float, n_splits: int, test_over_train: float, level: float = 1 - ALPHA) -> float:
    """Half the two-sided ``level`` corrected interval of a mean over ``n_splits`` differences whose standard
    deviation (their fold-to-fold spread) is ``sd``: t(½ + level/2, J − 1) · sd · √(1/J + n_test/n_train).
    As J grows it falls towards z · sd · √(n_test/n_train), never below: repeats cannot narrow it further."""
    return float(stats.t.ppf(0.5 + level / 2, n_splits - 1) * sd * math.sqrt(1 / n_splits + test_over_train))


# ----------------------------------------------------------------------------- how close it came (issue 82 item 2)
# An undetermined pair says what the design could tell apart: ``detectable``, the half-width of its 95% corrected
# interval at the splits it has (a difference smaller than that cannot be told from zero there), and the same at
# the repeat cap (the most repeats of the k-fold the file plans for any dataset: the study's protocol cap); and
# :class:`Power`: *underpowered* where even a true difference of zero, with the spread its splits show, could not
# be shown equivalent within the margin at the cap (the 90% interval's half-width there reaches the margin),
# *inconclusive* where repeats to the cap could. The ``standings`` view computes all three alike
# (tests/report/test_standings.py); tests/report/test_detectable.py checks both on simulated splits.


def cap_splits(n_splits: int, folds: int, cap_repeats: int) -> int:
    """The splits a pair would have at the repeat cap: ``cap_repeats`` × ``folds``, and never fewer than it has."""
    return max(int(n_splits), int(cap_repeats) * int(folds))


def detectable(sd: float, n_splits: int, folds: int, level: float = 1 - ALPHA) -> float:
    """Half the ``level`` corrected interval over ``n_splits`` splits of ``folds``-fold cross-validation with
    fold-to-fold spread ``sd``: differences under it cannot be told from zero on those splits (NaN under 2)."""
    if n_splits < 2 or math.isnan(sd):
        return float("nan")
    return half_width(sd, n_splits, ratio(folds=folds), level)


def power(sd: float, folds: int, at_cap: int, margin: float = MARGIN, alpha: float = ALPHA) -> Power:
    """Whether an undetermined pair whose splits spread by ``sd`` could be decided at ``at_cap`` splits
    (:func:`cap_splits`): underpowered when even a true difference of zero could not be shown equivalent within
    ±``margin`` there (the (1 − 2α) interval's half-width reaches the margin), inconclusive otherwise."""
    return Power.UNDERPOWERED if detectable(sd, at_cap, folds, 1 - 2 * alpha) >= margin else Power.INCONCLUSIVE


def projected(diff: float, sd: float, n_splits: int, *, folds: int, margin: float = MARGIN,
              alpha: float = ALPHA, bound: tuple[bool, bool] = (False, False)) -> Decision:
    """The decision :func:`decide` would reach over ``n_splits`` splits of ``folds``-fold cross-validation if
    their mean difference were ``diff`` and its spread ``sd``, as measured on fewer: what more repeats can
    decide, and where no number of them would (an interval wider than the difference, and than the margin)."""
    r = ratio(folds=folds)
    half, eq_half = half_width(sd, n_splits, r, 1 - alpha), half_width(sd, n_splits, r, 1 - 2 * alpha)
    low, high = diff - half, diff + half
    return Decision(_verdict(n_splits, low, high, diff - eq_half, diff + eq_half, margin, bound), diff, low,
                    high, diff - eq_half, diff + eq_half, n_splits, margin, alpha, r, folds, METHOD, bound)


def _verdict(n: int, low: float, high: float, eq_low: float, eq_high: float, margin: float,
             bound: tuple[bool, bool]) -> Verdict:
    """The module's rule, checked in its order."""
    if n == 0:
        return Verdict.NOT_COMPARED
    if n == 1:
        return Verdict.UNDETERMINED
    if -margin < eq_low and eq_high < margin:
        return Verdict.EQUIVALENT
    if low > 0 or high < 0:
        behind_bound = bound[1] if low > 0 else bound[0]
        return Verdict.NOT_CONVERGED if behind_bound else Verdict.AHEAD if low > 0 else Verdict.BEHIND
    return Verdict.UNDETERMINED


def decide(diffs: Iterable[float] | np.ndarray, *, folds: int | None = None, n_train: float | None = None,
           n_test: float | None = None, margin: float = MARGIN, alpha: float = ALPHA,
           bound: tuple[bool, bool] = (False, False)) -> Decision:
    """The verdict of model a against model b from ``diffs``, a − b test score per split both finished
    (NaN entries, a split one of them did not finish, are left out). The design: ``folds`` = k of k-fold
    cross-validation, or ``n_train`` and ``n_test`` (:func:`ratio`). ``bound``: whether a, b were still
    improving when their epochs, rounds or time ran out. The checks, in order: the module's notes."""
    if margin < 0 or not 0 < alpha < 0.5:
        raise ValueError(f"need margin >= 0 and 0 < alpha < 0.5, got {margin} and {alpha}")
    r = ratio(folds=folds, n_train=n_train, n_test=n_test)
    d = _values(diffs)
    mean, low, high = corrected_interval(d, r, 1 - alpha)
    _, eq_low, eq_high = corrected_interval(d, r, 1 - 2 * alpha)
    n = len(d)
    verdict = _verdict(n, low, high, eq_low, eq_high, margin, bound)
    return Decision(verdict, mean, low, high, eq_low, eq_high, n, margin, alpha, r, folds,
                    METHOD if n >= 2 else "one split: no interval" if n else "no split in common", bound)


# ----------------------------------------------------------------------------- the standings view
# What the standings view (pipeline/data/views.py) sets each model against, by family: every page reads its
# verdicts of a model, or of a family's best, against boosting's best from these rows.
def versus(family: str) -> str:
    """The ``versus`` of a standings row set against ``family``'s best: ``best gradient boosting``."""
    return f"best {family}"


def from_row(r: Any) -> Decision:
    """The decision a row of the ``standings`` view holds (a named tuple or a Series; the same rule as
    :func:`decide`, computed in SQL)."""
    def f(name: str) -> Any:
        return (r[name] if name in r.index else None) if isinstance(r, pd.Series) else getattr(r, name, None)

    folds = None if _missing(f("folds")) else int(f("folds"))
    n = int(f("n_splits"))
    bound = (bool(f("model_bound")) if not _missing(f("model_bound")) else False,
             bool(f("versus_bound")) if not _missing(f("versus_bound")) else False)
    return Decision(Verdict(f("verdict")), _float(f("diff")), _float(f("lo")), _float(f("hi")), _float(f("eq_lo")),
                    _float(f("eq_hi")), n, float(f("margin")), ALPHA, 1.0 / (folds - 1) if folds else float("nan"),
                    folds, METHOD if n >= 2 else "one split: no interval" if n else "no split in common", bound)


def decisions(rows: pd.DataFrame) -> list[Decision]:
    """:func:`from_row` of each row, in order."""
    return [from_row(r) for r in rows.itertuples(index=False)]


def pair_key(dataset: str, split_key: str, sample_size: str, model: str, against: str, scope: str = "") -> str:
    """What names one pair on one task wherever a page shows its verdict (a ``data-pair`` attribute), so
    that a test can read every page's verdict of it: dataset, split key, size, the model and the one it is
    set against; ``scope`` where the verdict rests on fewer of the task's splits (a tuned slice's folds)."""
    return "|".join(map(str, (dataset, split_key, sample_size, model, against, *([scope] if scope else []))))


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _float(v: Any) -> float:
    return float("nan") if _missing(v) else float(v)


# The order verdicts are counted and drawn in: the two that decide, then the one within the margin, then
# those the splits cannot tell, and last those left out of a mean.
ORDER = (Verdict.AHEAD, Verdict.EQUIVALENT, Verdict.BEHIND, Verdict.UNDETERMINED, Verdict.NOT_CONVERGED)


@dataclass(frozen=True)
class Tally:
    """Verdicts counted over datasets (pairs with no split in common apart): how many were ahead,
    equivalent, behind, undetermined and not converged, and the Wilson 95% interval of each share."""

    counts: dict[Verdict, int]
    not_compared: int = 0

    @classmethod
    def of(cls, verdicts: Iterable[Verdict | str]) -> Tally:
        seen = [Verdict(v) for v in verdicts]
        return cls({v: seen.count(v) for v in ORDER}, seen.count(Verdict.NOT_COMPARED))

    @property
    def n(self) -> int:
        """The pairs with a difference: every verdict but not compared."""
        return sum(self.counts.values())

    def __getitem__(self, v: Verdict) -> int:
        return self.counts.get(v, 0)

    def share(self, v: Verdict) -> float:
        return self[v] / self.n if self.n else float("nan")

    def interval(self, v: Verdict) -> tuple[float, float]:
        """The Wilson 95% interval of the share of ``v``."""
        return wilson(self[v], self.n)

    def short(self) -> str:
        """``3–1–6–25``: ahead, equivalent, behind, undetermined (and ``+2 not converged``)."""
        text = "–".join(str(self[v]) for v in ORDER[:4])
        return text + (f" + {self[Verdict.NOT_CONVERGED]} not converged" if self[Verdict.NOT_CONVERGED] else "")

    def text(self, of: str = "datasets") -> str:
        """``ahead on 3, equivalent on 1, behind on 6 and undetermined on 25 of 35 datasets`` (``, 2 of them
        not converged`` after, where there are any)."""
        parts = [f"{v} on {self[v]}" for v in ORDER[:4]]
        text = f"{', '.join(parts[:-1])} and {parts[-1]} of {self.n} {of}"
        if self[Verdict.NOT_CONVERGED]:
            text += f", {self[Verdict.NOT_CONVERGED]} of them not converged"
        return text
