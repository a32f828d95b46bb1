"""`attnbench answer` per attention architecture (issue 59 item 3): with more than one attention entry, each
entry's verdicts per size against the best boosting model and the best other network are the standings
view's rows for that entry, counted, and "picked" counts the datasets where validation chose it."""

from __future__ import annotations

from pathlib import Path

import synthetic

from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.records import Verdict
from pipeline.report import answer_text, configs_text
from pipeline.report.stats import race, standing


def test_each_attention_entry_reads_its_own_standings(tmp_path: Path):
    s = synthetic.Synth()
    s.models["tab_transformer"] = ("tab_transformer", 0.78, 0.030, 1.50)
    db = str(synthetic.build(tmp_path / "r.duckdb", s))
    lines = answer_text.per_architecture(db)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:-2]]
    standings = Store(db, create=False).query("SELECT * FROM standings WHERE family = 'attention network' "
                                              "AND sample_size <> 'all'", prepare=temporary_views)
    # the mean validation rank among the attention entries, and the leaders line, are race.ranks'
    for r in rows:
        ranked = race.ranks(standings[standings.sample_size == r[1].replace(",", "")]).set_index("model")
        assert r[-1] == f"{ranked.loc[r[0], 'mean_rank']:.2f} of 2 ({int(ranked.loc[r[0], 'datasets'])} datasets)"
    assert lines[-1].startswith("Validation's leaders among the attention entries")
    # the pool "the best other network" is picked from, named: every non-attention network the file holds
    pool = Store(db, create=False).query("SELECT DISTINCT model FROM standings WHERE family = 'other network' ORDER BY 1",
                                         prepare=temporary_views).model.tolist()
    assert pool and f"the best other network (the best by validation of {' and '.join(pool)} on each task" in lines[0]
    first = race.ranks(standings[standings.sample_size == "32"])
    assert f"32 rows: {', '.join(first.model)} (of 2 entries ranked, over 2 datasets); " in lines[-1], lines[-1]
    assert {(r[0], r[1]) for r in rows} == {(m, f"{int(z):,}") for m, z in zip(standings.model, standings.sample_size)}
    order = [v.value for v in answer_text.ORDER[:4]]
    for r in rows:
        g = standings[(standings.model == r[0]) & (standings.sample_size == r[1].replace(",", ""))]
        for versus, col in (("best gradient boosting", 3), ("best other network", 5)):
            v = g[g.versus == versus]
            want = "–".join(str(int((v.verdict == w).sum())) for w in order)
            assert r[col].split(" (")[0] == want
            # beside the mean, the median of the differences compared (those not converged left out)
            compared = v[v.verdict.isin([x.value for x in answer_text.COMPARED_VERDICTS])]["diff"]
            if len(compared):
                assert r[col + 1].endswith(f"; median {answer_text.signed(float(compared.median()))}"), r[col + 1]
        picked = g[g.versus == "best gradient boosting"]
        assert r[-2] == f"{int(picked.family_best.sum())} of {picked.dataset.nunique()}"
    # validation picks one attention entry per task: the picks of a size add up to its datasets
    for size in {r[1] for r in rows}:
        picks = [int(r[-2].split(" of ")[0]) for r in rows if r[1] == size]
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


