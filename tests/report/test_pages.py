"""Views and pages built from synthetic databases written through the Store."""

from __future__ import annotations

import html as html_lib
import json
import math
import re
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
import synthetic
from synthetic import EVIL_DATASET, EVIL_FEATURE, EVIL_MODEL, Synth
from tables import table_rows

from pipeline.data.store import Store
from pipeline.data.views import N_SHUFFLES
from pipeline.query import run_query
from pipeline.report.pages import accuracy, compute, memory, overview, write_report
from pipeline.report.serve import make_server

PAGES = ["index", "accuracy", "sample_size", "tuning", "compute", "memory", "attention", "claims", "runs"]


@pytest.fixture(scope="module")
def synth_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic.build(tmp_path_factory.mktemp("synth") / "results.duckdb")


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ views
def test_expected_cells_mark_the_missing_cell(synth_db):
    st = Store(synth_db)
    counts = st.query("SELECT status, count(*) AS n FROM expected_cells GROUP BY status ORDER BY status")
    # 2 datasets × 3 sizes × 2 folds × 4 models = 48 expected; one never written, one failed.
    assert dict(zip(counts.status, counts.n)) == {"error": 1, "missing": 1, "ok": 46}


def test_leaderboard_numbers(synth_db):
    lb = Store(synth_db).query("SELECT * FROM leaderboard WHERE dataset = 'alpha' AND sample_size = 'all'")
    x = lb.set_index("model").loc["xgboost"]
    # 0.80 + 0.02·log2(800/32) + 0.01·fold over folds 0 and 1.
    assert x.score_mean == pytest.approx(0.80 + 0.02 * math.log2(25) + 0.005)
    assert x.score_std == pytest.approx(0.01 / math.sqrt(2))
    assert (x.n_ok, x.n_cells, x.n_failed, x.n_missing) == (2, 2, 0, 0)
    assert lb.set_index("model").is_best.to_dict() == {"catboost": False, "ft_transformer": True, "mlp": False,
                                                       "xgboost": False}
    cb = Store(synth_db).query("SELECT * FROM leaderboard WHERE dataset = 'alpha' AND sample_size = '32' "
                               "AND model = 'catboost'").iloc[0]
    assert (cb.n_ok, cb.n_missing) == (1, 1)
    mlp = Store(synth_db).query("SELECT * FROM leaderboard WHERE dataset = 'beta' AND sample_size = 'all' "
                                "AND model = 'mlp'").iloc[0]
    assert (mlp.n_ok, mlp.n_failed) == (1, 1)


def test_tuning_curves_view(synth_db):
    tc = Store(synth_db).query("SELECT * FROM tuning_curves WHERE cell_id = 'alpha|all|0|xgboost' ORDER BY shuffle, "
                               "n_trials")
    assert sorted(tc.shuffle.unique()) == list(range(N_SHUFFLES))
    assert (tc[tc.n_trials == 1].trial_index == 0).all()  # every order starts from the default config
    run_order = tc[tc.shuffle == 0]
    s = 0.80 + 0.02 * math.log2(25)
    fit = 0.05 * 800 / 32
    # Trials: default s − 0.03, then s − 0.01, then a failed one (no score).
    assert run_order.best_val_score.tolist() == pytest.approx([s - 0.03, s - 0.01, s - 0.01])
    # The test score follows the configuration validation selects: the failed third trial changes nothing.
    assert run_order.best_test_score.tolist() == pytest.approx([s - 0.05, s - 0.02, s - 0.02])
    assert run_order.best_test_norm.between(0, 1).all()
    assert run_order.cum_seconds.tolist() == pytest.approx([fit, 3 * fit, 3.5 * fit])
    assert run_order.best_val_norm.between(0, 1).all()


def test_failures_view_lists_cells_and_trials(synth_db):
    f = Store(synth_db).query("SELECT level, count(*) AS n FROM failures GROUP BY level")
    assert dict(zip(f.level, f.n)) == {"cell": 1, "trial": 4}


def test_compute_and_memory_views(synth_db):
    c = Store(synth_db).query("SELECT * FROM compute WHERE dataset = 'beta' AND sample_size = 'all' ORDER BY model")
    mlp = c.set_index("model").loc["mlp"]
    assert mlp.n_ok == 1 and mlp.fit_seconds == pytest.approx(1.0 * 320 / 32) and mlp.gpu_hours == 0
    m = Store(synth_db).query("SELECT * FROM memory WHERE dataset = 'alpha' AND model = 'ft_transformer' "
                              "AND sample_size = 'all'").iloc[0]
    assert m.n_features == 6 and m.peak_cpu_mb == pytest.approx(120.0)


