"""The verdicts read at a margin, and how close an undetermined one came (issue 82 items 2 and 3), in Markdown: what
``attnbench answer`` prints beside the pre-registered ±0.005 (the field's usual ±0.01 of Benavoli et al. 2017 and
Corani et al. 2017, or any margin ``--margin`` names), and the words an undetermined row carries.

A row here is one of :func:`pipeline.report.answer_text.pairs`: a ``standings`` row of the best attention network
against the best boosting model. Only the equivalence test reads the margin (:meth:`Decision.at`); the intervals,
and what the design can tell apart (``detectable``), do not.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipeline.records import VERDICT_MARGIN, Power, Verdict
from pipeline.report.stats.verdicts import ORDER, from_row, power
from pipeline.report.text import counted, signed

FIELD_MARGIN = 0.01  # the field's usual region of practical equivalence for accuracy (Benavoli et al. 2017)
SOURCE = {VERDICT_MARGIN: "pre-registered", FIELD_MARGIN: "the field's usual region of practical equivalence, "
          "Benavoli et al. 2017"}


def reread(p: pd.DataFrame, margin: float) -> pd.DataFrame:
    """``p`` with each row's verdict and power read at ``margin`` (the view's own where it is the view's)."""
    if margin == VERDICT_MARGIN or p.empty:
        return p
    out = p.copy()
    out["verdict"] = [from_row(r).at(margin).verdict.value for r in p.itertuples(index=False)]
    undetermined = (out.verdict == Verdict.UNDETERMINED.value) & (out.n_splits >= 2)
    out["power"] = [power(float(r.sd), int(r.folds), int(r.cap_splits), margin).value if u else None
                    for r, u in zip(p.itertuples(index=False), undetermined, strict=True)]
    return out


def counts(big: pd.DataFrame) -> str:
    """``equivalent on 5, behind on 8, undetermined on 21, not converged on 1 of 35 datasets``."""
    n = big.verdict.value_counts()
    words = ", ".join(f"{v.value} on {int(n.get(v.value, 0))}" for v in ORDER if n.get(v.value, 0))
    return f"{words} of {counted(len(big), 'dataset')}"


def margin_sentence(big: pd.DataFrame, margin: float) -> str:
    """The verdict counts at each dataset's largest size read at ``margin``, labelled, with how many of the
    undetermined no repeats to the cap could decide."""
    at = reread(big, margin)
    label = f" ({SOURCE[margin]})" if margin in SOURCE else ""
    under = int((at.power == Power.UNDERPOWERED.value).sum())
    und = int((at.verdict == Verdict.UNDETERMINED.value).sum())
    return (f"At ±{margin:g}{label}: {counts(at)}; {under} of the {und} undetermined are underpowered (no repeats "
            "to the cap could show even a true zero equivalent).")


def closeness(r: Any) -> str:
    """An undetermined row's verdict with how close it came: ``undetermined (underpowered): differences under ±0.021
    cannot be told apart on these 3 splits, ±0.012 at 15``; any other verdict as it is."""
    if r.verdict != Verdict.UNDETERMINED.value or pd.isna(r.detectable):
        return str(r.verdict) + (" (one split)" if int(r.n_splits) == 1 else "")
    cap = (f", ±{signed(float(r.detectable_at_cap), sign=False)} at {int(r.cap_splits)}"
           if int(r.cap_splits) > int(r.n_splits) else "")
    return (f"undetermined ({r.power}): differences under ±{signed(float(r.detectable), sign=False)} cannot be told "
            f"apart on these {int(r.n_splits)} splits{cap}")


def by_size_rows(p: pd.DataFrame, margin: float) -> list[str]:
    """Per training size, the verdict counts at ``margin`` (a Markdown table's rows)."""
    at = reread(p, margin)
    rows = []
    sized = at[at.sample_size != "all"]
    for label, g in sorted(sized.groupby("sample_size"), key=lambda kv: int(kv[0])):
        n = g.verdict.value_counts()
        rows.append(f"| {int(label):,} | {len(g)} | " + " | ".join(str(int(n.get(v.value, 0))) for v in ORDER)
                    + f" | {int((g.power == Power.UNDERPOWERED.value).sum())} |")
    return rows


def at_margin(p: pd.DataFrame, big: pd.DataFrame, margin: float) -> str:
    """What ``attnbench answer --margin M`` prints: the counts at each dataset's largest size and by training size,
    read at ``margin`` (the intervals are the same at any margin; only equivalence moves)."""
    head = ["| training rows | datasets | ahead | equivalent | behind | undetermined | not converged | underpowered |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    return "\n".join([margin_sentence(big, margin), "", *head, *by_size_rows(p, margin)]) + "\n"