def test_one_architecture_at_two_configurations_is_compared_on_the_splits_both_finished(tmp_path: Path):
    """'ft-192', FT-Transformer at a second configuration, scores 0.02 above FT-Transformer on every split and
    costs three times its trial time; one of its cells failed (alpha, 128 rows, fold 1). The synthetic
    FT-Transformers end every fit at their epoch cap while still improving, so the one behind is never called
    behind: every dataset is not converged (an interval that excludes zero, read as the rule reads it), and no
    mean is taken over them. The cost ratio is exactly 3 only because the base's cell of that failed split is
    left out of the sum too."""
    s = synthetic.Synth(folds=(0, 1, 2))
    s.models["ft-192"] = ("ft_transformer", 0.76, 0.035, 6.0)
    s.failed = {("alpha", "128", 1, "ft-192")}
    db = str(synthetic.build(tmp_path / "r.duckdb", s))
    bound = Store(db, create=False).query("SELECT DISTINCT epochs_bound FROM expected_cells WHERE model LIKE 'ft%' "
                                          "AND status = 'ok'", prepare=temporary_views)
    assert bound.epochs_bound.tolist() == [True]
    lines = configs_text.configurations(db)
    assert lines[0].startswith("**One architecture at two configurations**")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [("ft-192", "ft_transformer", "32"), ("ft-192", "ft_transformer", "128"),
                                                  ("ft-192", "ft_transformer", "all")]
    assert [r[4] for r in rows] == ["6", "5", "6"]
    assert all(r[3] == "2" and r[5] == "0–0–0–0 (+2 not converged)" and r[6] == "– [–, –]" for r in rows)
    assert all(r[7].startswith("×3.00 (") for r in rows)
    assert all(r[8] == r[9] == "×1.00" for r in rows)  # the synthetic cells' peaks and parameters are the same
    assert "One architecture at two configurations" in answer_text.markdown(db, "synth")
    # Three times the memory and twelve times the parameters, and the base's peak on one cell (alpha, fold 0, 32
    # rows) ten times its own: the ratio of the medians over the cells both finished, which one cell moves little.
    import duckdb

    with duckdb.connect(db) as con:
        con.execute("UPDATE results SET peak_cpu_mb = peak_cpu_mb * 3, n_params = n_params * 12 WHERE model = 'ft-192'")
        con.execute("UPDATE results SET peak_cpu_mb = peak_cpu_mb * 10 WHERE model = 'ft_transformer' AND "
                    "dataset = 'alpha' AND fold = 0 AND sample_size = '32'")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in configs_text.configurations(db)[4:]]
    assert [(r[8], r[9]) for r in rows] == [("×3.00", "×12.00")] * 3
    # The README's sentences: per size the mean with its interval, the cost; no mean where no dataset was compared.
    said = configs_text.published_size(db)
    assert said.startswith("**What the second configuration changes: ft-192 against ft_transformer** ("), said
    assert "at 32 rows no mean (no dataset compared: 2 not converged), for ×3.00 the trial time and ×3.00 the peak " \
           "memory" in said, said
    assert said.endswith("So far it has no mean at 32, 128 and all rows (not converged).")
    assert answer_text.summary_of(db).endswith("\n\n" + said)


def test_one_configuration_of_each_architecture_prints_no_such_table(tmp_path: Path):
    assert configs_text.configurations(str(synthetic.build(tmp_path / "r.duckdb"))) == []


def test_the_race_ranks_validation_over_the_datasets_every_entry_ran():
    """a leads on d1 and d2, b and c tie on d1 (rank 2.5 each); c has no validation score on d3, so d3 counts
    for no one (a would gain a rank-1 there that c never had the chance to take)."""
    import pandas as pd

    rows = pd.DataFrame([("d1", "a", 0.9, True), ("d1", "b", 0.8, False), ("d1", "c", 0.8, False),
                         ("d2", "a", 0.7, True), ("d2", "b", 0.5, False), ("d2", "c", 0.6, False),
                         ("d3", "a", 0.9, False), ("d3", "b", 0.95, True), ("d3", "c", None, False)],
                        columns=["dataset", "model", "val_mean", "family_best"])
    r = race.ranks(rows)
    assert r.model.tolist() == ["a", "c", "b"]
    assert r.mean_rank.tolist() == [1.0, 2.25, 2.75] and (r.datasets == 2).all()
    assert r.picked.tolist() == [2, 0, 0]  # b's pick on d3 is on a dataset left out of the ranking
    # a tie in mean rank (2 each) goes to the entries picked on more datasets, then by name
    tie = pd.DataFrame([("d1", "a", 0.9, True), ("d1", "b", 0.8, False), ("d1", "c", 0.7, False),
                        ("d2", "a", 0.7, False), ("d2", "b", 0.8, False), ("d2", "c", 0.9, True)],
                       columns=["dataset", "model", "val_mean", "family_best"])
    assert race.leaders(tie, 3) == ["a", "c", "b"] and race.leaders(tie, 1) == ["a"]