# ------------------------------------------------------------------------------------------ pages
@pytest.fixture(scope="module")
def synth_report(synth_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reports")
    assert write_report(synth_db, out) == out / "index.html"
    return out


def test_every_page_is_written_and_loads_plotly_from_the_one_copy_beside_it(synth_report):
    from plotly.offline import get_plotlyjs

    for name in PAGES:
        html = text(synth_report / f"{name}.html")
        assert html.startswith("<!DOCTYPE html>")
        scripts = re.findall(r"""<script[^>]+src=["']([^"']+)""", html)
        assert not re.search(r"""<link[^>]+href=["']https?:""", html), name
        n_figures = html.count('class="plotly-graph-div"')
        # plotly.js is loaded from the folder's one copy by a page with figures, and inlined nowhere.
        assert scripts == (["plotly.min.js"] if n_figures else []), (name, scripts)
        assert "* plotly.js v" not in html and len(html.encode()) < 1_000_000, name
        for other in PAGES:
            assert f'href="{other}.html"' in html  # the navigation links every page
    assert (synth_report / "plotly.min.js").read_text("utf-8") == get_plotlyjs()
    assert sum(f.stat().st_size for f in synth_report.iterdir()) < 8_000_000
    assert not list(synth_report.glob("*.tmp"))


def test_accuracy_page_shows_scores_and_coverage(synth_db, synth_report):
    html = text(synth_report / "accuracy.html")
    # The same number as `attnbench query` on the leaderboard view.
    lb = run_query(synth_db, "SELECT score_mean, score_std FROM leaderboard WHERE dataset = 'alpha' "
                             "AND sample_size = 'all' AND model = 'xgboost'")
    assert f"{lb.score_mean[0]:.3f} ± {lb.score_std[0]:.3f}" in html
    assert 'class="best num"' in html
    assert "(1/2)" in html  # the missing and the failed cell show as partial coverage
    assert "1 failed, 0 not run yet" in html and "0 failed, 1 not run yet" in html
    for size in ("all", "128", "32"):
        for fig in ("summary", "winrate", "elo", "cd"):
            assert f'id="fig-{fig}-{size}"' in html
    assert "all 2 tasks, 1/2 complete, 1 partly failed" in html  # mlp at 'all': beta has a failed fold


def test_sample_size_page_crossover(synth_report):
    html = text(synth_report / "sample_size.html")
    # alpha: FT-Transformer 0.9025 − CatBoost 0.8936 on both folds at 800 rows: ahead (the folds agree); at 128
    # rows behind while still improving at its last epoch (every FT-Transformer cell is budget-bound)
    assert "800 rows (not converged at 128)" in html
    assert "not converged (behind at 320 rows, still improving ⚑)" in html  # beta: 0.8563 < 0.8704
    # Each cell's title: the verdict it rests on, with its difference and interval over folds (mlp on beta: one
    # fold, its other failed: undetermined, no interval)
    assert ("ft_transformer vs catboost at all training rows: ahead: +0.009, 95% interval +0.009 to +0.009 over 2 "
            "folds") in html
    assert "mlp vs catboost at all training rows: undetermined (one fold): -0.020 on one fold, past ±0.005" in html
    # alpha at 32 rows: CatBoost's fold 1 is still to run (missing), so it has not run that task yet and XGBoost,
    # on both folds, is boosting's best there: FT-Transformer not converged, the MLP behind (with CatBoost's one
    # fold as the pick, both were undetermined on one split)
    assert ("the best attention network, against the best boosting model, was ahead on 1, equivalent on 0, behind "
            "on 0 and undetermined on 0 of 6 (dataset, size) points, 5 of them not converged;") in html
    # the MLP, beside attention: on alpha at 800 rows 0.8943 against catboost's 0.8986 on both folds: equivalent
    assert ("the best other network, against the best boosting model, was ahead on 0, equivalent on 1, behind on 4 "
            "and undetermined on 1 of 6 (dataset, size) points.") in html
    assert 'id="fig-curve-avg"' in html
    assert "design notes" not in html  # page text for users, not notes to ourselves
    assert ">level" not in html and "level at" not in html


def test_the_overview_opens_with_the_answer_as_one_figure(synth_db, synth_report):
    """The first thing under the overview's title is the answer's figure: per training size, each family's best
    on each dataset against the best boosting model there, as shares of the datasets by verdict, the share ahead
    with its Wilson interval, beside each family's leader's mean normalised score (the statistics of the table
    under it); the coverage cards come after the answer."""
    from pipeline.models.kinds import BOOSTING, families
    from pipeline.records import Verdict
    from pipeline.report import figures as figs
    from pipeline.report.data import ReportData
    from pipeline.report.stats.answer import size_answer

    page = text(synth_report / "index.html")
    main = page[page.index("<main>"):]
    opening = re.sub(r"<h1>.*?</h1>|<h2[^>]*>.*?</h2>", "", main[:main.index('id="fig-index-answer"')], flags=re.S)
    assert re.fullmatch(r'<main><div[^>]*>\s*<div ', opening), opening  # nothing but the headings before it
    assert main.index('id="fig-index-answer"') < main.index('id="table-answer"') < main.index('id="summary"')
    data = ReportData.load(synth_db)
    rows = data.standings
    answers = [size_answer(s, data.cells[data.cells.sample_size == s], data.kinds, rows[rows.sample_size == s])
               for s in data.sizes]
    fam = families(data.kinds)
    fig = figs.answer_by_size(answers, fam)
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    score = {t.name: t for t in fig.data if t.xaxis == "x2"}
    others = [f for f in fam if f != BOOSTING]
    # a bar a (size, family), stacked by verdict; each verdict's shares are the tallies'
    assert set(bars) <= {str(v) for v in figs.STACK} and "ahead" in bars and set(score) == set(fam)
    for name, t in bars.items():
        assert list(t.y) == pytest.approx([a.vs_boosting[f].share(Verdict(name)) for a in answers for f in others])
        assert list(t.x[1]) == [figs.SHORT_FAMILY[f] for _ in answers for f in others]
    ahead = bars["ahead"]
    iv = [a.vs_boosting[f].interval(Verdict.AHEAD) for a in answers for f in others]
    assert list(ahead.error_y.array) == pytest.approx([hi - y for (_, hi), y in zip(iv, ahead.y)])
    assert list(ahead.error_y.arrayminus) == pytest.approx([y - lo for (lo, _), y in zip(iv, ahead.y)])
    for f, t in score.items():
        assert list(t.y) == pytest.approx([a.leaders[f].normalized_score for a in answers])
    assert list(fig.layout.xaxis2.ticktext) == ["32", "128", "all"]
    assert sum(t.showlegend is not False for t in fig.data if t.type != "bar") == len(fam)  # one entry a family
    assert "level" not in json.dumps(fig.to_plotly_json(), default=str)


def test_other_pages_content(synth_report):
    assert "No cell ran on a GPU" in text(synth_report / "compute.html")
    assert 'id="fig-pareto"' in text(synth_report / "compute.html")
    assert 'id="fig-memory-cpu-features"' in text(synth_report / "memory.html")
    attention = text(synth_report / "attention.html")
    assert 'id="fig-attention-0-0"' in attention
    # The synthetic maps give half of every row to feature 0: stated as a range and as not uniform.
    assert re.search(r"\(uniform 0\.\d{4}\), [\d.]+×–[\d.]+× uniform; distance from uniform 0\.\d+: "
                     r"not uniform", attention), attention[-3000:]
    assert "Selection reads validation only" in text(synth_report / "tuning.html")
    runs = text(synth_report / "runs.html")
    assert "RuntimeError: simulated failure in every trial" in runs
    assert "ValueError: simulated bad configuration" in runs
    assert "Failures (5)" in runs
    index = text(synth_report / "index.html")
    assert "46 ok · 1 failed · 1 missing" in index and 'id="table-headline"' in index


def test_empty_database_renders_notes(tmp_path):
    db = tmp_path / "empty.duckdb"
    Store(db).init()
    write_report(db, tmp_path / "r")
    assert "No results yet" in text(tmp_path / "r" / "index.html")
    for name in PAGES:
        assert (tmp_path / "r" / f"{name}.html").is_file()


def test_one_size_no_attention_no_gpu(tmp_path):
    s = Synth(sizes=("all",), models={k: v for k, v in synthetic.MODELS.items() if k != "ft_transformer"},
              missing=set())
    db = synthetic.build(tmp_path / "r.duckdb", s)
    write_report(db, tmp_path / "r")  # every page, on one size without attention or a GPU
    assert "Only one training size was run" in text(tmp_path / "r" / "sample_size.html")
    assert "No attention maps recorded" in text(tmp_path / "r" / "attention.html")
    assert "No cell ran on a GPU" in text(tmp_path / "r" / "memory.html")


def test_gpu_hours_and_fully_failed_cells(tmp_path):
    s = Synth(sizes=("all",), gpu_models={"ft_transformer"},
              failed={("beta", "all", 0, "mlp"), ("beta", "all", 1, "mlp")})
    db = synthetic.build(tmp_path / "r.duckdb", s)
    write_report(db, tmp_path / "r", [compute.SPEC, memory.SPEC, accuracy.SPEC])
    compute_page = text(tmp_path / "r" / "compute.html")
    # ft_transformer: its three trials run 3.5 × fit per cell; fit = 2 s × n/32; alpha 800 and beta 320 rows,
    # 2 folds.
    gpu_hours = 2 * 3.5 * (2 * 800 / 32 + 2 * 320 / 32) / 3600
    assert f"{gpu_hours:.4f}" in compute_page and "No cell ran on a GPU" not in compute_page
    assert 'id="fig-memory-gpu-features"' in text(tmp_path / "r" / "memory.html")
    assert "failed (2/2)" in text(tmp_path / "r" / "accuracy.html")


def test_a_model_that_failed_everywhere_still_has_its_row(tmp_path):
    s = Synth(sizes=("all",), failed={(d, "all", f, "mlp") for d in ("alpha", "beta") for f in (0, 1)})
    write_report(synthetic.build(tmp_path / "r.duckdb", s), tmp_path / "r")  # every page, with a model that has none
    rows = {r[0]: r for r in table_rows(text(tmp_path / "r" / "accuracy.html"), "table-summary-all")}
    assert rows["mlp"][5] == "100.0%" and rows["mlp"][6] == "—" and rows["mlp"][-1].startswith("0/4")
    assert "mlp 0.000" in html_lib.unescape(text(tmp_path / "r" / "index.html"))  # the MLP family, scored 0


def test_names_are_escaped_in_html(evil_report):
    _, reports = evil_report
    for name in PAGES:
        html = text(reports / f"{name}.html")
        for raw in (EVIL_DATASET, EVIL_MODEL, EVIL_FEATURE, "<img src=x"):
            assert raw not in html, (name, raw)
    runs = text(reports / "runs.html")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in runs and "&lt;b onmouseover=alert(2)&gt;evil&lt;/b&gt;" in runs


# ------------------------------------------------------------------------------------------ serve
def test_serve_answers_on_loopback(synth_report):
    server = make_server(synth_report, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as r:
            assert r.status == 200 and b"attnbench report" in r.read()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/../results.duckdb", timeout=10)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# ------------------------------------------------------------------------------------------- docs
DOC = Path(__file__).resolve().parents[2] / "docs" / "QUERIES.md"


def doc_sql() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_every_documented_query_runs(synth_db, tmp_path_factory):
    from shipped import exported

    blocks = doc_sql()
    assert len(blocks) >= 10
    # the across_datasets table is fitted where a file has enough datasets: the shipped study carries its own
    fitted = [b for b in blocks if "across_datasets" in b]
    assert fitted
    with Store(synth_db, create=False).connect(read_only=True) as con:
        for sql in blocks:
            if sql not in fitted:
                assert len(con.execute(sql).df()) > 0, sql
    study = exported(tmp_path_factory, "study-every-dataset", tmp_path_factory.mktemp("q") / "study.duckdb")
    with Store(study, create=False).connect(read_only=True) as con:
        for sql in fitted:
            assert len(con.execute(sql).df()) > 0, sql


def test_documented_sql_gives_the_page_numbers(synth_db):
    from pipeline.report.data import ReportData
    from pipeline.report.stats import aggregate as agg
    from pipeline.report.stats.ranking import ranking

    data = ReportData.load(synth_db)
    (rank_sql,) = [b for b in doc_sql() if "task_rank" in b]
    sql = Store(synth_db).query(rank_sql).set_index(["sample_size", "model"])
    for size in data.sizes:
        page = ranking(data, size).summary.set_index("model")
        for model in page.index:
            assert sql.loc[(size, model), "avg_rank"] == pytest.approx(page.loc[model, "avg_rank"])
            assert sql.loc[(size, model), "normalized_score"] == pytest.approx(page.loc[model, "normalized_score"])
    (tuning_sql,) = [b for b in doc_sql() if "per_order" in b]
    sql = Store(synth_db).query(tuning_sql).set_index(["sample_size", "model", "n_trials"]).sort_index()
    page = agg.tuning_summary(data.tuning).set_index(["sample_size", "model", "n_trials"]).sort_index()
    for col in ("score", "score_low", "score_high", "test", "test_low", "test_high", "seconds", "n_cells"):
        assert sql[col].to_numpy() == pytest.approx(page[col].to_numpy()), col


def test_serve_regenerates_from_a_database(tmp_path):
    tiny = Synth(datasets=Synth().datasets[:1], sizes=("all",), folds=(0,), missing=set(),
                 models={k: synthetic.MODELS[k] for k in ("xgboost", "mlp")})
    db = synthetic.build(tmp_path / "tiny.duckdb", tiny)
    server = make_server(tmp_path / "served", port=0, db=db)
    server.server_close()
    assert (tmp_path / "served" / "index.html").is_file()


def test_serve_without_a_report_says_so(tmp_path):
    from pipeline.errors import AttnbenchError

    with pytest.raises(AttnbenchError, match=r"no index\.html"):
        make_server(tmp_path, port=0)


def test_overview_answers_by_training_size_with_costs(synth_report):
    page = text(synth_report / "index.html")
    html = html_lib.unescape(page)
    # The generated summary states its coverage first; each size's answer in words is its row's title.
    assert "Based on 2 datasets at 3 training sizes, up to 2 splits (folds × seeds) each; 46 of 48 cells finished." in html
    assert "With fewer than 10 datasets per size" in html
    titles = [html_lib.unescape(t) for t in re.findall(r'<tr><td[^>]*? title="([^"]*)">', table_html(page, "table-answer"))]
    assert titles[0].startswith("At 32 training rows (2 tasks), gradient boosting leads on mean normalised score: "
                                "attention network (ft_transformer) 0.00, other network (mlp) 0.15, gradient boosting "
                                "(catboost) 1.00. Against the best gradient boosting model of each dataset, the best "
                                "attention network is ")
    assert len(titles) == 3 and titles[2].startswith("At all training rows (2 tasks), attention network leads")
    summary = html[html.index('id="answer-summary"'):]
    assert "At 32 training rows" not in summary[:summary.index("</div>")]  # the table says it, not a paragraph
    # each family's best on each dataset against boosting's best there, by verdict (FT-Transformer ahead on alpha,
    # behind on beta while still improving: not converged), with the Wilson interval of the share ahead
    assert ("Against the best gradient boosting model of each dataset, the best attention network is ahead on 1, "
            "equivalent on 0, behind on 0 and undetermined on 0 of 2 datasets, 1 of them not converged (ahead on "
            "50%, 95% interval 9%–91%).") in html  # Wilson, by hand
    # the headline: at each dataset's largest size, the standings' verdicts
    headline = html[html.index('id="answer-headline"'):]
    assert headline[headline.index(">") + 1:].startswith(
        "At each dataset's largest size run, against the best gradient boosting model there (each side's best "
        "picked on validation): the best attention network is ahead on 1, equivalent on 0, behind on 0 and "
        "undetermined on 0 of 2 datasets, 1 of them not converged; the best other network is ahead on 0, "
        "equivalent on 1, behind on 0 and undetermined on 1 of 2 datasets.")
    assert "on 1 of 2 datasets, at 800 training rows; not converged there on 1." in html  # alpha crosses at 'all'
    assert "ft_transformer kept its last epoch or round in 12 of 12 cells" in html
    answer = {r[0]: r for r in table_rows(html, "table-answer")}
    assert list(answer) == ["32 training rows", "128 training rows", "all training rows"]
    assert answer["32 training rows"][2:6] == ["ft_transformer 0.000 ⚑", "mlp 0.148", "catboost 1.000",
                                               "gradient boosting"]
    assert answer["all training rows"][5:7] == ["attention network", "1–0–0–0 + 1 not converged"]
    # The best attention network against the best other network (the MLP), dataset by dataset: at 'all'
    # ft_transformer is ahead on alpha (0.9075 vs 0.8943 on both folds) and undetermined on beta (the MLP's other
    # fold failed: one fold); at 128 rows the two score the same on both (equivalent, never a win); at 32 rows
    # the MLP is ahead on both, FT-Transformer still improving (not converged).
    assert [answer[s][8] for s in answer] == ["0–0–0–0 + 2 not converged", "0–2–0–0", "1–0–0–1"]
    assert [answer[s][9] for s in answer] == ["—", "—", "—"]  # every pick on 1,000 validation rows or more
    # Train seconds per 1,000 rows: fit = base · n / 32 → 1000 · base / 32; predict: 1000 / (1000 / base).
    cost = {r[0]: r[1:] for r in table_rows(html, "table-answer-cost")}
    assert cost["all training rows"] == ["62.5", "2", "31.2", "1", "6.25", "0.2"]
    cross = {r[0]: r[1:] for r in table_rows(html, "table-index-crossover")}
    # the MLP at 800 rows: 0.8943 against catboost's 0.8986 on both folds, within the 0.005 margin: equivalent
    assert cross["alpha"] == ["800 rows (not converged at 128)", "equivalent at 800 rows, the largest size"]
    assert cross["beta"][1] == "undetermined (one fold) at 320 rows, the largest size"
    assert 'id="fig-index-sizes"' in html and "level" not in re.sub(r"<[^>]+>", "", html)


def test_a_model_run_with_one_trial_per_cell_has_no_tuned_minus_default(synth_db: Path, tmp_path: Path):
    """One trial is the default configuration: "+0.000 (0/2 tasks)" would read as a search that gained
    nothing. Only cells whose search ran more than one trial are compared."""
    import shutil

    import duckdb

    from pipeline.report.data import ReportData
    from pipeline.report.pages.accuracy import ensemble_rows
    from pipeline.report.parts import summary_table
    from pipeline.report.stats import aggregate as agg
    from pipeline.report.stats.ranking import ranking

    db = tmp_path / "one-trial.duckdb"
    shutil.copy(synth_db, db)
    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM trials WHERE trial_index > 0 AND cell_id IN "
                    "(SELECT cell_id FROM results WHERE model = 'catboost')")
    st = ranking(ReportData.load(db), "all")
    by = st.summary.set_index("model")
    assert by.loc["catboost", "tuning_compared"] == 0 and by.loc["ft_transformer", "tuning_compared"] == 2
    rows = {r[0]: r for r in table_rows(summary_table(st, "t"), "t")}
    assert rows["catboost"][6] == "—" and rows["ft_transformer"][6] == "+0.050 (2/2 tasks)"
    # The post-hoc ensembles table likewise (this file keeps no predictions: ensembles made up from its cells).
    data = ReportData.load(db)
    ok = data.cells[(data.cells.sample_size == "all") & (data.cells.status == "ok")]
    data.ensembles = ok[list(dict.fromkeys([*agg.SPLIT, "model", "sample_size"]))].assign(
        pooled=False, score=ok.score + 0.01, members=1.0, candidates=3.0, selected_score=ok.score)
    ens = ensemble_rows(data, "all").set_index("model")
    assert "catboost" not in ens.index and {"ft_transformer", "xgboost"} <= set(ens.index)  # nothing to ensemble
    # A trial lost to the infrastructure and run again is the same configuration twice: still no search.
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE trials SET status = 'infra', trial_index = trial_index + 10 WHERE trial_index = 0 AND "
                    "cell_id IN (SELECT cell_id FROM results WHERE model = 'catboost')")
        con.execute("INSERT INTO trials SELECT * REPLACE (trial_id || '-again' AS trial_id, 0 AS trial_index, "
                    "'ok' AS status) FROM trials WHERE status = 'infra'")
    assert ReportData.load(db).trials.groupby("model").n_trials.max()["catboost"] == 2
    assert ranking(ReportData.load(db), "all").summary.set_index("model").loc["catboost", "tuning_compared"] == 0


