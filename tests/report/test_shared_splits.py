"""Every model on a task is compared on the same splits: where one model was planned on fewer folds than
the others (a one-fold tuned slice merged beside a three-fold study), the folds it never ran are left out
for every model of that task, listed by ``unshared_cells`` and said on the pages; and a model that ran
fewer of a size's tasks than others of its family does not stand for the family on the overview."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import synthetic
from synthetic import MODELS, Synth

from pipeline.data.store import Store
from pipeline.report.data import ReportData
from pipeline.report.pages import PAGES, accuracy, compute, memory, overview, write_report
from pipeline.report.stats.ranking import ranking


@pytest.fixture(scope="module")
def one_fold_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """XGBoost and CatBoost on both folds, and 'cb-fold0', CatBoost's very entry (the same scores), planned
    on fold 0 only. The synthetic fold 1 scores 0.01 higher, so a mean over each model's own folds puts
    CatBoost 0.005 ahead of its own copy."""
    s = Synth(models={k: MODELS[k] for k in ("xgboost", "catboost")} | {"cb-fold0": MODELS["catboost"]})
    s.unplanned = {(ds.name, size, 1, "cb-fold0") for ds in s.datasets for size in s.sizes}
    s.missing = set()
    return synthetic.build(tmp_path_factory.mktemp("one-fold") / "results.duckdb", s)


def test_an_entry_and_its_one_fold_copy_tie_on_every_task(one_fold_db: Path):
    lb = Store(one_fold_db).query("SELECT dataset, sample_size, model, score_mean, n_cells, is_best, is_tied_best "
                                  "FROM leaderboard WHERE model <> 'xgboost'")
    per_task = lb.pivot_table(index=["dataset", "sample_size"], columns="model", values="score_mean")
    assert len(per_task) == 6
    assert (per_task["catboost"] - per_task["cb-fold0"]).abs().max() < 1e-12  # not 0.005 apart
    assert (lb.n_cells == 1).all() and not lb.is_best.any()
    data = ReportData.load(one_fold_db)
    st = ranking(data, "all").summary.set_index("model")
    assert st.loc["catboost", "avg_rank"] == st.loc["cb-fold0", "avg_rank"]
    assert st.loc["catboost", "normalized_score"] == st.loc["cb-fold0", "normalized_score"]


def test_the_left_out_folds_are_listed_and_said(one_fold_db: Path, tmp_path: Path):
    unshared = Store(one_fold_db).query("SELECT model, fold, models_on_split, models_on_task FROM unshared_cells")
    assert len(unshared) == 2 * 2 * 3  # XGBoost and CatBoost, fold 1, 2 datasets × 3 sizes
    assert set(unshared.model) == {"xgboost", "catboost"} and set(unshared.fold) == {1}
    assert set(zip(unshared.models_on_split, unshared.models_on_task)) == {(2, 3)}
    assert (Store(one_fold_db).query("SELECT count(*) AS n FROM expected_cells").n[0]
            == Store(one_fold_db).query("SELECT count(*) AS n FROM compared_cells").n[0] + 12)
    write_report(one_fold_db, tmp_path / "reports")
    for page in ("index.html", "accuracy.html"):
        html = (tmp_path / "reports" / page).read_text()
        assert "so 12 planned cells on splits only some of them planned" in html, page
        assert "synth: 12 cells of 2 models" in html, page
    # The site says it once on every page that compares models (no page adds it by hand); the attention
    # maps and the run details read every current result, and do not.
    for spec in PAGES:
        html = (tmp_path / "reports" / spec.file).read_text()
        assert html.count("Compared on shared splits:") == (1 if spec.compares else 0), spec.file
    assert {s.file for s in PAGES if not s.compares} == {"attention.html", "runs.html"}


def test_a_file_whose_models_share_their_splits_says_nothing(tmp_path: Path):
    """Every model on both folds; and 'cb-fold0' planned on fold 0 only but not run yet anywhere: a model
    with no record on a task narrows nothing (not run yet is not a loss, nor a reason to drop folds)."""
    s = Synth(models={k: MODELS[k] for k in ("xgboost", "catboost")} | {"cb-fold0": MODELS["catboost"]})
    s.unplanned = {(ds.name, size, 1, "cb-fold0") for ds in s.datasets for size in s.sizes}
    s.missing |= {(ds.name, size, 0, "cb-fold0") for ds in s.datasets for size in s.sizes}
    db = synthetic.build(tmp_path / "results.duckdb", s)
    assert Store(db).query("SELECT count(*) AS n FROM unshared_cells").n[0] == 0
    assert (Store(db).query("SELECT count(*) AS n FROM compared_cells").n[0]
            == Store(db).query("SELECT count(*) AS n FROM expected_cells").n[0] == 2 * 3 * (2 * 2 + 1))
    assert ReportData.load(db).unshared_note() == ""


def test_the_documented_query_lists_them(one_fold_db: Path):
    text = (Path(__file__).parents[2] / "docs" / "QUERIES.md").read_text()
    start = text.index("-- Which splits do the pages leave out")
    sql = text[start:text.index(";", start) + 1]
    rows = Store(one_fold_db).query(sql)
    assert len(rows) == 6 and set(rows.cells) == {2} and set(zip(rows.planned_by, rows.of_models)) == {(2, 3)}


def test_a_model_that_ran_one_dataset_does_not_stand_for_its_family(tmp_path: Path):
    """'ft-alpha', an attention entry far better than FT-Transformer, ran alpha only: its mean over one task
    would make attention lead every size; FT-Transformer, which ran both datasets, stands for the family."""
    from pipeline.report.stats.answer import size_answer

    s = Synth(models={k: MODELS[k] for k in ("xgboost", "ft_transformer")}
              | {"ft-alpha": ("ft_transformer", 0.95, 0.0, 2.0)})
    s.unplanned = {("beta", size, fold, "ft-alpha") for size in s.sizes for fold in s.folds}
    data = ReportData.load(synthetic.build(tmp_path / "results.duckdb", s))
    for size in s.sizes:
        a = size_answer(size, data.cells[data.cells.sample_size == size], data.kinds)
        lead = a.leaders["attention network"]
        assert (lead.model, lead.tasks_ran, a.leader) == ("ft_transformer", 2, "gradient boosting"), size
    # The Accuracy page's leaderboard: ranked first by its one task, it comes after the models that ran
    # both, and its Elo (from fewer games) is not coloured the best.
    from pipeline.report.parts import summary_table

    st = ranking(data, "all")
    assert st.summary.model.tolist()[-1] == "ft-alpha" and st.summary.avg_rank.iloc[-1] < st.summary.avg_rank.iloc[0]
    assert st.summary.elo.iloc[-1] == st.summary.elo.max()  # its one game won: the highest Elo, not the best
    assert 'class="best"' not in summary_table(st, "t")  # the two that ran both tie: no one's colour
    # the critical difference compares the two that ran both tasks, on both (not on ft-alpha's one)
    assert sorted(st.cd.avg_ranks.index) == ["ft_transformer", "xgboost"] and st.cd.n_tasks == 2
    # the Elo figure draws it below them (the first trace is the bottom row), hollow, its one task named
    from pipeline.report import figures as figs

    fig = figs.elo_plot(st.elo.table, data.style(), st.elo.level, frozenset(st.summary.model[st.summary.fewer_tasks]))
    assert fig.data[0].name == "ft-alpha (1 task)" and fig.data[0].marker.symbol == "circle-open"
    assert {t.name for t in fig.data[1:]} == {"ft_transformer", "xgboost"}


def test_a_family_member_with_no_score_yet_keeps_the_family_crossover(tmp_path: Path):
    """'ft-later', an attention entry planned everywhere and run nowhere yet (a tuned slice's cells to
    come): the attention family's crossover against boosting is still told on every dataset."""
    from pipeline.report.stats.answer import family_crossovers

    s = Synth(models={k: MODELS[k] for k in ("xgboost", "ft_transformer")} | {"ft-later": MODELS["ft_transformer"]})
    s.missing = {(ds.name, size, fold, "ft-later") for ds in s.datasets for size in s.sizes for fold in s.folds}
    data = ReportData.load(synthetic.build(tmp_path / "results.duckdb", s))
    c = family_crossovers(data.standings, data.kinds)
    att = c[c.family == "attention network"]
    assert sorted(att.dataset) == ["alpha", "beta"] and set(att.challenger_at) == {"ft_transformer"}


