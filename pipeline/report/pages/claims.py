"""The claims page: the design notes' claims, each with its verdict, effect, interval and cells (the
verdicts themselves are :mod:`pipeline.report.stats.claims`)."""

from __future__ import annotations

from pipeline.report.data import ReportData
from pipeline.report.markup import Page, cell, esc, note, table
from pipeline.report.parts import VERDICT_NOTE
from pipeline.report.site import PageSpec
from pipeline.report.stats import claims as claims_mod

SPEC = PageSpec("claims.html", "Claims", "The design notes' five claims, each with a verdict, its effect, interval and cells.",
                lambda s: page_claims(s.data))


VERDICT_CLASS = {claims_mod.SUPPORTED: "best", claims_mod.CONTRADICTED: "missing", claims_mod.THIN: "partial"}


def page_claims(data: ReportData) -> Page:
    p = SPEC.page()
    p.card("Five claims from the design notes behind these architectures, tested on the results in this file "
           "rather than assumed. Each gets an effect with a 95% interval and the comparisons behind it: "
           "supported when the interval lies on the claim's side, contradicted when it lies on the other, and "
           f"not enough data when there are fewer than {claims_mod.MIN_PAIRS} comparisons or the interval "
           "includes no effect. Ablations are found in the selected configurations: cells of one model on one "
           "split whose configurations differ only in the switch (se_reduction: 0 or se: false, attention: "
           "self, warmup_frac: 0), i.e. the same model entered twice in a suite, one entry labelled.")
    found = claims_mod.verdicts(data.standings, data.configured, data.attention, data.datasets)
    rows = [[cell(i + 1), cell(c.statement), cell(c.verdict, VERDICT_CLASS[c.verdict]),
             cell(claims_mod.effect_text(c)),
             cell(f"{c.n} decided points; {c.above.n} datasets" if c.above else c.n), cell(c.coverage)]
            for i, c in enumerate(found)]
    p.add(table(["#", "claim", "verdict", "effect [95% interval]", "comparisons", "coverage"], rows, "table-claims"))
    for i, c in enumerate(found):
        p.h2(f"{i + 1}. {c.statement}", f"claim-{c.key}")
        p.add(f'<p id="verdict-{esc(c.key)}"><strong>{esc(c.verdict)}</strong>: {esc(c.why)}</p>')
        p.add(note(f"Effect: {c.measure}. Coverage: {c.coverage}."))
        if c.above is not None:  # claim 1: each half's own verdict
            below = claims_mod.Claim(c.key, "", c.measure, share=True, verdict=c.verdict, effect=c.effect,
                                     low=c.low, high=c.high, n=c.n)
            first = claims_mod.decide(c.low, c.high, c.n, null=0.5)
            halves = [[cell(f"below {claims_mod.REFERENCE_ROWS:,} rows: boosting wins"),
                       cell(first, VERDICT_CLASS[first]), cell("share of decided points boosting was ahead on"),
                       cell(claims_mod.effect_text(below)), cell(f"{c.n} decided points")],
                      [cell(f"at or above {claims_mod.REFERENCE_ROWS:,} rows: attention catches up"),
                       cell(c.above.verdict, VERDICT_CLASS[c.above.verdict]),
                       cell("mean (attention − boosting) over datasets"),
                       cell(claims_mod.effect_text(c.above)), cell(f"{c.above.n} datasets")]]
            p.add(table(["half", "verdict", "measure", "effect [95% interval]", "comparisons"], halves,
                        f"table-claim-{c.key}-halves"))
            p.add(note("Each point's and dataset's verdict is the standings view's, as the overview and the "
                       "sample-size page read it; the datasets ahead, equivalent, behind and undetermined, each with "
                       "its interval over folds, are on the sample-size page. " + VERDICT_NOTE))
        if c.cells:
            ids = ", ".join(f"'{x}'" for x in c.cells[:200])
            p.add(f"<details><summary>{len(c.cells)} cells behind it, and the query that lists them</summary>"
                  f"<pre>attnbench query \"SELECT * FROM scores WHERE cell_id IN ({esc(ids)})\"</pre></details>")
    return p