def test_a_task_not_run_yet_is_grey_in_the_per_dataset_table_and_one_that_failed_red(synth_db: Path,
                                                                                      tmp_path: Path):
    """A study in chunks has tasks no cell of which has run yet: not a failure, so not red."""
    import shutil

    import duckdb

    from pipeline.report.data import ReportData
    from pipeline.report.pages.accuracy import per_dataset_table

    db = tmp_path / "partial.duckdb"
    shutil.copy(synth_db, db)
    with duckdb.connect(str(db)) as con:
        gone = ("SELECT cell_id FROM results WHERE sample_size = 'all' AND ((model = 'catboost' AND dataset = 'alpha') "
                "OR (model = 'mlp' AND dataset = 'beta' AND status = 'ok'))")
        for table in ("predictions", "targets", "trials", "attention_maps"):
            con.execute(f"DELETE FROM {table} WHERE cell_id IN ({gone})")
        con.execute(f"DELETE FROM results WHERE cell_id IN ({gone})")
    html = per_dataset_table(ReportData.load(db), "all", "t")
    assert re.search(r'<td class="notrun num" title="0 failed, 2 not run yet of 2 cells">not run yet \(2/2\)</td>',
                     html), html
    assert re.search(r'<td class="missing num" title="1 failed, 1 not run yet of 2 cells">failed \(1/2\)</td>', html)