def test_the_report_orders_models_by_name_not_by_the_views_rows(tmp_path: Path):
    """A tie in validation goes to the first model of a group (report/stats/pick.py): that order is the models'
    names, so the same file reads the same whatever order a view returns its rows in."""
    s = Synth(models={k: MODELS[k] for k in ("xgboost", "mlp", "catboost")})
    data = ReportData.load(synthetic.build(tmp_path / "results.duckdb", s))
    assert list(data.kinds) == list(data.model_names) == ["catboost", "mlp", "xgboost"]


def test_a_suite_whose_cells_another_suite_ran_reads_them_once(tmp_path: Path):
    """A shipped suite that lists entries an earlier suite already ran (the tuned slice beside the study's
    defaults) holds those results under the earlier suite's name, with no plan of it: they are the
    shipped suite's planned cells, not also a plan-less suite of their own on a split key of its own."""
    import duckdb

    db = synthetic.build(tmp_path / "results.duckdb", Synth(models={k: MODELS[k] for k in ("xgboost", "mlp")}))
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE suite_cells SET suite = 'slice'")  # results keep suite 'synth'
        con.execute("DELETE FROM results WHERE cell_id NOT IN (SELECT cell_id FROM suite_cells)")  # superseded
    st = Store(db)
    planned = st.query("SELECT count(*) AS n FROM suite_cells").n[0]
    cells = st.query("SELECT suite, split_key, count(*) AS n FROM expected_cells GROUP BY ALL")
    assert cells.n.sum() == planned and set(cells.suite) == {"slice"}
    assert not (cells.split_key == "suite:synth").any()
    assert st.query("SELECT count(*) AS n FROM current_results").n[0] == st.query(
        "SELECT count(*) AS n FROM results WHERE cell_id IN (SELECT cell_id FROM suite_cells)").n[0]


