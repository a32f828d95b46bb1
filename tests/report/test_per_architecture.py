"""`attnbench answer` per attention architecture (issue 59 item 3): with more than one attention entry, each
entry's verdicts per size against the best boosting model and the best other network are the standings
view's rows for that entry, counted, and "picked" counts the datasets where validation chose it."""

from __future__ import annotations

from pathlib import Path

import synthetic

from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.records import Verdict
from pipeline.report import answer_text


def test_each_attention_entry_reads_its_own_standings(tmp_path: Path):
    s = synthetic.Synth()
    s.models["tab_transformer"] = ("tab_transformer", 0.78, 0.030, 1.50)
    db = str(synthetic.build(tmp_path / "r.duckdb", s))
    lines = answer_text.per_architecture(db)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:]]
    standings = Store(db, create=False).query("SELECT * FROM standings WHERE family = 'attention network' "
                                              "AND sample_size <> 'all'", prepare=temporary_views)
    assert {(r[0], r[1]) for r in rows} == {(m, f"{int(z):,}") for m, z in zip(standings.model, standings.sample_size)}
    order = [v.value for v in answer_text.ORDER[:4]]
    for r in rows:
        g = standings[(standings.model == r[0]) & (standings.sample_size == r[1].replace(",", ""))]
        for versus, col in (("best gradient boosting", 3), ("best other network", 5)):
            v = g[g.versus == versus]
            want = "–".join(str(int((v.verdict == w).sum())) for w in order)
            assert r[col].split(" (")[0] == want
        picked = g[g.versus == "best gradient boosting"]
        assert r[-1] == f"{int(picked.family_best.sum())} of {picked.dataset.nunique()}"
    # validation picks one attention entry per task: the picks of a size add up to its datasets
    for size in {r[1] for r in rows}:
        picks = [int(r[-1].split(" of ")[0]) for r in rows if r[1] == size]
        assert sum(picks) == standings[standings.sample_size == size.replace(",", "")].dataset.nunique()
    assert all(Verdict(v) for v in standings.verdict)


def test_one_attention_entry_prints_no_table(tmp_path: Path):
    db = str(synthetic.build(tmp_path / "r.duckdb"))
    assert answer_text.per_architecture(db) == []


def test_what_a_file_holds_counts_its_failed_cells(tmp_path: Path):
    """The synthetic file has one failed cell (mlp on beta, all rows, fold 1) and one missing: the answer's
    holdings line counts the failed one as failed, not as held."""
    db = str(synthetic.build(tmp_path / "r.duckdb"))
    line = answer_text.holdings(db, "synth")
    q = Store(db, create=False).query
    ok = q("SELECT count(*) AS n FROM current_results WHERE status = 'ok'").n[0]
    assert f"holds {ok:,} finished and 1 failed cells of the " in line