def test_tabarena_columns_and_budget_flags(synth_report):
    html = text(synth_report / "accuracy.html")
    rows = {r[0]: r for r in table_rows(html, "table-summary-all")}
    assert list(rows) == ["catboost", "ft_transformer", "xgboost", "mlp"]  # by average rank
    # Improvability at 'all': ft is best on alpha (0) and on beta (1 − 0.8613 − (1 − 0.8748)) / (1 − 0.8613).
    ft = rows["ft_transformer"]
    assert ft[5] == "4.9%" and ft[6] == "+0.050 (2/2 tasks)" and ft[7:9] == ["62.5", "2"]
    assert ft[9] == "⚑ last epoch ×4 · ⚑ last trial ×4" and rows["catboost"][9] == "—"
    # The rank bars are drawn in the table's order (best on top: plotly lists them bottom-up).
    fig = re.search(r'id="fig-summary-all".*?Plotly.newPlot\(\s*"fig-summary-all",\s*(\[.*?\]),\s*\{', html, re.S)
    assert fig is not None
    first = json.loads(fig.group(1))[0]
    assert first["y"][::-1] == list(rows)
    alpha = next(r for r in table_rows(html, "table-datasets-all") if r[0] == "alpha")  # catboost, ft, mlp, xgboost
    assert alpha[3].endswith("⚑") and "⚑" not in alpha[2]
    # Two folds: no Wilcoxon test can reach α = 0.05 with two pairs, and the table says so.
    assert alpha[-1] == ("best: ft_transformer; too few splits to test (2; with 3 models beside the best the test "
                         "needs 7)")
    tuning = {r[0]: r for r in table_rows(text(synth_report / "tuning.html"), "table-tuning-all")}
    assert tuning["ft_transformer"][-1] == "⚑ 4" and tuning["catboost"][-1] == "0"
    compute = text(synth_report / "compute.html")
    assert 'id="fig-pareto"' in compute and 'id="fig-pareto-predict"' in compute
    comp = {r[0]: r for r in table_rows(compute, "table-compute")}
    assert comp["ft_transformer"][3] == "62.5" and comp["ft_transformer"][5] == "2"


