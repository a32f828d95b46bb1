"""One verdict everywhere (issue 58 item 1): every page of a report built from one results file reads the same
verdict for a pair of models on a (dataset, size), and it is the `standings` view's. Each page says which pair a
verdict cell shows and which verdict (its data-pair and data-verdict attributes, pipeline/report/markup.py);
the counts the overview and the claims give are the view's counts; no page says "level". A page that decided a
pair by another rule (a mean past the margin, a plain t over folds, its own picks) would fail here."""

from __future__ import annotations

import html
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest
from shipped import exported
from tables import table_rows

from pipeline.data.store import Store
from pipeline.models.kinds import ATTENTION, BOOSTING
from pipeline.records import Verdict
from pipeline.report.pages import PAGES as ALL_PAGES
from pipeline.report.pages import claims as claims_page
from pipeline.report.pages import overview, sample_size, write_report
from pipeline.report.stats import claims, standing
from pipeline.report.stats.verdicts import Tally, pair_key

PAGES = ("index", "accuracy", "sample_size", "tuning", "claims")
CELL = re.compile(r'<td[^>]*?data-pair="([^"]*)" data-verdict="([^"]*)">(.*?)</td>', re.S)
# "level" as a verdict: a pair the folds cannot tell apart is undetermined, one within the margin equivalent
LEVEL = re.compile(r"\blevel (on|at|with)\b|\bis level\b|\blevel\)|>level<|, level,|\blevel \d")


@pytest.fixture(scope="module", params=["study-every-dataset", "study-tuned-slice"])
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, pd.DataFrame, dict]:
    root = tmp_path_factory.mktemp("one-verdict")
    db = exported(tmp_path_factory, request.param, root / f"{request.param}.duckdb")
    write_report(db, root / "reports", [spec for spec in ALL_PAGES if spec.file.removesuffix(".html") in PAGES])
    with Store(db, create=False).connect(read_only=True) as con:
        view = con.execute("SELECT * FROM standings").df()
    pages = {name: (root / "reports" / f"{name}.html").read_text(encoding="utf-8") for name in PAGES}
    return request.param, view, pages


def shown(text: str) -> str:
    """A cell's or a page's text as a reader sees it."""
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>", "", text, flags=re.S)))


def said(text: str) -> str | None:
    """The verdict a cell's words say: its first word where it is a verdict, a crossover's ahead ('N rows (…)',
    'ahead at every size') or behind ('never'); None where the words give none (one size, not measured)."""
    text = text.strip()
    for v in sorted(Verdict, key=lambda v: -len(v.value)):
        if text.startswith(v.value):
            return v.value
    if text.startswith("never"):
        return Verdict.BEHIND.value
    if re.match(r"[\d,]+ rows \(", text) or text.startswith("ahead at every size"):
        return Verdict.AHEAD.value
    return None


def test_every_page_reads_the_views_verdict_for_each_pair(report):
    name, view, pages = report
    rows = {pair_key(r.dataset, r.split_key, r.sample_size, r.model, r.versus_model): r.verdict
            for r in view.itertuples(index=False)}
    seen: dict[str, set[str]] = defaultdict(set)
    where: dict[str, list[str]] = defaultdict(list)
    for page, text in pages.items():
        for key, verdict, body in CELL.findall(text):
            key, verdict = html.unescape(key), html.unescape(verdict)
            seen[key].add(verdict)
            where[key].append(page)
            words = said(shown(body))
            assert words in (None, verdict), (page, key, verdict, shown(body))  # the words are the verdict's
            if page != "tuning":  # the tuning page pairs the models that were searched, not the view's picks
                assert key in rows, (page, key)
            if key in rows:
                assert verdict == rows[key], (page, key, verdict, rows[key])
    assert seen, "no page showed a verdict"
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}  # one verdict for a pair, on every page
    if name == "study-every-dataset":  # the standings and both crossover tables show verdicts
        assert {p for ps in where.values() for p in ps} == {"index", "sample_size"}
        assert sum("sample_size" in ps and "index" in ps for ps in where.values()) > 10  # the same pairs, both pages
    else:  # one size a dataset: the crossovers are not measured (their one size's verdict as data), and the
        # tuning page's per-task verdicts at defaults rest on the view's splits: where its pair is the view's,
        # the same verdict
        assert {p for ps in where.values() for p in ps} == {"index", "tuning"}
        assert any("tuning" in ps and key in rows for key, ps in where.items())