def test_the_summary_names_the_attention_entries_it_rests_on_and_those_it_lacks(tmp_path: Path):
    """The synthetic file holds FT-Transformer and TabTransformer at 32, 128 and all rows: a table names both with
    their sizes, how much of each one's plan ran and where validation picks it, and the sentence after it lists
    every other attention architecture of attnbench's registry as not in it; a file of one entry says it in a
    sentence."""
    from pipeline.models.registry import own_of_kind

    s = synthetic.Synth()
    s.models["tab_transformer"] = ("tab_transformer", 0.78, 0.030, 1.50)
    db = str(synthetic.build(tmp_path / "r.duckdb", s))
    text = answer_text.architectures(db)
    # what each adds: the datasets where validation picks it at their largest size (the summary's verdicts)
    rows = Store(db, create=False).query("SELECT * FROM standings", prepare=temporary_views)
    n = standing.standings(rows).attention.value_counts()
    assert n.sum() == 2  # alpha and beta
    planned = len(s.datasets) * len(s.sizes) * len(s.folds)
    said = {m: f"{int(n.get(m, 0))} dataset{'s' if n.get(m, 0) != 1 else ''}" for m in ("ft_transformer", "tab_transformer")}
    assert text.startswith("The attention entries it holds, among which validation picks the best")
    table = [line for line in text.splitlines() if line.startswith("| ")]
    # each size the entry's plan holds, with its datasets there
    assert table[2:] == [f"| {m} | 32 (2), 128 (2), all rows (2) | – | {planned} of {planned} | {said[m]} |"
                         for m in ("ft_transformer", "tab_transformer")]
    assert "Interim" not in text  # every planned cell ran
    others = [m for m in own_of_kind("attention") if m not in ("ft_transformer", "tab_transformer")]
    assert len(others) >= 5 and text.endswith(f"\n\nNot in it: {', '.join(others)} (attnbench's other attention architectures).")
    assert answer_text.summary_of(db).endswith("\n\n" + text)  # the table after the summary's paragraph
    # One attention entry: a sentence on the summary's paragraph.
    alone = synthetic.Synth()
    one = answer_text.architectures(str(synthetic.build(tmp_path / "one.duckdb", alone)))
    assert one.startswith("The attention entry it holds: ft_transformer (32 to 128 training rows and all rows). Not in it: ")
    # A race with an entry still to run a task ranks over the datasets every entry ran, and says how many.
    s.missing |= {("alpha", "128", 1, "tab_transformer")}
    lines = answer_text.per_architecture(str(synthetic.build(tmp_path / "racing.duckdb", s)))
    assert "; 128 rows: " in lines[-1] and " (of 2 entries ranked, over 1 dataset)" in lines[-1].split("; 128 rows: ")[1]
    # An entry still running (a chunked study) says how much of its plan the figures rest on; a whole one does not.
    s.missing |= {("alpha", "all", 1, "tab_transformer")}
    partial = answer_text.architectures(str(synthetic.build(tmp_path / "partial.duckdb", s)))
    ran = planned - sum(1 for cell in s.missing if cell[3] == "tab_transformer")
    assert ran == planned - 2  # the two above
    rows_of = {line.split(" | ")[0].removeprefix("| "): line.split(" | ")[3] for line in partial.splitlines()
               if line.startswith("| ") and "---" not in line}
    assert rows_of["tab_transformer"] == f"{ran} of {planned}, running", partial
    assert rows_of["ft_transformer"] == f"{planned} of {planned}", partial
    # ... and the answer says first that it rests on a study still running: a pick may change
    assert partial.startswith(f"**Interim:** the attention entries have run {2 * planned - 2} of the {2 * planned} cells "
                              "planned for them (2 to go). Validation picks the best attention network among the "
                              "entries that ran, so a pick, and its verdict, may change as the rest run.\n\n"), partial
    # An entry yet to run a planned dataset at a size: its row there counts the datasets it ran of those planned.
    gap = synthetic.Synth()
    gap.models["tab_transformer"] = s.models["tab_transformer"]
    gap.missing |= {("beta", "128", fold, "tab_transformer") for fold in gap.folds}
    rows = {(c[0], c[1]): c for c in ([x.strip() for x in line.strip("|").split("|")] for line in
                                      answer_text.per_architecture(str(synthetic.build(tmp_path / "gap.duckdb", gap)))[4:-2])}
    assert rows[("tab_transformer", "128")][2] == "1 of 2" and rows[("ft_transformer", "128")][2] == "2"
    assert rows[("tab_transformer", "32")][2] == "2"