def test_views_are_the_reports_installed_once_and_made_per_connection(tmp_path):
    from pipeline.data.views import VIEWS, install, temporary_views

    db = tmp_path / "results.duckdb"
    store = Store(db)  # the store makes tables only: the views are the report's
    with store.connect() as con:
        assert not con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0]
    assert len(store.query("SELECT * FROM leaderboard", prepare=temporary_views).columns) > 5  # made for one read
    install(store)
    once = db.read_bytes()
    install(Store(db))  # this version's views are there: nothing is written
    assert db.read_bytes() == once
    with store.connect() as con:
        names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert names == set(VIEWS)
    # A read goes through the file's own views when they are this version's, and makes its own otherwise.
    def made(db_file) -> int:
        with Store(db_file, create=False).connect(read_only=True, prepare=temporary_views) as con:
            return con.execute("SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal").fetchone()[0]

    assert made(db) == 0
    with store.connect() as con:
        con.execute("UPDATE attnbench_meta SET value = 'an-older-one' WHERE key = 'views'")
        con.execute("CREATE OR REPLACE VIEW leaderboard AS SELECT 1 AS stale")
    assert made(db) == len(VIEWS)
    assert len(store.query("SELECT * FROM leaderboard", prepare=temporary_views).columns) > 5  # not the stale one


def table_html(html: str, table_id: str) -> str:
    seg = html[html.index(f'id="{table_id}"'):]
    return seg[:seg.index("</table>")]


def test_a_tie_is_no_ones_win(tmp_path):
    """Every model scores the same on every split: no family leads, no model is best, nothing is
    coloured as a win, on every page that names a leader."""
    same = {k: (v[0], 0.8, 0.02, v[3]) for k, v in synthetic.MODELS.items()}
    db = synthetic.build(tmp_path / "r.duckdb", Synth(models=same, failed=set(), missing=set()))
    lb = Store(db).query("SELECT * FROM leaderboard")
    assert not lb.is_best.any() and lb.is_tied_best.all()
    write_report(db, tmp_path / "r", [overview.SPEC, accuracy.SPEC])
    html = html_lib.unescape(text(tmp_path / "r" / "index.html"))
    assert " leads " not in html
    assert ("At all training rows (2 tasks), attention network, other network and gradient boosting tie on mean "
            "normalised score") in html
    answer = {r[0]: r for r in table_rows(html, "table-answer")}
    assert all(r[5] == "tie: attention network, other network, gradient boosting" for r in answer.values()), answer
    for table_id in ("table-answer", "table-headline"):
        assert 'class="best"' not in table_html(html, table_id), table_id
    assert 'class="best"' not in html_lib.unescape(text(tmp_path / "r" / "accuracy.html"))