def test_cost_and_memory_are_over_the_compared_cells_too(one_fold_db: Path):
    st = Store(one_fold_db)
    for view in ("compute", "memory"):
        n = st.query(f"SELECT model, sum(n_ok) AS n FROM {view} GROUP BY model").set_index("model").n
        assert n.to_dict() == {"xgboost": 6, "catboost": 6, "cb-fold0": 6}, view  # fold 1 left out for all


def test_a_model_waiting_on_a_task_still_stands_for_its_family(tmp_path: Path):
    """'ft-next', planned on both datasets but not run yet on beta (a study in chunks), is not a model that
    ran fewer tasks: it stands for attention where validation picks it, and ranks among the others."""
    from pipeline.report.stats.answer import size_answer

    s = Synth(models={k: MODELS[k] for k in ("xgboost", "ft_transformer")}
              | {"ft-next": ("ft_transformer", 0.95, 0.0, 2.0)})
    s.missing = {("beta", size, fold, "ft-next") for size in s.sizes for fold in s.folds}
    data = ReportData.load(synthetic.build(tmp_path / "results.duckdb", s))
    a = size_answer("all", data.cells[data.cells.sample_size == "all"], data.kinds)
    assert a.leaders["attention network"].model == "ft-next"
    assert not ranking(data, "all").summary.fewer_tasks.any()


def test_cost_and_memory_list_a_model_of_fewer_tasks_last_and_say_why(tmp_path: Path):
    """'ft-alpha' ran alpha only (every size): its train time and peak are means over alpha's rows, not over
    both datasets' as the others' are; the tables list it after them and say so once each."""
    from pipeline.report.data import fewer_tasks_note, per_model

    s = Synth(models={k: MODELS[k] for k in ("xgboost", "ft_transformer")}
              | {"ft-alpha": ("ft_transformer", 0.95, 0.0, 2.0)})
    s.unplanned = {("beta", size, fold, "ft-alpha") for size in s.sizes for fold in s.folds}
    db = synthetic.build(tmp_path / "results.duckdb", s)
    data = ReportData.load(db)
    for view in (data.compute, data.memory):
        t = per_model(view, {}, data)
        assert t.model.tolist() == ["ft_transformer", "xgboost", "ft-alpha"]  # by name, then the fewer
        assert t.n_tasks.tolist() == [6, 6, 3] and t.fewer_tasks.tolist() == [False, False, True]
    write_report(db, tmp_path / "reports", [overview.SPEC, accuracy.SPEC, compute.SPEC, memory.SPEC])
    for page in ("compute.html", "memory.html"):
        html = (tmp_path / "reports" / page).read_text()
        assert html.count("Listed last: ft-alpha, planned on fewer tasks than the others. Its means cover") == 1, page
    for page in ("index.html", "accuracy.html"):  # the Elo figures draw it hollow, below, its one task named
        assert '"name":"ft-alpha (1 task)"' in (tmp_path / "reports" / page).read_text(), page
    full = Synth(models={k: MODELS[k] for k in ("xgboost", "ft_transformer")})
    other = ReportData.load(synthetic.build(tmp_path / "full.duckdb", full))
    assert fewer_tasks_note(per_model(other.compute, {}, other)) == ""


