"""The answer in Markdown, printed from a results file (``attnbench answer REF``): what the README and
docs/STUDY.md say of the study is this text, and tests/test_answer.py fails when they differ from it.

Every figure comes from the ``standings`` view, the verdict every page reads (docs/QUERIES.md): the best
attention network against the best gradient-boosting model, each its family's pick by mean validation
score on the task; per training size the datasets by verdict, with the mean difference over datasets and
its 95% t-interval (the datasets are independent: they are the units); per dataset at its largest size the
difference, its Nadeau–Bengio corrected interval over the splits, and the verdict, with the dataset's
OpenML id and rows. Nothing in it depends on when or where it is printed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.records import COMPARED_VERDICTS, VERDICT_MARGIN, Status, Verdict
from pipeline.report import across_text, configs_text
from pipeline.report.margin_text import FIELD_MARGIN, closeness, margin_sentence
from pipeline.report.stats import standing
from pipeline.report.stats.claims import mean_interval
from pipeline.report.stats.verdicts import half_width, projected, ratio
from pipeline.report.text import counted, listed, signed, thousands
from pipeline.report.tuning_text import tuning

ATTENTION, BOOSTING = "attention network", "best gradient boosting"
OTHER_NETWORK = "best other network"
ORDER = [Verdict.AHEAD, Verdict.EQUIVALENT, Verdict.BEHIND, Verdict.UNDETERMINED, Verdict.NOT_CONVERGED]


def pairs(db: str) -> pd.DataFrame:
    """The best attention network against the best gradient-boosting model, per task, from ``standings``, with the
    splits both of the pair were planned on (``planned``: what the pair's verdict can rest on at most)."""
    return Store(db, create=False).query(
        "SELECT s.dataset, s.sample_size, s.n_train, s.n_valid, s.model, s.versus_model, s.diff, s.lo, s.hi, "
        "s.n_splits, s.folds, s.verdict, s.sd, s.model_bound, s.versus_bound, coalesce(c.planned, s.n_splits) AS planned, "
        "s.eq_lo, s.eq_hi, s.margin, s.detectable, s.cap_splits, s.detectable_at_cap, s.power, s.metric, "
        "d.openml_id, d.n_rows, d.task_type FROM standings s "
        "JOIN datasets d USING (dataset) LEFT JOIN (WITH p AS (SELECT DISTINCT dataset, split_key, sample_size, model, "
        "repeat, fold FROM plan) SELECT a.dataset, a.split_key, a.sample_size, a.model, b.model AS versus_model, "
        "count(*) AS planned FROM p a JOIN p b USING (dataset, split_key, sample_size, repeat, fold) GROUP BY ALL) c "
        "USING (dataset, split_key, sample_size, model, versus_model) "
        "WHERE s.family_best AND s.family = ? AND s.versus = ? "
        "ORDER BY s.dataset, s.n_train", [ATTENTION, BOOSTING], prepare=temporary_views)


def by_size(p: pd.DataFrame) -> list[dict[str, Any]]:
    """Per training size (the planned size label; 'all' apart), the datasets by verdict and the mean
    difference over those compared."""
    rows = []
    sized = p[p.sample_size != "all"]
    for label, g in sorted(sized.groupby("sample_size"), key=lambda kv: int(kv[0])):
        counts = g.verdict.value_counts()
        compared = g[g.verdict.isin([v.value for v in COMPARED_VERDICTS])]
        mean, lo, hi = mean_interval(compared["diff"].to_numpy(dtype=float))
        rows.append({"size": int(label), "n": len(compared), **{v.value: int(counts.get(v.value, 0)) for v in ORDER},
                     "mean": mean, "lo": lo, "hi": hi})
    return rows


def largest(p: pd.DataFrame) -> pd.DataFrame:
    """Each dataset's pair at its largest training size."""
    return p.sort_values("n_train").groupby("dataset", sort=True).tail(1).sort_values("dataset")


def splits_text(big: pd.DataFrame) -> str:
    """How many splits the datasets' verdicts rest on: "15 splits on 26 datasets and 3 splits on 9" (most first),
    so that a verdict resting on one repeat of the folds (a pick among entries run on the first repeat only) is
    counted, not hidden in a range."""
    counts = big.n_splits.astype(int).value_counts().sort_index(ascending=False)
    return listed([f"{counted(n, 'split')} on {counted(k, 'dataset')}"
                   for n, k in counts.items()])


def summary(p: pd.DataFrame) -> str:
    """The answer in two sentences: the per-dataset verdicts at each one's largest size, and the sizes at which
    the mean difference over datasets is surely below (or above) zero."""
    big = largest(p)
    counts = big.verdict.value_counts()
    words = ", ".join(f"{v.value} on {int(counts.get(v.value, 0))}" for v in ORDER if counts.get(v.value, 0))
    folds = sorted({int(f) for f in p.folds.dropna()})
    splits = splits_text(big)
    short = big[big.n_splits < big.planned]  # repeats still to run there: their verdicts are not yet the cap's
    interim = (f"; {len(short)} dataset{'s' if len(short) != 1 else ''} short of the splits planned, "
               f"{'their verdicts' if len(short) != 1 else 'its verdict'} interim until then" if len(short) else "")
    compared = big[big.verdict.isin([v.value for v in COMPARED_VERDICTS])]
    mean, lo, hi = mean_interval(compared["diff"].to_numpy(dtype=float))
    sizes = by_size(p)
    below = [f"{r['size']:,}" for r in sizes if r["hi"] < 0]
    above = [f"{r['size']:,}" for r in sizes if r["lo"] > 0]
    trend = (f"behind on average at {listed(below)} training rows" if below else "never surely behind on average")
    trend += f" and ahead on average at {listed(above)}" if above else ", never surely ahead on average"
    return (f"Per dataset at its largest size, the best attention network against the best gradient-boosting model "
            f"(each picked by validation) is {words} of {len(big)} datasets ({'/'.join(map(str, folds))}-fold "
            f"cross-validation, {splits}{interim}; Nadeau–Bengio corrected 95% intervals, "
            f"±{VERDICT_MARGIN} margin, pre-registered). {margin_sentence(big, FIELD_MARGIN)} Over datasets, the mean difference at each one's largest size is {signed(mean)} [{signed(lo)}, {signed(hi)}]; "
            f"by training size, attention is {trend} (95% t-intervals over datasets).")


def attention_entries(db: str) -> pd.DataFrame:
    """The attention entries the file holds (those with a finished cell): per entry its name, the training sizes it
    finished cells at, the precision its trials ran in (bf16 where the CPU has it under amp auto), its planned
    cells and those that ran (finished or failed)."""
    return Store(db, create=False).query(
        "SELECT e.model, any_value(e.model_name) AS name, list(DISTINCT e.sample_size) FILTER (WHERE e.status = ?) "
        "AS sizes, list(DISTINCT r.precision ORDER BY r.precision) FILTER (WHERE r.status = ? AND r.precision IS NOT "
        "NULL) AS precision, count(*) AS planned, count(*) FILTER (WHERE e.status <> ?) AS ran "
        "FROM expected_cells e LEFT JOIN current_results r USING (cell_id) "
        "WHERE e.model IN (SELECT model FROM standings WHERE family = ?) GROUP BY e.model "
        "HAVING count(*) FILTER (WHERE e.status = ?) > 0 ORDER BY e.model",
        [Status.OK.value, Status.OK.value, Status.MISSING.value, ATTENTION, Status.OK.value], prepare=temporary_views)


def still_to_run(held: pd.DataFrame) -> int:
    """The attention entries' planned cells that have not run yet: while any has not, validation picks the best
    attention network among fewer entries than planned, and a pick and its verdict may change."""
    return int((held.planned - held.ran).sum()) if len(held) else 0


def interim(held: pd.DataFrame) -> str:
    """The sentence that says an answer rests on a study still running, or nothing once every cell has run."""
    left = still_to_run(held)
    if not left:
        return ""
    return (f"**Interim:** the attention entries have run {int(held.ran.sum()):,} of the {int(held.planned.sum()):,} "
            f"cells planned for them ({left:,} to go). Validation picks the best attention network among the entries "
            "that ran, so a pick, and its verdict, may change as the rest run.")


def architectures(db: str) -> str:
    """Which attention entries the file holds, at which training sizes (the datasets planned at each) and in
    which precision, and which of attnbench's own attention architectures it does not hold: what "the best
    attention network" was picked among; while some of their cells have still to run, :func:`interim` first."""
    from pipeline.models.registry import own_of_kind
    from pipeline.report.data import PLANNED

    held = attention_entries(db)

    def span(sizes: list[str], unit: str = " training rows") -> str:
        rows = sorted(int(x) for x in sizes if str(x).isdigit())
        words = ([f"{rows[0]:,}" if len(rows) == 1 else f"{rows[0]:,} to {rows[-1]:,}"] if rows else [])
        words = [f"{words[0]}{unit}"] if words else []
        return " and ".join(words + (["all rows"] if "all" in sizes else []))

    def precision(p: Any) -> str:
        kept = [str(x) for x in p if x is not None] if isinstance(p, (list, tuple, np.ndarray)) else []
        return f", in {' and '.join(kept)}" if kept else ""

    absent = [m for m in own_of_kind("attention") if m not in set(held.name)]
    lacks = (f"Not in it: {', '.join(absent)} (attnbench's other attention architectures)." if absent else "")
    if len(held) <= 1:  # one entry or none: a sentence
        entries = "; ".join(f"{r.model} ({span(list(r.sizes))}{precision(r.precision)})" for r in held.itertuples())
        return f"The attention entry it holds: {entries or 'none'}." + (f" {lacks}" if lacks else "")
    # What each adds: the datasets where validation picks it at their largest size (the summary's verdicts); and
    # for an entry still running, how much of its plan the figures rest on.
    q = Store(db, create=False).query
    picked = standing.standings(q("SELECT * FROM standings", prepare=temporary_views)).attention.value_counts().to_dict()
    planned = q(PLANNED, prepare=temporary_views)

    def sizes(model: str) -> str:
        at = planned[planned.model == model]
        each = sorted(zip(at.sample_size.astype(str), at.datasets),
                      key=lambda kv: (not kv[0].isdigit(), int(kv[0]) if kv[0].isdigit() else 0))
        return ", ".join(f"{int(z):,} ({n})" if z.isdigit() else f"all rows ({n})" for z, n in each)

    lines = ["| attention entry | training rows (datasets planned) | precision | cells run of planned | "
             "the pick at the largest size |", "| --- | --- | --- | --- | ---: |"]
    for r in held.itertuples(index=False):
        n = int(picked.get(r.model, 0))
        ran = f"{r.ran:,} of {r.planned:,}" + (", running" if r.ran < r.planned else "")
        lines.append(f"| {r.model} | {sizes(r.model)} | {precision(r.precision).removeprefix(', in ') or '–'} | {ran} | "
                     f"{n} dataset{'s' if n != 1 else ''} |")
    head = interim(held)
    return ((f"{head}\n\n" if head else "") + "The attention entries it holds, among which validation picks the best "
            "(the pick: on how many datasets validation picks it, at each one's largest size):\n\n" + "\n".join(lines)
            + (f"\n\n{lacks}" if lacks else ""))


def joined(text: str) -> str:
    """``architectures``' text after the summary: a sentence goes on its paragraph, a table after a blank line."""
    return ("\n\n" if "\n" in text else " ") + text


def summary_of(db: str) -> str:
    """The summary the README quotes: :func:`summary`, then which attention entries it rests on, then what a
    second configuration of one of them changes (:func:`configs_text.published_size`)."""
    second = configs_text.published_size(db)
    return summary(pairs(db)) + joined(architectures(db)) + (f"\n\n{second}" if second else "")


# "However many repeats run": splits enough that the corrected interval is at its floor (z · spread · √ratio).
ANY_NUMBER = 10**6


def not_converged(big: pd.DataFrame) -> str:
    """The datasets not converged at their largest size, each with the model that was still improving when its
    budget ran out: the one behind, whose deficit a longer fit might close (the standings' rule: a lead over
    a model stopped early is not called)."""
    rows = big[big.verdict == Verdict.NOT_CONVERGED.value]
    said = []
    for r in rows.itertuples(index=False):
        ahead, behind = (r.model, r.versus_model) if r.diff > 0 else (r.versus_model, r.model)
        said.append(f"{r.dataset}, where {ahead} leads {behind} ({signed(r.diff)} [{signed(r.lo)}, {signed(r.hi)}]) "
                    f"but {behind} was still improving when its epochs, rounds or time ran out")
    if not said:
        return ""
    return (f"**Not converged:** {'; '.join(said)}: a lead over a model stopped while still improving is not called "
            "either way.")


def still_undetermined(big: pd.DataFrame, to_run: int = 0) -> list[str]:
    """The datasets undetermined at their largest size, with their fold-to-fold spread (the differences'
    standard deviation over the splits) and what it lets the splits their suite plans there (``planned``: its
    repeats × folds, 15 where the study's more_repeats apply) decide: the corrected interval such a spread gives
    there, and the verdict if the difference and the spread held. The correction keeps that interval at least
    z · spread · √(1/(k − 1)) wide however many repeats run, so a dataset whose difference is small against its
    spread stays undetermined: a finding about the data, not a want of compute. While ``to_run`` cells of the
    attention entries have still to run (:func:`still_to_run`), no verdict is yet the study's: a pick may change."""
    und = big[(big.verdict == Verdict.UNDETERMINED.value) & (big.n_splits >= 2)]
    if und.empty:
        return []
    rows, stays, never = [], [], []
    for r in und.itertuples(index=False):
        folds, n = int(r.folds), int(r.n_splits)
        cap = max(n, int(r.planned))
        now = half_width(float(r.sd), n, ratio(folds=folds))
        bound = (bool(r.model_bound), bool(r.versus_bound))
        at_cap = projected(float(r.diff), float(r.sd), cap, folds=folds, bound=bound)
        limit = projected(float(r.diff), float(r.sd), ANY_NUMBER, folds=folds, bound=bound)
        floor = limit.high - limit.diff
        if at_cap.verdict is Verdict.UNDETERMINED:
            stays.append(str(r.dataset))
        if limit.verdict is Verdict.UNDETERMINED:
            never.append(str(r.dataset))
        rows.append(f"| {r.dataset} | {n} of {cap} | {signed(r.diff)} | {signed(float(r.sd), sign=False)} | "
                    f"±{signed(now, sign=False)} | ±{signed(at_cap.high - at_cap.diff, sign=False)} | "
                    f"±{signed(floor, sign=False)} | {at_cap.verdict} |")
    caps = sorted({max(int(n), int(p)) for n, p in zip(und.n_splits, und.planned)})
    reached = int((und.n_splits >= und.planned).sum())
    cap_words = "/".join(map(str, caps))
    spread = ("The fold-to-fold spread (standard deviation of the difference over the splits) sets how wide the "
              "corrected interval can get: at the planned splits and, however many repeats run, never narrower than "
              "its column at any number.")
    final = ("decided once there, these are the study's verdicts." if not to_run else
             f"no more splits are planned there, but while {to_run:,} cells of the attention entries have still to run, "
             "validation's pick, and so a verdict, may change.")
    few = int((und.n_splits <= 3).sum())  # a spread over 3 splits (2 degrees of freedom) is itself a rough estimate
    rough = (f" On the {few} of them that rest on 3 splits or fewer, the spread is itself a rough estimate, and so "
             "is what it says more repeats could do." if few else "")
    if reached == len(und):  # every one decided once at its cap: what more repeats could still do
        more = [d for d in stays if d not in never]
        head = (f"**Still undetermined: {len(und)} datasets**, each at all the splits its suite plans there "
                f"({cap_words}): {final} {spread} If each difference and "
                f"spread held, repeats past the plan could decide {len(more)} of them ({', '.join(more)}); "
                f"no number of repeats could decide the other {len(never)} ({', '.join(never)}): the "
                f"narrowest interval their spread allows holds zero and reaches past the ±{VERDICT_MARGIN} margin. "
                "That is a finding about the data, not a want of compute." + rough)
    else:
        head = (f"**Still undetermined: {len(und)} datasets** ({reached} of them at all the splits their suite "
                f"plans there: {cap_words}). {spread} If each difference and spread held, the planned splits would "
                f"still leave {len(stays)} of them undetermined{': ' + ', '.join(stays) if stays else ''}. A spread measured on few splits is "
                "itself rough: this is a forecast; the verdict at the cap is what counts.")
    return [head, "", "| dataset | splits run of planned | difference | spread | ±95% now | ±95% at the planned splits | "
            "±95% at any number | at the planned splits, if it held |", "| --- | ---: | --- | --- | --- | --- | --- | --- |",
            *rows]


def favours(db: str, big: pd.DataFrame) -> str:
    """Which data favours attention, as the Sample size page's section computes it
    (:func:`pipeline.report.stats.traits.favours`): the rank correlation over datasets of each characteristic
    with the gap at each one's largest size (pairs with a difference), Benjamini–Hochberg across them."""
    from pipeline.report.stats import traits as tr

    with Store(db, create=False).connect(read_only=True) as con:
        traits = tr.dataset_traits(con, sorted(big.dataset))
    gap = big[big.verdict.isin([v.value for v in COMPARED_VERDICTS])].rename(columns={"diff": "gap"})[["dataset", "gap"]]
    tests = tr.favours(traits, gap).dropna(subset=["q"]).sort_values(["q", "trait"])
    if tests.empty:
        return ""
    kept = tests[tests.q < 0.05]
    said = [f"{tr.SHORT[r.trait]} (ρ {r.rho:+.2f}, q {r.q:.3f}, {r.n} datasets)".replace("-", "−")
            for r in tests.head(2).itertuples(index=False)]
    head = (f"{len(kept)} of the {len(tests)} characteristics tested survive Benjamini–Hochberg at q < 0.05"
            + (f": {', '.join(tr.SHORT[t] for t in kept.trait)}" if len(kept) else
               ", a null result on these datasets"))
    # the gap is taken at each dataset's largest size, which its rows set: a correlation with rows is in part the
    # trend with training size that the table by size shows
    sized = (" The gap is taken at each dataset's largest size, which grows with its rows, so the rows' correlation "
             "in part repeats the trend by training size above." if "log10_rows" in set(kept.trait) else "")
    return (f"**Which data favours attention** (the rank correlation of each dataset characteristic with the gap "
            f"at its largest size, over the {int(gap.dataset.nunique())} datasets with a difference; the gap is "
            f"attention − boosting, so a negative ρ favours boosting): {head}; closest "
            f"{' and '.join(said)}.{sized} A correlation over datasets is not a cause.")


def per_architecture(db: str) -> list[str]:
    """Where the file holds more than one attention entry: :func:`architectures.per_entry`'s table (each entry's
    verdicts per size against the best boosting model and the best other network, its picks and its mean
    validation rank, the race's), and the race's leaders per size, in Markdown."""
    from pipeline.report.data import PLANNED
    from pipeline.report.stats import architectures as arch

    q = Store(db, create=False).query
    s = q("SELECT * FROM standings ORDER BY ALL", prepare=temporary_views)
    t = arch.per_entry(s, q(PLANNED, prepare=temporary_views))
    if t.empty:
        return []
    out = ["| attention entry | training rows | datasets | against the best boosting model: ahead–equivalent–behind–"
           "undetermined | mean difference [95% CI]; median | against the best other network | mean difference [95% CI]; median | "
           "picked as the best attention network | mean validation rank |",
           "| --- | ---: | ---: | --- | --- | --- | --- | ---: | ---: |"]
    for r in t.to_dict("records"):
        cells = []
        for against in arch.AGAINST:
            cells += [arch.counts_text(r[f"{against} counts"]) if r[f"{against} n"] else "–",
                      "–" if r[f"{against} mean"] != r[f"{against} mean"] else
                      f"{signed(r[f'{against} mean'])} [{signed(r[f'{against} low'])}, {signed(r[f'{against} high'])}]; "
                      f"median {signed(r[f'{against} median'])}"]
        rank = ("–" if r["mean_rank"] != r["mean_rank"] else
                f"{r['mean_rank']:.2f} of {r['entries']} ({r['rank_datasets']} datasets)")
        out.append(f"| {r['model']} | {int(r['sample_size']):,} | {arch.datasets_text(r)} | " + " | ".join(cells)
                   + f" | {r['picked']} of {r['picked_of']} | {rank} |")
    leads = arch.leaders_text(s, lambda size: f"{int(size):,} rows")
    pool = arch.networks(s)
    among = f" (the best by validation of {listed(pool)} on each task, among those that ran it)" if pool else ""
    return ["**Each attention architecture** (every attention entry of the reference, not only the one validation "
            "picks; counts over datasets at each size, each verdict over that dataset's splits; datasets \"2 of 8\": "
            "the entry has yet to run on the rest of those its plan holds at that size, so its row is interim; the "
            f"best other network{among}):", "",
            *out, "",
            "Validation's leaders among the attention entries (the lowest mean ranks of their validation scores, over "
            f"the datasets every entry ran; the race that picks which run on at a larger size): {leads}."]


def other_networks(db: str) -> list[str]:
    """The other networks against the best boosting model per size (:func:`architectures.other_networks`), in
    Markdown: is it attention that falls behind, or any network?"""
    from pipeline.report.stats import architectures as arch

    s = Store(db, create=False).query("SELECT * FROM standings ORDER BY ALL", prepare=temporary_views)
    t = arch.other_networks(s)
    if t.empty:
        return []
    out = ["| other network | training rows | datasets | ahead–equivalent–behind–undetermined | "
           "mean difference [95% CI]; median | picked (best other network) |", "| --- | ---: | ---: | --- | --- | --- |"]
    for r in t.to_dict("records"):
        mean = ("–" if r["mean"] != r["mean"] else
                f"{signed(r['mean'])} [{signed(r['low'])}, {signed(r['high'])}]; median {signed(r['median'])}")
        out.append(f"| {r['model']} | {int(r['sample_size']):,} | {r['datasets']} | {arch.counts_text(r['counts'])} | "
                   f"{mean} | {r['picked'] or '–'} |")
    return ["**The other networks against boosting** (each non-attention network entry, and the best of them by "
            "validation on each task, against the best gradient-boosting model; counts over datasets at each size, "
            "each verdict over that dataset's splits; the mean over the datasets compared, 95% t-interval): whether "
            "what the attention rows show is attention's or any network's.", "", *out]


def holdings(db: str, name: str) -> str:
    """What the reference holds against what its suite plans (finished, failed), and what its trials cost."""
    q = Store(db, create=False).query
    planned = q("SELECT count(DISTINCT cell_id) AS n FROM suite_cells").n[0]
    status = q("SELECT status, count(*) AS n FROM current_results GROUP BY status")
    ok = int(status.n[status.status == Status.OK.value].sum())
    failed = int(status.n[~status.status.isin([Status.OK.value, Status.MISSING.value])].sum())
    hours = q("SELECT coalesce(sum(seconds), 0) / 3600 AS h FROM trials").h[0]
    return (f"The reference `{name}` holds {ok:,} finished and {'no' if not failed else f'{failed:,}'} failed cells of "
            f"the {int(planned):,} its suite plans; their trials took {float(hours):.1f} trial-hours.")


def claim_one(db: str) -> str:
    """Claim 1 of the design notes, in its two halves, as the Claims page decides it from the same view."""
    from pipeline.report.stats.claims import claim_sample_size

    standings = Store(db, create=False).query("SELECT * FROM standings ORDER BY ALL", prepare=temporary_views)
    c = claim_sample_size(standings)
    return f"Claim 1 of the design notes, \"{c.statement}\": **{c.verdict}**. {c.why}"


def claims(db: str) -> list[str]:
    """The design notes' five claims as the Claims page decides them (:func:`pipeline.report.stats.claims.verdicts`'s
    two parts, claim 1 and ``tested_on_cells``, on the same file): a table of verdict, effect and comparisons, then each claim's reason. Empty
    where the file tests none of claims 2-5 (no ablation pair, no attention map)."""
    from pipeline.report.data import ATTENTION, CONFIGURED, DATASETS, ReportData, read_frames
    from pipeline.report.stats import claims as claims_mod

    tested = claims_mod.tested_on_cells(*read_frames(db, CONFIGURED, ATTENTION, DATASETS))
    if not any(c.n for c in tested):
        return []  # (decided on the three frames those claims read, not on the whole report's)
    # verdicts() is claim 1 on the standings, then these: claim 1 needs the report's standings (legacy kinds)
    found = [claims_mod.claim_sample_size(ReportData.load(db).standings), *tested]
    out = ["**The design notes' claims** (as the report's Claims page decides them: supported or contradicted "
           "where the 95% interval lies on one side of no effect, else not enough data):", "",
           "| claim | verdict | effect [95% interval] | comparisons | coverage |", "| --- | --- | --- | --- | --- |"]
    for i, c in enumerate(found):
        n = f"{c.n} decided points; {c.above.n} datasets" if c.above is not None else str(c.n)
        out.append(f"| {i + 1}. {c.statement} | {c.verdict} | {claims_mod.effect_text(c)} | {n} | {c.coverage} |")
    out.append("")
    out += [f"{i + 1}. **{c.verdict}**: {c.why} (Effect: {c.measure}.)" for i, c in enumerate(found)]
    return out


# A block of README.md or docs/*.md that holds what `attnbench answer REF` prints (whole, or one part of it):
# tools/print_answers.py rewrites them, tests/test_answer.py checks them.
DOC_BLOCK = r"(<!-- answer (?P<what>summary |tuning |claims )?(?P<ref>[\w-]+) -->\n)(?P<text>.*?)(<!-- /answer -->)"


def part(db: str, name: str, what: str | None) -> str:
    """What a :data:`DOC_BLOCK` of ``what`` (``summary ``, ``tuning ``, ``claims `` or None: the whole answer) holds
    for the reference ``name`` exported to ``db``."""
    if what == "summary ":
        return summary_of(db) + "\n"
    if what == "tuning ":
        return tuning(db, name)
    if what == "claims ":
        return "\n".join([f"<!-- printed by `attnbench answer {name}`; tests/test_answer.py checks it -->",
                          holdings(db, name), "", *claims(db)]) + "\n"
    return markdown(db, name)


def markdown(db: str, name: str) -> str:
    """The answer's Markdown for the results file ``db`` of the reference ``name``: the summary (what the
    README quotes), then the counts per training size and the verdict per dataset."""
    p = pairs(db)
    if p.empty:
        return f"The reference {name!r} holds no attention network beside a gradient-boosting model.\n"
    big = largest(p)
    out = [f"<!-- printed by `attnbench answer {name}`; tests/test_answer.py checks it -->",
           summary(p) + joined(architectures(db)), "",
           holdings(db, name), "", claim_one(db), "",
           "| training rows | datasets in the mean | ahead | equivalent | behind | undetermined | not converged | "
           "mean difference [95% CI over datasets] |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in by_size(p):
        out.append(f"| {r['size']:,} | {r['n']} | " + " | ".join(str(r[v.value]) for v in ORDER)
                   + f" | {signed(r['mean'])} [{signed(r['lo'])}, {signed(r['hi'])}] |")
    out += ["", "Each dataset at its largest size (difference: attention − boosting test accuracy or R², mean over "
            "splits; interval: Nadeau–Bengio corrected 95%; an undetermined verdict says the half-width a difference must "
            "pass to be told apart on its splits, and at the repeat cap, and whether it is underpowered (no repeats to "
            "the cap could show even a true zero equivalent) or inconclusive (they could)):", "",
            "| dataset | OpenML | rows | training rows | attention | boosting | difference [95% CI] | splits | verdict |",
            "| --- | ---: | ---: | ---: | --- | --- | --- | ---: | --- |"]
    for r in big.itertuples(index=False):
        oid = "–" if pd.isna(r.openml_id) else str(int(r.openml_id))
        out.append(f"| {r.dataset} | {oid} | {int(r.n_rows):,} | {thousands(r.n_train)} | {r.model} | {r.versus_model} | "
                   f"{signed(r.diff)} [{signed(r.lo)}, {signed(r.hi)}] | {int(r.n_splits)} | {closeness(r)} |")
    unsettled = not_converged(big)
    if unsettled:
        out += ["", unsettled]
    spread = still_undetermined(big, still_to_run(attention_entries(db)))
    if spread:
        out += ["", *spread]
    traits = favours(db, big)
    if traits:
        out += ["", traits]
    each = per_architecture(db)
    if each:
        out += ["", *each]
    nets = other_networks(db)
    if nets:
        out += ["", *nets]
    spread_over = across_text.markdown(db)
    if spread_over:
        out += ["", *spread_over]
    two = configs_text.configurations(db)
    if two:
        out += ["", *two]
    tuned = tuning(db, name)
    if tuned:
        out += ["", "**What tuning changes.**", "", *tuned.splitlines()[1:]]
    tested = claims(db)
    if tested:
        out += ["", *tested]
    return "\n".join(out) + "\n"