def test_the_constant_predictor_is_the_floor_of_every_table(tmp_path):
    """alpha's majority class scores 0.76: at 32 rows the FT-Transformer (0.74, 0.75) and the MLP (0.75,
    and 0.76: equal is no better) are no better than it, the boosting models (0.80 on) are; beta's training mean scores R² 0. The reference is a column of
    each per-dataset table, such cells are flagged there, counted per model, and named in the overview."""
    db = synthetic.build(tmp_path / "r.duckdb", Synth(constant={"alpha": 0.76, "beta": 0.0}, failed=set(),
                                                      missing=set()))
    cells = Store(db).query("SELECT model, fold, score, constant_score, no_better_than_constant FROM expected_cells "
                            "WHERE dataset = 'alpha' AND sample_size = '32' ORDER BY model, fold")
    flagged = cells[cells.no_better_than_constant]
    assert (cells.constant_score == 0.76).all()
    assert flagged[["model", "fold"]].values.tolist() == [["ft_transformer", 0], ["ft_transformer", 1], ["mlp", 0],
                                                     ["mlp", 1]]
    write_report(db, tmp_path / "r", [accuracy.SPEC, overview.SPEC])
    acc = text(tmp_path / "r" / "accuracy.html")
    alpha = next(r for r in table_rows(acc, "table-datasets-32") if r[0] == "alpha")  # catboost, ft, mlp, xgboost
    assert alpha[3].endswith("⊘") and alpha[4].endswith("⊘") and "⊘" not in alpha[2] + alpha[5]
    assert alpha[-2] == "0.760"
    beta = next(r for r in table_rows(acc, "table-datasets-32") if r[0] == "beta")
    assert beta[-2] == "0.000" and "⊘" not in "".join(beta)
    summary = {r[0]: r for r in table_rows(acc, "table-summary-32")}
    assert summary["ft_transformer"][10] == "⊘ 2" and summary["mlp"][10] == "⊘ 2" and summary["xgboost"][10] == "0"
    index = html_lib.unescape(text(tmp_path / "r" / "index.html"))
    assert ("No better than a constant predictor (the majority class, or the training mean): ft_transformer in 2 of "
            "4 finished cells at 32 training rows; mlp in 2 of 4 finished cells at 32 training rows.") in index


def test_a_study_s_floor_sentence_counts_per_model_not_per_size():
    """At a study's size (8 models × 6 sizes flagged) the overview's floor sentence is a total per model and
    the size where most fell, not 48 clauses; the per-size counts stay on the Accuracy page."""
    from pipeline.report.stats.answer import FLOOR_PARTS, floor_sentence

    sizes, models = ["128", "256", "1024", "4096", "10000", "12288"], [f"m{i}" for i in range(8)]
    rows = [{"model": m, "sample_size": s, "status": "ok", "no_better_than_constant": k < (3 if s == "128" else 1)}
            for m in models for s in sizes for k in range(5)]
    said = floor_sentence(pd.DataFrame(rows))
    assert len(models) * len(sizes) > FLOOR_PARTS and said is not None
    assert said.count("finished cells") == len(models) and "m0 in 8 of 30 finished cells, most at 128 training rows" in said
    assert "count them per size" in said
    few = floor_sentence(pd.DataFrame([r for r in rows if r["model"] == "m0" and r["sample_size"] in ("128", "256")]))
    assert few is not None and "m0 in 3 of 5 finished cells at 128 training rows; m0 in 1 of 5 finished cells at 256" in few
    # sizes in their numeric order ("1024" < "128" as text), and a tie named as one
    tied = [{**r, "no_better_than_constant": r["sample_size"] in ("128", "1024") and k % 5 < 2}
            for k, r in enumerate(rows)]
    said = floor_sentence(pd.DataFrame(tied))
    assert said is not None and "m0 in 4 of 30 finished cells, most at 128 and 1,024 training rows (tied)" in said


def test_superseded_results_are_history_not_averaged_in(synth_db, tmp_path):
    """The synthetic file holds an earlier version of (alpha, all, fold 0, xgboost) that scored 0.5: it
    is listed as superseded and read by no other view. A file from before plans were recorded (no
    suite_cells) expects each split it has results for × each model, and supersedes nothing."""
    st = Store(synth_db)
    sup = st.query("SELECT model, sample_size, fold, why, score FROM superseded")
    assert sup.values.tolist() == [["xgboost", "all", 0, "replaced", 0.5]]
    lb = st.query("SELECT score_mean, n_cells FROM leaderboard WHERE dataset = 'alpha' AND sample_size = 'all' "
                  "AND model = 'xgboost'")
    assert lb.n_cells.tolist() == [2] and lb.score_mean[0] == pytest.approx(synthetic.Synth().score(
        "xgboost", synthetic.Synth().datasets[0], "all", 0) + 0.005)
    legacy = synthetic.build(tmp_path / "old.duckdb", Synth(plan=False))
    old = Store(legacy)
    assert old.query("SELECT count(*) AS n FROM expected_cells").n[0] == 2 * 3 * 2 * 4
    assert old.query("SELECT count(*) AS n FROM superseded").n[0] == 0


def test_published_figures_ship_with_the_package_and_match_the_shared_files(shared_data):
    from pipeline.report import published

    shipped = published.load()
    fresh = published.build(shared_data.parent)
    pd.testing.assert_frame_equal(shipped.reset_index(drop=True), fresh.reset_index(drop=True), check_dtype=False)
    # Only the same version of the data, only headline metrics, one row per dataset × model × metric.
    assert set(shipped.metric) == {"accuracy", "r2"} and not shipped.duplicated(["dataset", "model", "metric"]).any()
    wine = shipped[(shipped.dataset == "wine_quality") & (shipped.model == "TabM (tuned) [TabM repo]")]
    assert wine["aggregate"].tolist() == ["mean of 3 splits"] and wine.value.iloc[0] == pytest.approx(0.462387, abs=1e-6)
    assert published.ours_for("tunedrandomforest (AMLB2019 1h)") == "random_forest"
    assert published.ours_for("autosklearn (AMLB2019 1h)") is None


