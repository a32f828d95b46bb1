"""Tuned beside defaults (pipeline.report.stats.tuned, the tuning page): a file holding a model at its defaults
and searched sets the two side by side on the splits the searched entry ran, and each family's gap to
boosting at defaults and tuned, split by split."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest
import synthetic
from synthetic import MODELS, Synth
from tables import table_rows

from pipeline.report.data import ReportData
from pipeline.report.pages import tuning, write_report
from pipeline.report.stats import tuned as tn

DEFAULTS = ("xgboost", "catboost", "ft_transformer")


@pytest.fixture(scope="module")
def tuned_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic study, its three models at defaults (one trial per cell; XGBoost the best boosting
    model), beside a searched FT-Transformer 0.06 better and a searched CatBoost 0.01 better, which ran
    fold 0 at 'all' only, and whose CatBoost search failed on beta."""
    models = {k: MODELS[k] for k in DEFAULTS} | {"xgboost": ("xgboost", 0.83, 0.020, 0.05)}
    models |= {"ft-tuned": ("ft_transformer", 0.80, 0.035, 2.0), "cb-tuned": ("catboost", 0.82, 0.018, 0.2)}
    s = Synth(models=models)
    s.missing |= {(ds.name, size, fold, key) for ds in s.datasets for size in s.sizes for fold in s.folds
                  for key in ("ft-tuned", "cb-tuned") if (size, fold) != ("all", 0)}
    s.failed |= {("beta", "all", 0, "cb-tuned")}
    db = synthetic.build(tmp_path_factory.mktemp("tuned") / "results.duckdb", s)
    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM trials WHERE trial_index > 0 AND cell_id IN (SELECT cell_id FROM results "
                    f"WHERE model IN {DEFAULTS})")
    return db


def found_in(db: Path) -> tuple[ReportData, tn.Entries]:
    data = ReportData.load(db)
    return data, tn.entries(data.cells, data.trials)


def test_entries_pair_defaults_with_searches_of_the_same_model(tuned_db: Path):
    _, found = found_in(tuned_db)
    assert found.pairs == [("catboost", "cb-tuned"), ("ft_transformer", "ft-tuned")]
    assert found.default[("xgboost", "boosting")] == ["xgboost"] and ("xgboost", "boosting") not in found.searched


def test_pairs_and_gaps_compare_the_same_models_split_by_split(tuned_db: Path):
    data, found = found_in(tuned_db)
    cells = tn.slice_cells(data.cells, found)
    assert set(zip(cells.sample_size, cells.fold)) == {("all", 0)}  # the defaults' other folds and sizes left out
    pairs = tn.pairs_table(cells, found).set_index("model")
    assert pairs.loc["ft_transformer", "splits"] == 2 and pairs.loc["ft_transformer", "diff"] == pytest.approx(0.06)
    # two splits that agree (+0.06 on both datasets): ahead, by the corrected interval over them
    assert pairs.loc["ft_transformer", "verdict"] == "ahead"
    # CatBoost's search failed on beta: counted as failed, not dropped; alpha's 0.01 is past the 0.005 margin,
    # on one split: undetermined
    assert tuple(pairs.loc["catboost", ["splits", "better", "within", "worse", "failed"]]) == (1, 1, 0, 0, 1)
    assert pairs.loc["catboost", "decision"].words() == "undetermined (one fold)"
    g = tn.gaps(cells, data.family, found, "attention network").set_index("dataset")
    # At defaults FT-Transformer meets the default CatBoost (the model that was searched), not the better
    # default XGBoost: alpha 0.9025 − 0.8936; tuned 0.9625 − 0.9036. One fold each: undetermined, their
    # differences (and where they lie against the margin) data.
    assert g.loc["alpha", "default_boosting"] == "catboost"
    assert g.loc["alpha", "default_diff"] == pytest.approx(0.0089, abs=1e-4)
    assert g.loc["alpha", "default_standing"] == "undetermined" and g.loc["alpha", "default_decision"].lean == "ahead"
    assert g.loc["alpha", "tuned_diff"] == pytest.approx(0.0589, abs=1e-4) and g.loc["alpha", "tuned_standing"] == "undetermined"
    # beta: FT behind at defaults (on one fold: undetermined, however bound); tuned, CatBoost failed
    assert g.loc["beta", "default_diff"] == pytest.approx(-0.0135, abs=1e-4)
    assert g.loc["beta", "default_standing"] == "undetermined" and g.loc["beta", "tuned_standing"] == "failed"
    tuned, default = tn.gap_summary(g, "tuned"), tn.gap_summary(g, "default")
    assert (tuned["n"], tuned["undetermined"], tuned["failed"]) == (1, 1, 1) and tuned["mean"] == pytest.approx(0.0589, abs=1e-4)
    assert (tuned["one_fold"], tuned["lean_ahead"]) == (1, 1)
    assert (default["n"], default["undetermined"], default["lean_ahead"], default["lean_behind"]) == (1, 2, 1, 1)


