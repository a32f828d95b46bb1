"""What tuning changes, in Markdown (part of ``attnbench answer REF``, and the README's and docs' tuning blocks):
the Tuning page's *Tuned beside defaults* (:mod:`pipeline.report.stats.tuned`, the same functions), where a
results file holds models both at their defaults and searched."""

from __future__ import annotations

from pipeline.data.store import Store
from pipeline.records import VERDICT_MARGIN, Status
from pipeline.report.text import signed, thousands


def tuning(db: str, name: str) -> str:
    """What tuning changes, where the file holds models both at their defaults and searched: the Tuning page's
    *Tuned beside defaults* (:mod:`pipeline.report.stats.tuned`, the same functions) in Markdown. Per dataset
    each searched model's test score at defaults and tuned; per model tuned − default with its verdict; per
    family its best against the best boosting model at defaults and tuned, the same models both ways. Empty
    where nothing was searched."""
    from pipeline.models.kinds import BOOSTING, families
    from pipeline.report.data import ReportData
    from pipeline.report.stats import aggregate as agg
    from pipeline.report.stats import tuned as tn

    searched = Store(db, create=False).query("SELECT cell_id FROM trials GROUP BY cell_id HAVING count(DISTINCT suggestion) > 1 LIMIT 1")
    if searched.empty:  # no cell ran a search: nothing to read the whole file for
        return ""
    data = ReportData.load(db)
    found = tn.entries(data.cells, data.trials)
    if not found.pairs:
        return ""
    cells = tn.slice_cells(data.cells, found)
    pooled = min((data.folds(d, k) for d, k in set(zip(cells.dataset, cells.split_key))), default=2)
    pairs = tn.pairs_table(cells, found, folds=pooled)
    ok = cells[(cells.status == Status.OK) & cells.score.notna()]
    score = ok.pivot_table(index=["dataset", "sample_size"], columns="model", values="score", aggfunc="mean")
    folds = cells.groupby(["dataset", "sample_size"])[["repeat", "fold"]].apply(lambda g: len(g.drop_duplicates()))
    n_folds = sorted({int(x) for x in folds})
    each = "one fold" if n_folds == [1] else f"{'/'.join(map(str, n_folds))} folds"

    def moved(default: float, tuned: float) -> str:
        text = f"{default:.4f} → {tuned:.4f}"
        return f"**{text}**" if abs(tuned - default) > VERDICT_MARGIN else text

    out = [f"<!-- printed by `attnbench answer {name}`; tests/test_answer.py checks it -->",
           f"Each model searched (the configuration its search selected by validation) beside its entry at defaults, "
           f"on the splits the searches ran: {len(score)} tasks, {each} each. Test "
           f"score (accuracy or R²), default → tuned; bold where tuning moved it past ±{VERDICT_MARGIN}:", "",
           "| dataset | training rows | " + " | ".join(t for _, t in found.pairs) + " |",
           "| --- | ---: |" + " --- |" * len(found.pairs)]
    order = {z: i for i, z in enumerate(agg.size_order(list(score.index.get_level_values("sample_size"))))}
    for (dataset, size), r in sorted(score.iterrows(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
        out.append(f"| {dataset} | {size if size == 'all' else thousands(float(size))} | " + " | ".join(
            moved(r[d], r[t]) if d in r and t in r and r[d] == r[d] and r[t] == r[t] else "–"
            for d, t in found.pairs) + " |")
    out += ["", f"Tuned − default per model, over those splits (interval: corrected as for {pooled}-fold "
            "cross-validation, the smallest design's, as the Tuning page pools them):", "",
            f"| searched | splits | default | tuned | tuned − default [95% CI] | verdict | better / within ±{VERDICT_MARGIN} / "
            "worse | failed |", "| --- | ---: | ---: | ---: | --- | --- | --- | ---: |"]
    for r in pairs.itertuples(index=False):
        out.append(f"| {r.tuned} | {r.splits} | {r.default:.4f} | {r.tuned_score:.4f} | {signed(r.diff)} [{signed(r.low)}, "
                   f"{signed(r.high)}] | {r.verdict} | {r.better} / {r.within} / {r.worse} | {r.failed} |")
    for family in [f for f in families(data.kinds) if f != BOOSTING]:
        g = tn.gaps(cells, data.family, found, family, data.folds)
        if g.empty:
            continue
        sums = {side: tn.gap_summary(g, side) for side in ("default", "tuned")}
        out += ["", f"The best {family} − the best gradient-boosting model, the same models both ways, over the "
                f"{sums['default']['n']} tasks: at defaults {signed(float(sums['default']['mean']))} "
                f"[{signed(float(sums['default']['low']))}, {signed(float(sums['default']['high']))}] ("
                f"{tn.gap_words(sums['default'])}); tuned {signed(float(sums['tuned']['mean']))} "
                f"[{signed(float(sums['tuned']['low']))}, {signed(float(sums['tuned']['high']))}] ({tn.gap_words(sums['tuned'])}); "
                "95% t-intervals over the tasks (different datasets)."]
    spent = data.trials[data.trials.model.isin([t for _, t in found.pairs])].groupby("model").seconds.sum() / 3600
    out += ["", f"The searches' cost, their trials' own time: {spent.sum():.1f} trial-hours; "
            + ", ".join(f"{m} {h:.1f}" for m, h in spent.sort_values(ascending=False).items()) + "."]
    return "\n".join(out) + "\n"