def test_a_cell_two_suites_plan_is_one_cell(tmp_path: Path):
    """The tuned slice merged into the study's file: the slice plans the study's own fold-0 cells again
    (its defaults, entry for entry). Each is one expected cell, named by both suites, counted once: every
    count and score reads as before the second plan."""
    import duckdb

    from pipeline.report.data import per_model

    db = synthetic.build(tmp_path / "results.duckdb", Synth(models={k: MODELS[k] for k in ("xgboost", "mlp")}))
    lb_sql = "SELECT * EXCLUDE (suite) FROM leaderboard ORDER BY ALL"

    def coverage() -> list[str]:
        data = ReportData.load(db)
        return per_model(data.compute, {}, data).coverage.tolist()

    before, covered = Store(db).query(lb_sql), coverage()
    with duckdb.connect(str(db)) as con:
        con.execute("INSERT INTO suite_cells SELECT * REPLACE ('slice' AS suite) FROM suite_cells WHERE fold = 0")
    st = Store(db)
    for view in ("expected_cells", "compared_cells"):
        n = st.query(f"SELECT count(*) AS n, count(DISTINCT cell_id) AS d FROM {view}").iloc[0]
        assert n.n == n.d == 2 * 2 * 3 * 2, view  # 2 models × 2 datasets × 3 sizes × 2 folds
    assert set(st.query("SELECT DISTINCT suite FROM expected_cells WHERE fold = 0").suite) == {"slice, synth"}
    pd.testing.assert_frame_equal(st.query(lb_sql), before)
    assert coverage() == covered
    for view in ("leaderboard", "learning_curves", "compute", "memory"):  # each suite named once
        assert set(st.query(f"SELECT DISTINCT suite FROM {view}").suite) == {"slice, synth"}, view


def test_the_overview_says_which_crossover_verdicts_rest_on_one_split(tmp_path: Path):
    """'xgb-fold0' planned on alpha's fold 0 only: alpha is compared on that fold alone, beta on both, so
    one attention verdict of two rests on one split, and the overview says so once, in the singular."""
    s = Synth(models={k: MODELS[k] for k in ("xgboost", "ft_transformer")} | {"xgb-fold0": MODELS["xgboost"]})
    s.unplanned = {("alpha", size, 1, "xgb-fold0") for size in s.sizes}
    s.missing = set()
    db = synthetic.build(tmp_path / "results.duckdb", s)
    write_report(db, tmp_path / "reports", [overview.SPEC])
    html = (tmp_path / "reports" / "index.html").read_text()
    assert html.count("1 of these verdicts rests on one fold, so is undetermined.") == 1
    assert "verdicts rest on one fold" not in html