def test_accuracy_page_sets_published_figures_beside_ours(synth_db):
    from pipeline.report.data import ReportData
    from pipeline.report.pages.accuracy import published_table

    data = ReportData.load(synth_db)
    assert "None of this report&#x27;s datasets" in published_table(data)
    # Call 'alpha' credit-g (OpenML 31): AMLB's figures appear beside our scores at its largest size.
    data.datasets.loc[data.datasets.dataset == "alpha", "openml_id"] = 31
    rows = table_rows(published_table(data), "table-published")
    rf = next(r for r in rows if r[2] == "randomforest (AMLB2019 1h)")
    assert rf[:2] == ["alpha", "accuracy"] and rf[3] == "0.767 ± 0.028"
    assert rf[5] == "—"  # no random forest in this run
    lb = data.leaderboard[(data.leaderboard.dataset == "alpha") & (data.leaderboard.sample_size == "all")]
    top = lb.loc[lb.val_mean.idxmax()]
    assert rf[6] == f"{top.model}: {top.score_mean:.3f} (all training rows)"
    assert all(r[0] == "alpha" for r in rows) and len(rows) == 14  # AMLB: 7 systems × 1 h, 4 h
    # our best model is validation's pick, not the highest test score: the top model on test, given the
    # lowest validation score, gives way to the next by validation
    on_test = lb.score_mean.idxmax()
    data.leaderboard.loc[on_test, "val_mean"] = -1.0
    runner_up = data.leaderboard.loc[lb.index.drop(on_test)].val_mean.idxmax()
    rf = next(r for r in table_rows(published_table(data), "table-published") if r[2] == "randomforest (AMLB2019 1h)")
    expect = data.leaderboard.loc[runner_up]
    assert rf[6] == f"{expect.model}: {expect.score_mean:.3f} (all training rows)" and expect.model != lb.loc[on_test, "model"]


def test_a_new_page_is_a_module_that_declares_its_spec(synth_db, tmp_path, monkeypatch):
    """A toy page added the way the report's own are: a builder and its PageSpec, declared once (file, link
    label, title), in the site's list. It is written under its title, every page links it in its header, and
    the overview describes it; nothing else was touched."""
    from pipeline.report import pages as pages_mod
    from pipeline.report.markup import Page
    from pipeline.report.site import PageSpec

    def page_toy(data) -> Page:
        p = spec.page()
        p.add(f"<p id='toy'>{len(data.models)} models</p>")
        return p

    spec = PageSpec("toy.html", "Toy page", "A page added by one row.", lambda s: page_toy(s.data), title="Toy")
    monkeypatch.setattr(pages_mod, "PAGES", [*pages_mod.PAGES, spec])
    out = tmp_path / "reports"
    pages_mod.write_report(synth_db, out)
    toy = (out / "toy.html").read_text()
    assert "models</p>" in toy and "<h1>Toy</h1>" in toy and "<title>Toy · attnbench</title>" in toy
    for each in pages_mod.PAGES:
        assert '<a href="toy.html"' in (out / each.file).read_text(), each.file
    assert "A page added by one row." in (out / "index.html").read_text()


def test_the_sample_size_page_gives_each_crossover_its_interval(evil_report):
    """The crossovers as a dataset × model matrix: each cell's crossover in words with its bootstrap
    interval over folds under it, and the paired test as its title."""
    import html
    import re

    _, reports = evil_report
    page = (reports / "sample_size.html").read_text()
    table = page[page.index('id="table-crossover"'):]
    table = table[:table.index("</table>")]
    heads = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", table)]
    assert heads[0] == "dataset" and "ft_transformer" in heads and "best attention (attention, best at each size)" in heads
    spans = [html.unescape(s) for s in re.findall(r'<span class="sub">(.*?)</span>', table)]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
    assert len(rows) == 3 and len(spans) == 3 * (len(heads) - 1)  # a dataset a row; every cell has its interval
    # two folds of synthetic results: an interval in sizes or "never up to N rows"
    assert all(re.fullmatch(r"\[(never up to [\d,]+ rows|[\d,]+)(, (never up to [\d,]+ rows|[\d,]+))?\]", s)
               for s in spans), spans
    assert "95% interval" in table and "over 2 folds" in table  # the verdict each rests on, as each cell's title
    assert "Wilcoxon" not in page  # one rule for a verdict: no second test beside it


def test_the_overview_links_each_dataset_to_its_row_on_the_sample_size_page(evil_report):
    import re

    _, reports = evil_report
    overview = (reports / "index.html").read_text()
    links = re.findall(r'<a href="sample_size.html#([^"]+)">', overview)
    page = (reports / "sample_size.html").read_text()
    assert len(links) == 3 and all(f'id="{a}"' in page for a in links)  # one click from the overview
    assert len(set(links)) == 3 and all(re.fullmatch(r"ds-[A-Za-z0-9_-]+-[0-9a-f]{6}", a) for a in links)


def test_which_data_favours_attention_rests_only_on_datasets_compared(evil_report):
    _, reports = evil_report
    page = (reports / "sample_size.html").read_text()
    # of the three datasets two are not converged: too few for the rank correlations, and said so
    assert "Needs at least 3 datasets on which the best attention and boosting models were compared (ahead, " \
           "equivalent, behind, undetermined above; 1 here)" in page
    assert 'id="table-standing"' in page and page.count(">not converged<") == 2


def test_no_crossover_is_projected_without_a_held_out_check(evil_report):
    """Three sizes: no curve has a larger size to hold out, so the page projects nothing (a projection is
    shown only beside the check of how well such fits predicted a held-out size on the same results)."""
    _, reports = evil_report
    page = (reports / "sample_size.html").read_text()
    assert 'id="projection"' in page and 'id="table-projection"' not in page
    assert "No learning curve here has 4 or more sizes, so no fit can be checked" in page