def test_a_searched_gain_within_the_margin_is_not_a_gain(tuned_db: Path, tmp_path: Path):
    db = tmp_path / "near.duckdb"
    db.write_bytes(tuned_db.read_bytes())
    with duckdb.connect(str(db)) as con:  # the searched FT-Transformer 0.003 better than the default, not 0.06
        con.execute("UPDATE results SET accuracy = accuracy - 0.057, r2 = r2 - 0.057 WHERE model = 'ft-tuned'")
    data, found = found_in(db)
    pairs = tn.pairs_table(tn.slice_cells(data.cells, found), found).set_index("model")
    assert tuple(pairs.loc["ft_transformer", ["better", "within", "worse"]]) == (0, 2, 0)
    assert pairs.loc["ft_transformer", "verdict"] == "equivalent"  # +0.003 on both splits: inside ±0.005


def test_the_tuning_page_sets_tuned_beside_defaults(tuned_db: Path, tmp_path: Path):
    page = (write_report(tuned_db, tmp_path / "reports", [tuning.SPEC]).parent / "tuning.html").read_text()
    pairs = {r[0]: r for r in table_rows(page, "table-tuned-pairs")}
    assert pairs["ft_transformer"][1:3] == ["ft-tuned", "2"] and pairs["ft_transformer"][5].startswith("+0.060")
    assert pairs["ft_transformer"][6] == "ahead"
    assert pairs["catboost"][6:] == ["undetermined (one fold)", "1 / 0 / 0", "1"]
    gap = table_rows(page, "table-tuned-gap-attention-network")
    assert [r[0] for r in gap] == ["alpha", "beta", "mean over the tasks compared"]
    assert gap[1][3:] == ["ft_transformer − catboost", "-0.014", "undetermined (one fold), past ±0.005", "—", "—",
                          "failed"]
    assert gap[2][3:6] == ["1 tasks", "+0.009", "ahead 0, equivalent 0, behind 0, undetermined 2; of the 2 on one "
                           "fold, past +0.005: 1, within: 0, past −0.005: 1"]
    assert gap[2][6:] == ["1 tasks", "+0.059", "ahead 0, equivalent 0, behind 0, undetermined 1, failed 1; of the 1 on "
                          "one fold, past +0.005: 1, within: 0, past −0.005: 0"]
    assert ">level<" not in page and "level /" not in page
    # where no family has both sides (the searched FT-Transformer alone), the pairs table without the gaps' note
    db = tmp_path / "ft-only.duckdb"
    db.write_bytes(tuned_db.read_bytes())
    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM results WHERE model = 'cb-tuned'")
    page = (write_report(db, tmp_path / "r1", [tuning.SPEC]).parent / "tuning.html").read_text()
    assert 'id="table-tuned-pairs"' in page and "The same models both ways" not in page
    # a file with no searched entry beside its defaults has no such section
    plain = synthetic.build(tmp_path / "plain.duckdb")
    assert 'id="table-tuned-pairs"' not in (write_report(plain, tmp_path / "r2", [tuning.SPEC]).parent / "tuning.html").read_text()


def test_the_gap_means_at_defaults_and_tuned_cover_the_same_tasks():
    """A task read 'not converged' at defaults and 'ahead' tuned is in neither mean: a lead tuning seems to
    make there would be set against defaults that left the task out."""
    import pandas as pd

    none = [None] * 3
    g = pd.DataFrame({"default_standing": ["not converged", "equivalent", "behind"], "default_diff": [0.017, 0.001, -0.02],
                      "tuned_standing": ["ahead", "undetermined", "failed"], "tuned_diff": [0.015, 0.002, float("nan")],
                      "default_decision": none, "tuned_decision": none})
    d, t = tn.gap_summary(g, "default"), tn.gap_summary(g, "tuned")
    assert (d["n"], t["n"]) == (1, 1) and d["mean"] == pytest.approx(0.001) and t["mean"] == pytest.approx(0.002)
    assert (d["not converged"], d["behind"], t["ahead"], t["failed"]) == (1, 1, 1, 1)  # counts: every task


def test_a_trial_lost_and_run_again_does_not_make_a_default_entry_searched():
    """Two trial rows of one suggestion (the first lost to the infrastructure, re-queued) are one configuration:
    the entry stays at its defaults, and pairs with its searched entry."""
    cells = pd.DataFrame({"cell_id": ["a", "b", "c"], "model": ["ft", "ft", "ft-tuned"], "status": ["ok", "ok", "ok"],
                          "model_name": ["ft_transformer"] * 3, "model_kind": ["attention"] * 3})
    trials = pd.DataFrame({"cell_id": ["a", "b", "c"], "n_trials": [2, 1, 4], "n_suggestions": [1, 1, 4]})
    found = tn.entries(cells, trials)
    assert found.pairs == [("ft", "ft-tuned")]