def test_a_pair_is_compared_on_every_split_both_ran_and_a_family_picks_on_its_shared_ones(tmp_path: Path):
    """FT-Transformer and the boosting models on four folds; 'ft-two', a second attention entry, planned on
    folds 0 and 1 only (issue 59's entries beside issue 58's repeats). The pages' means narrow every model to
    the two folds all planned; a verdict does not: FT-Transformer against boosting keeps its four splits,
    ft-two is set against boosting on its two. The attention pick is made on the two folds both attention
    entries ran: there ft-two leads by 0.005, while FT-Transformer's mean over its own four folds, which
    score higher, would lead by 0.005."""
    s = Synth(models={k: MODELS[k] for k in ("xgboost", "catboost", "ft_transformer")}
              | {"ft-two": ("ft_transformer", 0.745, 0.035, 2.0)}, folds=(0, 1, 2, 3))
    s.unplanned = {(ds.name, size, f, "ft-two") for ds in s.datasets for size in s.sizes for f in (2, 3)}
    s.missing, s.failed = set(), set()
    db = synthetic.build(tmp_path / "results.duckdb", s)
    compared = Store(db).query("SELECT DISTINCT fold FROM compared_cells")
    assert set(compared.fold) == {0, 1}
    st = Store(db).query("SELECT dataset, sample_size, model, versus, versus_model, n_splits, family_best "
                         "FROM standings WHERE versus = 'best gradient boosting'")
    assert len(st) == 2 * len(s.datasets) * len(s.sizes)
    assert (st[st.model == "ft_transformer"].n_splits == 4).all()
    assert (st[st.model == "ft-two"].n_splits == 2).all()
    assert set(st[st.family_best].model) == {"ft-two"}
    # the boosting pick is made on the four folds its two models share: CatBoost's validation scores lead
    assert set(st.versus_model) == {"catboost"}
    # the answer's best attention network is ft-two, planned on two folds: its verdict can rest on two, not four
    from pipeline.report import answer_text

    p = answer_text.pairs(str(db))
    assert set(p.model) == {"ft-two"} and (p.planned == 2).all() and (p.n_splits == 2).all()


def test_a_model_with_folds_still_to_run_has_not_run_the_task_yet(tmp_path: Path):
    """'ft-next' (validation far above FT-Transformer's) finished fold 0 of beta and has fold 1 still to run (a
    chunk ended between them): it is in no pick and has no verdict on beta until fold 1 has an outcome, so
    FT-Transformer stands for attention there on both its folds, never a one-fold pick or a one-split verdict;
    on alpha, which it finished, it is picked."""
    s = Synth(models={k: MODELS[k] for k in ("xgboost", "ft_transformer")}
              | {"ft-next": ("ft_transformer", 0.95, 0.0, 2.0)})
    s.missing = {("beta", size, 1, "ft-next") for size in s.sizes}
    db = synthetic.build(tmp_path / "results.duckdb", s)
    with Store(db, create=False).connect(read_only=True) as con:
        best = con.execute("SELECT dataset, sample_size, model, n_splits, val_mean FROM standings WHERE family_best "
                           "AND family = 'attention network' AND versus = 'best gradient boosting'").df()
        beta = con.execute("SELECT DISTINCT model FROM standings WHERE dataset = 'beta'").df()
    assert "ft-next" not in set(beta.model)
    on_beta, on_alpha = best[best.dataset == "beta"], best[best.dataset == "alpha"]
    assert set(on_beta.model) == {"ft_transformer"} and (on_beta.n_splits == 2).all() and len(on_beta) == len(s.sizes)
    both = ReportData.load(db).cells.query("dataset == 'beta' and model == 'ft_transformer' and sample_size == 'all'")
    assert on_beta[on_beta.sample_size == "all"].val_mean.iloc[0] == pytest.approx(both.val_score.mean())
    assert set(on_alpha.model) == {"ft-next"} and (on_alpha.n_splits == 2).all()


def test_a_model_that_failed_every_fold_or_another_fold_leaves_the_pick_to_validation(tmp_path: Path):
    """On beta 'ftz' (validation far above FT-Transformer's) is picked though 'ft-aa' failed every fold there
    (no score: in no pick, not a reason to pick by name); on alpha FT-Transformer and 'ftz' each failed a
    different fold, so no split is shared: each one's own mean picks, ftz, never the first by name (which is
    FT-Transformer's: ftz sorts after it)."""
    s = Synth(models={k: MODELS[k] for k in ("xgboost", "ft_transformer")}
              | {"ft-aa": ("ft_transformer", 0.70, 0.035, 2.0), "ftz": ("ft_transformer", 0.95, 0.0, 2.0)})
    s.missing = set()
    s.failed = ({("beta", size, f, "ft-aa") for size in s.sizes for f in s.folds}
                | {("alpha", size, 0, "ft_transformer") for size in s.sizes} | {("alpha", size, 1, "ftz") for size in s.sizes})
    db = synthetic.build(tmp_path / "results.duckdb", s)
    with Store(db, create=False).connect(read_only=True) as con:
        best = con.execute("SELECT DISTINCT dataset, sample_size, model FROM standings WHERE family_best "
                           "AND family = 'attention network'").df()
    assert len(best) == 2 * len(s.sizes) and set(best.model) == {"ftz"}