def test_the_sample_size_page_shows_the_answers_table(tmp_path: Path):
    """With two attention entries the Sample-size page has the per-architecture table, each row the answer's
    (the same counts, picks and ranks), and names the race's leaders; with one it has no such section."""
    from tables import table_rows

    from pipeline.report.pages import sample_size, write_report

    s = synthetic.Synth()
    s.models["tab_transformer"] = ("tab_transformer", 0.78, 0.030, 1.50)
    db = synthetic.build(tmp_path / "r.duckdb", s)
    write_report(db, tmp_path / "reports", [sample_size.SPEC])
    page = (tmp_path / "reports" / "sample_size.html").read_text()
    shown = table_rows(page, "table-architectures")
    answer = [[c.strip() for c in line.strip("|").split("|")] for line in answer_text.per_architecture(str(db))[4:-2]]
    assert len(shown) == len(answer) == 4  # two entries × two numeric sizes
    for got, want in zip(shown, answer):
        assert got[:3] == want[:3] and got[3] == want[3] and got[5] == want[5] and got[7] == want[7]
        assert want[8].startswith(got[8])  # "1.50 of 2" and the answer's "(N datasets)"
    assert "the three lowest lead (32 training rows: " in page
    one = synthetic.build(tmp_path / "one.duckdb")
    write_report(one, tmp_path / "one", [sample_size.SPEC])
    assert 'id="table-architectures"' not in (tmp_path / "one" / "sample_size.html").read_text()


def test_the_other_networks_each_have_their_own_rows_against_boosting(tmp_path: Path):
    """Issue 82 item 5: each non-attention network, and the best of them by validation, against the best boosting
    model per size, in the answer and on the Sample-size page: the standings view's rows counted, the picks named."""
    from tables import table_rows

    from pipeline.report.pages import sample_size, write_report

    s = synthetic.Synth()
    s.models["realmlp"] = ("realmlp", 0.80, 0.030, 1.20)
    db = synthetic.build(tmp_path / "r.duckdb", s)
    standings = Store(db, create=False).query("SELECT * FROM standings WHERE family = 'other network' AND versus = "
                                              "'best gradient boosting' AND sample_size <> 'all'", prepare=temporary_views)
    assert standings.model.nunique() == 2
    lines = answer_text.other_networks(str(db))
    assert lines[0].startswith("**The other networks against boosting**")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:]]
    sizes = sorted(standings.sample_size.unique(), key=int)
    assert [r[:2] for r in rows] == [[m, f"{int(z):,}"] for m in ("best other network", "mlp", "realmlp") for z in sizes]
    order = [v.value for v in answer_text.ORDER[:4]]
    for r in rows:
        g = standings[standings.sample_size == r[1].replace(",", "")]
        g = g[g.family_best] if r[0] == "best other network" else g[g.model == r[0]]
        assert r[2] == str(g.dataset.nunique())
        assert r[3].split(" (")[0] == "–".join(str(int((g.verdict == w).sum())) for w in order)
        compared = g[g.verdict.isin([x.value for x in answer_text.COMPARED_VERDICTS])]["diff"]
        assert r[4].startswith(answer_text.signed(float(compared.mean())))
        if r[0] == "best other network":  # which network each task picked, by validation, adding up to its datasets
            picks = dict(p.rsplit(" ", 1) for p in r[5].split(", "))
            assert sum(map(int, picks.values())) == g.dataset.nunique() and set(picks) <= {"mlp", "realmlp"}
    write_report(db, tmp_path / "reports", [sample_size.SPEC])
    shown = table_rows((tmp_path / "reports" / "sample_size.html").read_text(), "table-networks")
    assert [[c for c in row[:4]] for row in shown] == [r[:4] for r in rows]
