"""The answer is printed, not typed: `attnbench answer REF` prints it from a shipped reference's `standings`
view, docs/STUDY.md holds that output whole and README.md its summary, and both fail here when they
differ from what the command prints for the shipped reference now."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats
from shipped import exported

from pipeline.data import references
from pipeline.data.store import Store
from pipeline.records import VERDICT_MARGIN, Verdict
from pipeline.report import answer_text
from pipeline.report.stats.verdicts import ratio

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(answer_text.DOC_BLOCK, re.S)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> str:
    return str(exported(tmp_path_factory, "study-every-dataset", tmp_path_factory.mktemp("answer") / "study.duckdb"))


@pytest.fixture(scope="module")
def printed(study: str) -> str:
    """What `attnbench answer study-every-dataset` prints (seconds to compute: once for the module)."""
    return answer_text.markdown(study, "study-every-dataset")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory) -> str:
    return str(exported(tmp_path_factory, "study-tuned-slice", tmp_path_factory.mktemp("answer") / "tuned.duckdb"))


def blocks(doc: Path) -> list[re.Match]:
    return list(BLOCK.finditer(doc.read_text(encoding="utf-8")))


def test_the_study_doc_holds_what_the_command_prints(printed: str):
    found = [m for m in blocks(REPO / "docs" / "STUDY.md") if not m["what"]]
    assert [m["ref"] for m in found] == ["study-every-dataset"]
    assert found[0]["text"] == printed


def test_the_study_doc_holds_what_tuning_changes_as_printed(tuned: str):
    found = [m for m in blocks(REPO / "docs" / "STUDY.md") if m["what"] == "tuning "]
    assert [m["ref"] for m in found] == ["study-tuned-slice"]
    text = answer_text.tuning(tuned, "study-tuned-slice")
    assert found[0]["text"] == text
    # Its figures are the Tuning page's: each searched model's mean tuned − default, and one fold a dataset.
    from pipeline.report.data import ReportData
    from pipeline.report.stats import tuned as tn

    data = ReportData.load(tuned)
    found_entries = tn.entries(data.cells, data.trials)
    pairs = tn.pairs_table(tn.slice_cells(data.cells, found_entries), found_entries, folds=3)
    assert len(pairs) == 3
    for r in pairs.itertuples(index=False):
        assert f"| {r.tuned} | {r.splits} | {r.default:.4f} | {r.tuned_score:.4f} | " in text
    assert "8 tasks, one fold each" in text and not re.search(r"\blevel\b", text)


def test_every_answer_block_in_the_docs_is_what_the_command_prints(tmp_path: Path, tmp_path_factory):
    """Each `<!-- answer [summary |tuning |claims ]REF -->` block of README.md and docs/*.md holds what `attnbench
    answer REF` prints for the shipped reference now (whole, its summary, its tuning or its claims part), and
    docs/QUERIES.md's standings table what its query gives on the study: tools/print_answers.py, which prints
    them, would change nothing."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("print_answers", REPO / "tools" / "print_answers.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    seen = [(doc.name, m["what"], m["ref"]) for doc in tool.DOCS for m in blocks(doc)]
    assert ("STUDY.md", "summary ", "study-lite") in seen and ("README.md", "summary ", "study-every-dataset") in seen
    # On the session's exports of the shipped references, as the tool itself would export them.
    files = {name: str(exported(tmp_path_factory, name, tmp_path / f"{name}.duckdb")) for name in references.shipped()}
    assert tool.main(["--check"], files) == 0  # (it names the file that differs)


def test_the_readme_holds_its_summary(study: str):
    found = blocks(REPO / "README.md")
    assert [(m["what"], m["ref"]) for m in found] == [("summary ", "study-every-dataset")]
    assert found[0]["text"] == answer_text.summary_of(study) + "\n"


def test_the_command_prints_it(study: str):
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "answer", study], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == answer_text.markdown(study, "study.duckdb")


def test_its_counts_are_the_standings_verdicts_and_never_say_level(study: str, printed: str):
    text = printed
    assert not re.search(r"\blevel\b", text)
    p = answer_text.pairs(study)
    big = answer_text.largest(p)
    rows = [line for line in text.splitlines() if line.startswith("| ") and line.count("|") == 10
            and line.split("|")[1].strip() in set(big.dataset)]  # the per-dataset table's, not the per-entry one's
    assert len(rows) == len(big) == big.dataset.nunique()
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        row = big[big.dataset == cells[0]].iloc[0]
        word = cells[-1].split(" (")[0]  # an undetermined one goes on to say how close it came
        assert word == row.verdict and Verdict(word)  # a member's word
        if word == Verdict.UNDETERMINED and row.n_splits >= 2:
            assert cells[-1].startswith(f"undetermined ({row.power}): differences under ±{row.detectable:.3f}"), cells
            assert f"on these {row.n_splits} splits" in cells[-1]
            assert (f"±{row.detectable_at_cap:.3f} at {row.cap_splits}" in cells[-1]) == (row.cap_splits > row.n_splits)
        assert int(cells[-2]) == row.n_splits
    counts = big.verdict.value_counts()
    for v in answer_text.ORDER:
        if counts.get(v.value, 0):
            assert f"{v.value} on {counts[v.value]}" in text.splitlines()[1]
    # The splits each verdict rests on, counted: a pick among the entries run on the first repeat only rests on 3
    counts = big.n_splits.value_counts()
    assert set(counts.index) == {3, 15} and counts.sum() == len(big)
    assert (f"(3-fold cross-validation, 15 splits on {counts[15]} datasets and 3 splits on {counts[3]} datasets"
            in text.splitlines()[1]), text.splitlines()[1]
    # Datasets whose repeats are still running are counted apart: their verdicts are interim, not the cap's
    # (8 of 35 on 2026-11-29 while issue 58's repeats ran, none once they had; the next test reads a shortfall).
    short = int((big.n_splits < big.planned).sum())
    said = text.splitlines()[1]
    assert (f"; {short} dataset{'s' if short != 1 else ''} short of the splits planned" in said) == (short > 0), said
    assert ("short of the splits planned" in said) == (short > 0), said
    # The sizes where attention is surely behind on average, written apart: "4,096 and 10,000", never
    # "4,096, 10,000", which reads as one list of numbers (the two of 2026-11-30).
    below = [f"{r['size']:,}" for r in answer_text.by_size(p) if r["hi"] < 0]
    words = " and ".join(filter(None, [", ".join(below[:-1]), *below[-1:]]))
    assert (f"behind on average at {words} training rows" if below else "never surely behind on average") in said, said


def test_a_dataset_not_converged_names_the_model_still_improving(study: str, printed: str):
    """A dataset not converged at its largest size names the model behind, still improving when its budget ran
    out (the standings' own flag for that side), and the lead it holds the other to."""
    big = answer_text.largest(answer_text.pairs(study))
    nc = big[big.verdict == Verdict.NOT_CONVERGED.value]
    assert len(nc) >= 1  # letter, on 2026-11-30
    line = next(x for x in printed.splitlines() if x.startswith("**Not converged:** "))
    for r in nc.itertuples(index=False):
        behind, bound = (r.versus_model, r.versus_bound) if r.diff > 0 else (r.model, r.model_bound)
        assert bound  # the side behind is the one the standings found still improving
        assert f"{r.dataset}, where " in line and f"but {behind} was still improving" in line, line


def test_a_dataset_short_of_its_planned_splits_is_said_interim(study: str):
    """The shipped study's pairs with one and then two datasets' largest-size splits cut below their plan (as
    while their repeats run): the summary counts them apart, and with none short it says nothing of it."""
    p = answer_text.pairs(study).pipe(lambda f: f.assign(planned=f.n_splits))  # every pair at its plan
    big = answer_text.largest(p)
    assert "short of the splits planned" not in answer_text.summary(p)
    for n in (1, 2):
        cut = p.copy()
        for i in big.index[:n]:
            cut.loc[i, "n_splits"] = cut.loc[i, "planned"] - 1
        said = answer_text.summary(cut)
        words = "1 dataset short of the splits planned, its verdict" if n == 1 else \
            "2 datasets short of the splits planned, their verdicts"
        assert f"; {words} interim until then;" in said, said


def test_the_still_undetermined_are_named_with_their_spread(study: str):
    """Each dataset undetermined at its largest size has a row with its spread (the standings view's sd), the
    splits it ran of those its suite plans there, and what those would decide with that spread; the sentence
    names exactly those whose row stays undetermined."""
    big = answer_text.largest(answer_text.pairs(study))
    und = big[big.verdict == Verdict.UNDETERMINED.value]
    to_run = answer_text.still_to_run(answer_text.attention_entries(study))
    lines = answer_text.still_undetermined(big, to_run)
    rows = {c[0]: c for c in ([x.strip() for x in line.strip("|").split("|")] for line in lines[4:])}
    assert set(rows) == set(und.dataset) and len(und) > 0
    for r in und.itertuples(index=False):
        assert rows[r.dataset][3] == f"{r.sd:.3f}"
        assert rows[r.dataset][1] == f"{r.n_splits} of {max(r.n_splits, r.planned)}"
    # the study's more_repeats: 5 repeats of 3 folds on each undetermined dataset; 3 where validation picks one of
    # issue 59's entries, which run the first repeat only (diabetes-sklearn, cbam_cnn at 128 rows, its largest size)
    assert 15 in set(und.planned) and set(und.planned) <= {3, 15}
    caps = "/".join(map(str, sorted(set(und.planned))))
    assert all(c[-1] in {v.value for v in Verdict} for c in rows.values())
    # Every one at its cap (issue 58's repeats ran whole): the verdicts are the study's, and the sentence splits
    # them by what no number of repeats could change: at the interval's floor (z · sd · √ratio, the corrected
    # interval with infinitely many splits), a dataset stays undetermined when the 95 % floor holds zero and
    # the 90 % one (two one-sided tests) reaches past the margin.
    assert (und.n_splits == und.planned).all()
    r = ratio(folds=3)
    floor95, floor90 = (stats.norm.ppf(q) * und.sd * math.sqrt(r) for q in (0.975, 0.95))
    never = und[(und["diff"].abs() <= floor95) & (und["diff"].abs() + floor90 > VERDICT_MARGIN)]
    more = und[~und.dataset.isin(never.dataset)]
    # At their caps, the verdicts are the study's once every cell has run; while the attention entries of a chunked
    # study have cells to run, validation's pick among them, and so a verdict, may still change.
    final = (f"no more splits are planned there, but while {to_run:,} cells of the attention entries have still to run, "
             "validation's pick, and so a verdict, may change." if to_run else
             "decided once there, these are the study's verdicts.")
    assert lines[0].startswith(f"**Still undetermined: {len(und)} datasets**, each at all the splits its suite plans "
                               f"there ({caps}): {final}")
    done = answer_text.still_undetermined(big)
    assert done[0].startswith(f"**Still undetermined: {len(und)} datasets**, each at all the splits its suite plans "
                              f"there ({caps}): decided once there, these are the study's verdicts.")
    assert f"could decide {len(more)} of them ({', '.join(sorted(more.dataset))}); " in lines[0], lines[0]
    assert f"could decide the other {len(never)} ({', '.join(sorted(never.dataset))}): " in lines[0], lines[0]
    assert len(never) > 0
    few = int((und.n_splits <= 3).sum())  # those picked among issue 59's entries, on the first repeat only
    assert few > 0 and lines[0].endswith(f"On the {few} of them that rest on 3 splits or fewer, the spread is itself a "
                                         "rough estimate, and so is what it says more repeats could do."), lines[0]


def test_while_repeats_run_the_still_undetermined_are_a_forecast(study: str):
    """With splits still to run on a dataset (its n_splits below the plan, as while issue 58's repeats ran), the
    sentence forecasts what the planned splits would leave undetermined, naming exactly those whose row says so."""
    big = answer_text.largest(answer_text.pairs(study))
    und = big[big.verdict == Verdict.UNDETERMINED.value]
    running = big.copy()
    first = und[und.planned == 15].index[0]
    running.loc[first, "n_splits"] = 8
    lines = answer_text.still_undetermined(running)
    caps = "/".join(map(str, sorted(set(und.planned))))
    assert lines[0].startswith(f"**Still undetermined: {len(und)} datasets** ({len(und) - 1} of them at all the "
                               f"splits their suite plans there: {caps}).")
    rows = {c[0]: c for c in ([x.strip() for x in line.strip("|").split("|")] for line in lines[4:])}
    assert rows[und.dataset[first]][1] == "8 of 15"
    stays = sorted(d for d, c in rows.items() if c[-1] == Verdict.UNDETERMINED.value)
    assert lines[0].endswith(f"undetermined: {', '.join(stays)}. A spread measured on few splits is itself rough: "
                             "this is a forecast; the verdict at the cap is what counts.")


def test_what_it_holds_and_which_data_favours_attention_are_the_files(study: str, printed: str):
    from pipeline.data.store import Store
    from pipeline.report.stats import traits as tr

    q = Store(study, create=False).query
    text = printed
    done, planned = q("SELECT count(*) AS n FROM current_results").n[0], q(
        "SELECT count(DISTINCT cell_id) AS n FROM suite_cells").n[0]
    assert f"holds {done:,} finished and no failed cells of the {planned:,} its suite plans" in text
    big = answer_text.largest(answer_text.pairs(study))
    with Store(study, create=False).connect(read_only=True) as con:
        traits = tr.dataset_traits(con, sorted(big.dataset))
    gap = big.rename(columns={"diff": "gap"})[big.verdict.isin([v.value for v in answer_text.COMPARED_VERDICTS])]
    tests = tr.favours(traits, gap[["dataset", "gap"]]).dropna(subset=["q"]).sort_values(["q", "trait"])
    line = next(x for x in text.splitlines() if x.startswith("**Which data favours attention**"))
    best = tests.iloc[0]
    assert f"{tr.SHORT[best.trait]} (ρ {best.rho:+.2f}, q {best.q:.3f}".replace("-", "−") in line
    assert ("a null result" in line) == bool((tests.q >= 0.05).all())
    # rows surviving is in part the trend by training size (the gap is taken at each dataset's largest size)
    rows_kept = bool(((tests.trait == "log10_rows") & (tests.q < 0.05)).any())
    assert ("in part repeats the trend by training size above" in line) == rows_kept, line


def test_the_study_figures_typed_beside_the_blocks_are_the_references(study: str):
    """The few figures of the study's plan that README.md and docs/STUDY.md state outside the generated blocks
    (how many datasets, how many reach a size) are the shipped reference's own."""
    q = Store(study, create=False).query
    reach = dict(q("SELECT sample_size, count(DISTINCT dataset) AS n FROM suite_cells GROUP BY 1").itertuples(
        index=False, name=None))
    n_datasets = int(q("SELECT count(DISTINCT dataset) AS n FROM suite_cells").n[0])
    repeated = int(q("SELECT count(DISTINCT dataset) AS n FROM suite_cells WHERE repeat > 0").n[0])
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    study_doc = " ".join((REPO / "docs" / "STUDY.md").read_text(encoding="utf-8").split())
    checks = [(readme, r"the shipped study \(\[docs/STUDY.md\]\(docs/STUDY.md\)\): (\d+) real datasets", n_datasets),
              (readme, r"repeated 5 times \(15 splits\) on the (\d+) datasets where 3 folds could not decide", repeated),
              (study_doc, r"10,000 rows on the (\d+) that reach it", reach["10000"]),
              (study_doc, r"only (\d+) datasets reach 12,288 training rows", reach["12288"])]
    for text, pattern, want in checks:
        found = re.search(pattern, text)
        assert found and int(found[1]) == want, (pattern, found and found[1], want)


def test_it_prints_the_counts_at_both_margins_and_any_margin_on_asking(study: str, printed: str):
    """Issue 82 item 3: the pre-registered ±0.005 stays the headline; ±0.01 beside it, labelled; `--margin M`
    reads any. Each count is recomputed here from the splits' intervals at that margin."""
    from pipeline.report.margin_text import reread
    from pipeline.report.stats.verdicts import from_row

    big = answer_text.largest(answer_text.pairs(study))
    said = printed.splitlines()[1]
    assert "±0.005 margin, pre-registered" in said
    wider = [from_row(r).at(0.01).verdict for r in big.itertuples(index=False)]
    assert sum(v is Verdict.EQUIVALENT for v in wider) >= int((big.verdict == "equivalent").sum())
    words = ", ".join(f"{v.value} on {wider.count(v)}" for v in answer_text.ORDER if wider.count(v))
    assert f"At ±0.01 (the field's usual region of practical equivalence, Benavoli et al. 2017): {words} of 35" in said
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "answer", study, "--margin", "0.02"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    at = reread(big, 0.02)
    assert out.stdout.startswith(f"At ±0.02: equivalent on {int((at.verdict == 'equivalent').sum())}")
    assert [from_row(r).at(0.02).verdict.value for r in big.itertuples(index=False)] == at.verdict.tolist()
    bad = subprocess.run([sys.executable, "-m", "pipeline.cli", "answer", study, "--margin", "2"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines()[-1].endswith("--margin 2 is not a margin of accuracy or R² (0 to 1)")