def test_the_counts_are_the_views_counts(report):
    name, view, pages = report
    index = pages["index"]
    heads = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", index[index.index('id="table-answer"'):].split(
        "</thead>")[0])]
    for r in table_rows(index, "table-answer"):
        size = r[0].split(" ")[0]
        size = "all" if size == "all" else size
        for family in (f for f in view.family.unique() if f != BOOSTING):
            col = f"{family} vs {BOOSTING}, per dataset"
            if col not in heads:
                continue
            here = standing.best_rows(view[view.sample_size == size], family, BOOSTING)
            assert r[heads.index(col)] == (Tally.of(here.verdict).short() if len(here) else "—"), (size, family)
    # the headline, the sample-size page's standings and claim 1's second half: at each dataset's largest size
    table = standing.standings(view, ATTENTION)
    text = Tally.of(table.standing).text()
    assert f"the best {ATTENTION} is {text}" in shown(index)
    if name == "study-every-dataset":
        assert f"the best attention model was {text} against the best boosting model" in shown(pages["sample_size"])
        above = Tally.of(standing.standings(view, ATTENTION, at_least=claims.REFERENCE_ROWS).standing).text()
        below = standing.best_rows(view[view.n_train < claims.REFERENCE_ROWS], ATTENTION, BOOSTING)
        said_claims = shown(pages["claims"])
        assert f"attention was {above}" in said_claims
        assert f"boosting was {Tally.of(Verdict(v).reversed() for v in below.verdict).text('points')}" in said_claims


def test_no_page_says_level(report):
    _, _, pages = report
    for page, text in pages.items():
        found = [m.group(0) for m in LEVEL.finditer(shown(text))]
        assert found == [], (page, found)


def test_the_check_sees_what_it_is_for():
    """What the checks read: a page that said 'level', or a cell whose words are another verdict than its data."""
    assert LEVEL.search("attention is level on 25 of 35 datasets") and LEVEL.search("<td>level</td>")
    assert not LEVEL.search("a level to compare with, not a like-for-like result")
    assert said("never (behind at 800 rows)") == "behind" and said("800 rows (undetermined at 128)") == "ahead"
    assert said("undetermined (one fold) at 320 rows, the largest size") == "undetermined"
    assert said("not converged (behind at 320 rows, still improving ⚑)") == "not converged"
    cell = '<td class="x" title="t" data-pair="d|k|all|ft|xgb" data-verdict="behind">ahead</td>'
    key, verdict, body = CELL.findall(cell)[0]
    assert (key, verdict) == ("d|k|all|ft|xgb", "behind") and said(shown(body)) != verdict


def test_the_reference_files_hold_the_pages_pairs(tmp_path: Path):
    """Every row of the view names its pair as the pages do, so the check above compares like with like."""
    assert pair_key("a", "k", "128", "ft", "xgb") == "a|k|128|ft|xgb"
    assert pair_key("a", "k", "128", "ft", "xgb", scope="slice") == "a|k|128|ft|xgb|slice"


def test_picks_on_small_validation_parts_are_said_beside_them_and_in_the_headline(tmp_path: Path):
    """Issue 58 item 5: where a family's best was picked on validation parts of fewer than 200 rows, the page says
    so beside the pick (the overview's row, the standings' model names) and the headline sentence carries it;
    where every part had 200 rows or more, nothing is said."""
    import duckdb
    import synthetic

    db = synthetic.build(tmp_path / "results.duckdb")
    with duckdb.connect(str(db)) as con:  # alpha's validation parts: 50 rows at 32 and 128 rows, 160 at 'all'
        con.execute("UPDATE results SET n_valid = CASE WHEN dataset = 'beta' THEN 400 "
                    "WHEN sample_size = 'all' THEN 160 ELSE 50 END")
    out = write_report(db, tmp_path / "reports", [overview.SPEC, sample_size.SPEC]).parent
    index, sample = (out / "index.html").read_text(), (out / "sample_size.html").read_text()
    headline = shown(index[index.index('id="answer-headline"'):index.index("</p>", index.index('id="answer-headline"'))])
    assert ("Each family's best was picked on validation parts of fewer than 200 rows on 1 of 2 datasets (160 rows)"
            in headline)
    answer = {r[0]: r for r in table_rows(index, "table-answer")}
    assert answer["32 training rows"][-1] == "50–400 ‡ under 200 on 1 of 2"
    assert answer["all training rows"][-1] == "160–400 ‡ under 200 on 1 of 2"
    titles = [html.unescape(t) for t in re.findall(r'<tr><td[^>]*? title="([^"]*)">', index)]
    assert "picked on validation parts of fewer than 200 rows on 1 of 2 datasets (50 rows)" in titles[0]
    standing_rows = {r[0]: r for r in table_rows(sample, "table-standing")}
    assert standing_rows["alpha"][2:4] == ["ft_transformer ‡ 160 validation rows", "catboost ‡ 160 validation rows"]
    assert standing_rows["beta"][2:4] == ["ft_transformer", "catboost"]
    assert "picked on validation parts of fewer than 200 rows on 1 of 2 datasets (160 rows)" in shown(sample)
    # 200 rows or more everywhere: no word of it
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE results SET n_valid = 200")
    out = write_report(db, tmp_path / "again", [overview.SPEC, sample_size.SPEC, claims_page.SPEC]).parent
    for page in ("index.html", "sample_size.html", "claims.html"):
        assert "fewer than 200 rows on" not in shown((out / page).read_text()) and "‡ " not in shown(
            (out / page).read_text().split('id="table-answer"')[-1].split("</table>")[0]), page