def test_each_run_shows_its_cost_wall_time_and_trial_hours(synth_db, synth_report):
    """A chunk of a long study is a run: the Run details page gives each its wall time and the hours of
    its trials, read from the file (so that a study's cost per chunk is on record)."""
    import duckdb

    with duckdb.connect(str(synth_db), read_only=True) as con:
        runs = con.execute("SELECT r.run_id, epoch(r.finished_at - r.started_at) AS wall, "
                           "(SELECT sum(seconds) FROM trials t WHERE t.run_id = r.run_id) AS s FROM runs r").fetchall()
    page = text(synth_report / "runs.html")
    table_ = page[page.index('id="table-runs"'):]
    table_ = table_[:table_.index("</table>")]
    assert "<th>wall</th>" in table_ and "<th>trial hours</th>" in table_
    rows = re.findall(r"<tr>(.*?)</tr>", table_, re.S)[1:]
    assert len(rows) == len(runs) >= 1
    for run_id, wall, seconds in runs:
        row = next(r for r in rows if run_id in r)
        cells = [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if wall is None:  # a run that never finished: no wall time
            assert cells[-2] == "", cells
        else:
            w = int(wall)
            assert cells[-2] == f"{w // 3600}:{w % 3600 // 60:02d}:{w % 60:02d}", cells
        assert cells[-1] == ("" if seconds is None else f"{seconds / 3600:.2f}"), cells


def test_plan_notes_name_models_as_the_report_does_and_keep_to_its_tasks():
    """A suite's not-applicable notes: under the report's name of its entry ('mlp [b]' where two suites plan
    different entries under 'mlp'), only on the report's tasks (a reference's notes cover its whole plan),
    and a model left out on some folds and run on the others says so."""
    import json as _json

    from pipeline.report.data import plan_notes

    notes = {"in_context": ["mlp"], "not_applicable": [
        {"dataset": "d1", "model": "mlp", "sizes": ["128", "all"], "why": "128 training rows, above its declared 100"},
        {"dataset": "elsewhere", "model": "mlp", "sizes": ["128"], "why": "x"}]}
    runs = pd.DataFrame({"suite": ["b", "a"], "plan_notes": [_json.dumps(notes), None]})
    cells = pd.DataFrame({"suite": ["a, b", "b", "a"], "dataset": ["d1", "d1", "d1"], "sample_size": ["64", "all", "all"],
                          "model": ["xgboost", "mlp [b]", "mlp [a]"]})
    names = pd.DataFrame({"suite": ["a, b", "a", "b"], "model_key": ["xgboost", "mlp", "mlp"],
                          "model": ["xgboost", "mlp [a]", "mlp [b]"]})
    na, in_context = plan_notes(runs, cells, names)
    assert in_context == {"mlp [b]"}
    assert na[["dataset", "sample_size", "model"]].values.tolist() == [["d1", "all", "mlp [b]"]]  # no task at 128 here
    assert na.why[0].endswith("(on the folds left out; it ran the others)")


def test_the_report_reads_every_frame_in_one_fixed_order(synth_db):
    """DuckDB returns a view's rows in whatever order its threads finish; sums in pandas then differ in the
    last bit from build to build. Every frame is read sorted, so the same file makes the same report."""
    from pipeline.report.data import CELL_ORDER, ReportData

    data = ReportData.load(synth_db)
    cell = [c.strip() for c in CELL_ORDER.split(",")]
    task = ["dataset", "split_key", "sample_size", "model"]
    for name, keys in (("cells", cell), ("tuning", [*cell, "shuffle", "trial_index"]), ("curves", task),
                       ("compute", task), ("memory", task), ("configured", ["cell_id"]), ("trials", ["cell_id"])):
        frame = getattr(data, name)
        assert len(frame) > 1, name
        pd.testing.assert_frame_equal(frame, frame.sort_values(keys, ignore_index=True), obj=name)


def test_a_figure_is_the_same_made_inside_the_reports_template_and_outside():
    """The pages are built inside ``templated()`` (the report's template as plotly's default, for speed): a
    figure made there is the one ``layout`` makes anywhere, and plotly's default is put back, even after an
    error."""
    import plotly.graph_objects as go
    import plotly.io as pio

    from pipeline.report import figures as figs

    outside = figs.layout(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), title_text="t")
    before = pio.templates.default
    with pytest.raises(RuntimeError), figs.templated():
        inside = figs.layout(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), title_text="t")
        raise RuntimeError("a page that fails")
    assert inside.to_plotly_json() == outside.to_plotly_json()
    assert outside.layout.template.layout.plot_bgcolor == "white"  # the report's template, not plotly's own
    assert pio.templates.default == before != figs.TEMPLATE


def test_a_crossover_cell_with_no_verdict_says_why(synth_db: Path, tmp_path: Path):
    """The Sample-size page's dataset × model matrix: where a model has no crossover on a dataset, the cell says
    why as the accuracy page's table does (its cells not run yet, grey; all failed, red; never planned there),
    never a blank a reader takes for a gap in the page."""
    import shutil

    import duckdb

    from pipeline.report.data import ReportData
    from pipeline.report.pages.sample_size import page_sample_size

    db = tmp_path / "partial.duckdb"
    shutil.copy(synth_db, db)
    with duckdb.connect(str(db)) as con:
        gone = "SELECT cell_id FROM results WHERE model = 'mlp' AND dataset = 'beta'"  # planned, none run yet
        for table_ in ("predictions", "targets", "trials", "attention_maps"):
            con.execute(f"DELETE FROM {table_} WHERE cell_id IN ({gone})")
        con.execute(f"DELETE FROM results WHERE cell_id IN ({gone})")
        con.execute("UPDATE results SET status = 'error' WHERE model = 'ft_transformer' AND dataset = 'alpha'")
        n_mlp = con.execute("SELECT count(*) FROM suite_cells WHERE model = 'mlp' AND dataset = 'beta'").fetchone()[0]
        n_ft = con.execute("SELECT count(*) FROM results WHERE model = 'ft_transformer' AND dataset = 'alpha'").fetchone()[0]
    page = "".join(page_sample_size(ReportData.load(db)).parts)
    matrix = page[page.index('id="table-crossover"'):]
    matrix = matrix[:matrix.index("</table>")]
    rows = {d: next(r for r in re.findall(r"<tr>(.*?)</tr>", matrix, re.S) if f"</span>{d}</td>" in r)
            for d in ("alpha", "beta")}
    assert n_mlp > 0 and n_ft > 0
    assert (f'<td class="notrun" title="0 ok, 0 failed, {n_mlp} not run yet of {n_mlp} cells">not run yet '
            f'({n_mlp}/{n_mlp})</td>') in rows["beta"], rows["beta"]
    assert (f'<td class="missing" title="0 ok, {n_ft} failed, 0 not run yet of {n_ft} cells">failed '
            f'({n_ft}/{n_ft})</td>') in rows["alpha"], rows["alpha"]
    assert "<td></td>" not in matrix and '<td class="notrun"></td>' not in matrix
    with duckdb.connect(str(db)) as con:  # no suite planned the MLP on beta: not run, and not a loss
        con.execute("DELETE FROM suite_cells WHERE model = 'mlp' AND dataset = 'beta'")
    page = "".join(page_sample_size(ReportData.load(db)).parts)
    assert ('<td class="notrun" title="no suite planned this model on this dataset: no crossover, not a loss">'
            'not run</td>') in page
