"""The `standings` view (issue 58 items 1 and 2): one verdict per pair of models on a task, in every results
file, computed in SQL by the rule pipeline/report/stats/verdicts.py states in Python. The two are checked
against each other on every row of the shipped references and of the synthetic file: the same picks
(validation, never test), the same splits, the same interval and the same verdict."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import synthetic
from scipy import stats
from shipped import exported

from pipeline.data.standings import T_TABLE, t_quantile
from pipeline.data.store import Store
from pipeline.models.kinds import ATTENTION, BOOSTING, NETWORK, family_of
from pipeline.records import Status, Verdict
from pipeline.report.stats import pick
from pipeline.report.stats.verdicts import MARGIN, cap_splits, decide, detectable, power

SHIPPED = ("study-every-dataset", "study-lite", "study-tuned-slice")
TASK = ["dataset", "split_key", "sample_size"]
COLUMNS = ["dataset", "split_key", "sample_size", "n_train", "model", "family", "family_best", "versus", "versus_model",
           "diff", "lo", "hi", "margin", "n_splits", "verdict"]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("standings")
    out = {name: exported(tmp_path_factory, name, root / f"{name}.duckdb") for name in SHIPPED}
    out["synthetic"] = synthetic.build(root / "synthetic.duckdb", synthetic.evil())
    out["mixed"] = synthetic.build(root / "mixed.duckdb", mixed())
    return out


def mixed() -> synthetic.Synth:
    """Four folds, and a second attention entry planned on two of them (issue 59's entries beside issue 58's
    repeats): its family's pick is made on the two, its pair with boosting on the two, FT-Transformer's on four."""
    s = synthetic.Synth(models={k: synthetic.MODELS[k] for k in ("xgboost", "catboost", "mlp", "ft_transformer")}
                        | {"ft-two": ("ft_transformer", 0.745, 0.035, 2.0)}, folds=(0, 1, 2, 3))
    s.unplanned = {(ds.name, size, f, "ft-two") for ds in s.datasets for size in s.sizes for f in (2, 3)}
    s.missing = set()
    return s


def test_the_t_quantiles_in_sql_are_scipys():
    con = duckdb.connect()
    for p in (0.975, 0.95):
        got = con.execute(f"SELECT df, {t_quantile(p, 'df')} AS t FROM range(1, 5001) r(df)").df()
        want = stats.t.ppf(p, got.df.to_numpy())
        table = got.df <= T_TABLE
        assert (got.t[table].to_numpy() == want[table]).all()  # the same doubles
        assert np.abs(got.t[~table].to_numpy() - want[~table]).max() < 1e-9  # the expansion


def recomputed(db: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The view's rows, and from the expected cells the per-split scores (every finished split: a pair is
    compared on the splits both finished) and per-task validation means over the splits every model of the
    family that ran the task finished (what a family's best is picked on), in pandas."""
    with Store(db, create=False).connect(read_only=True) as con:
        view = con.execute("SELECT * FROM standings").df()
        cells = con.execute("SELECT * FROM expected_cells").df()
    cells["model_kind"] = cells.groupby("model").model_kind.transform("min")  # one kind per model
    cells["family"] = [family_of(k) for k in cells.model_kind]
    cells["scored"] = (cells.status == Status.OK) & cells.score.notna()
    cells["waiting"] = cells.status == Status.MISSING
    g = cells.groupby([*TASK, "model"]).agg(scored=("scored", "any"), waiting=("waiting", "any"))
    ran = g[g.scored & ~g.waiting].index  # a cell still to run: not run yet; no score: in no pick
    cells = cells.set_index([*TASK, "model"]).loc[lambda c: c.index.isin(ran)].reset_index()
    models = cells.groupby([*TASK, "family"]).model.nunique().rename("n_family")
    ok = cells[(cells.status == Status.OK) & cells.score.notna()]
    on_split = ok.groupby([*TASK, "repeat", "fold", "seed", "family"]).model.nunique().rename("n_split")
    ok = ok.join(models, on=[*TASK, "family"]).join(on_split, on=[*TASK, "repeat", "fold", "seed", "family"])
    per_split = ok.groupby([*TASK, "model", "repeat", "fold"]).agg(score=("score", "mean"), bound=("epochs_bound", "any"))
    shared = ok[ok.n_split == ok.n_family]
    means = ok.groupby([*TASK, "model"]).agg(kind=("model_kind", "min"), family=("family", "min"))
    means["val"] = shared.groupby([*TASK, "model"]).val_score.mean()
    means["own"] = ok.groupby([*TASK, "model"]).val_score.mean()  # the pick's fallback: no split shared
    return view, per_split, means


@pytest.mark.parametrize("name", [*SHIPPED, "synthetic", "mixed"])
def test_every_row_of_the_view_is_the_rule_in_python(files, name):
    view, per_split, means = recomputed(files[name])
    cap_repeats = int(Store(files[name], create=False).query("SELECT max(repeat) + 1 AS n FROM expected_cells").n[0])
    assert list(view.columns[:len(COLUMNS)]) == COLUMNS and len(view)
    assert set(view.verdict) <= {str(v) for v in Verdict}
    # The picks: per task and family, the model with the best mean validation score (test picks nothing).
    picks = {}
    for (*task, family), g in means.reset_index().groupby([*TASK, "family"]):
        g = g.sort_values("model").set_index("model")
        if g.val.isna().all():  # no split every model of the family finished: each one's own mean
            g = g.assign(val=g.own)
        picks[(tuple(task), family)] = pick.by_validation(g[["val"]].T.fillna(0) * 0, g[["val"]].T, list(g.index))[0].iloc[0]
    expected = set()
    for (*task, model), r in means.iterrows():
        for against in (BOOSTING, NETWORK):
            if (tuple(task), against) in picks and (r.family != BOOSTING if against == BOOSTING else r.family == ATTENTION):
                expected.add((*task, model, f"best {against}"))
    assert set(zip(view.dataset, view.split_key, view.sample_size, view.model, view.versus)) == expected
    for r in view.itertuples(index=False):
        task = (r.dataset, r.split_key, r.sample_size)
        assert r.versus_model == picks[(task, r.versus.removeprefix("best "))], r
        assert r.family_best == (picks[(task, r.family)] == r.model), r
        a, b = per_split.loc[(*task, r.model)], per_split.loc[(*task, r.versus_model)]
        both = a.merge(b, left_index=True, right_index=True, suffixes=("_a", "_b"))
        d = (both.score_a - both.score_b).dropna()
        bound = (bool(both.bound_a.any()), bool(both.bound_b.any()))
        want = decide(d.to_numpy(), folds=int(r.folds), bound=bound)
        assert (r.verdict, r.n_splits, r.margin) == (want.verdict, want.n_splits, MARGIN), (r, want)
        for got, exp in ((r.diff, want.diff), (r.lo, want.low), (r.hi, want.high), (r.eq_lo, want.eq_low),
                         (r.eq_hi, want.eq_high)):
            assert (pd.isna(got) and np.isnan(exp)) or got == pytest.approx(exp, abs=1e-12), (r, want)
        assert (r.model_bound, r.versus_bound) == bound
        # how close it came: the interval's half-width now and at the repeat cap, and why an undetermined one is
        cap = cap_splits(want.n_splits, int(r.folds), cap_repeats)
        assert r.cap_splits == cap, r
        for got, exp in ((r.detectable, detectable(float(r.sd), want.n_splits, int(r.folds))),
                         (r.detectable_at_cap, detectable(float(r.sd), cap, int(r.folds)))):
            assert (pd.isna(got) and np.isnan(exp)) or got == pytest.approx(exp, rel=1e-9, abs=1e-15), (r, exp)
        undetermined = want.verdict is Verdict.UNDETERMINED and want.n_splits >= 2
        assert (pd.isna(r.power) and not undetermined) or r.power == power(float(r.sd), int(r.folds), cap), r
        # the pair's means are over its own splits (diff = test_mean − versus_test_mean); val_mean the pick's
        assert r.test_mean == pytest.approx(both.score_a.mean()) and r.versus_test_mean == pytest.approx(both.score_b.mean())
        assert r.val_mean == pytest.approx(means.loc[(*task, r.model), "val"])


def test_a_file_that_stored_no_kinds_reads_its_families_from_the_registry(tmp_path):
    """A file before schema 4 stored no model kinds: the view alone cannot name a family; the report fills
    each model's kind as it names its family (today's registry), with the view's own SQL, so its pages keep
    their verdicts, the same as where the kinds were stored."""
    from pipeline.report.data import ReportData

    db = synthetic.build(tmp_path / "old.duckdb")
    stored = ReportData.load(db).standings
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE results SET model_kind = NULL")
        con.execute("UPDATE suite_cells SET model_kind = NULL")
        assert con.execute("SELECT count(*) FROM standings").fetchone()[0] == 0  # the view: no family to pick
    data = ReportData.load(db)
    assert data.legacy_kinds == ["catboost", "ft_transformer", "mlp", "xgboost"]
    pd.testing.assert_frame_equal(data.standings, stored)


def test_the_mixed_file_compares_a_pair_beyond_the_splits_every_model_planned(files):
    """The branches the shipped files never reach: a pick made on a family's shared splits, and a pair set on
    more splits than every model of the task planned."""
    view, _, _ = recomputed(files["mixed"])
    boosting = view[view.versus == "best gradient boosting"]
    assert set(boosting[boosting.model == "ft_transformer"].n_splits) == {4}
    assert set(boosting[boosting.model == "ft-two"].n_splits) == {2}
    assert set(view[view.family_best & (view.family == ATTENTION)].model) == {"ft-two"}


def test_the_same_file_reads_the_same_to_the_last_digit(files):
    """The report's every frame, read from the largest shipped reference three times: the same doubles each time.
    DuckDB's parallel sums and deviations differ in their last digits from read to read (the standings' diff,
    lo and hi, the learning curves' means moved by 1e-17 to 1e-13 on this file); a reading connection sums on
    one thread (pipeline/data/store.py), as `attnbench query` does."""
    from pipeline.report.data import ReportData

    first, *again = (ReportData.load(files["study-every-dataset"]) for _ in range(3))
    for data in again:
        for name in ("standings", "curves", "leaderboard", "compute", "memory", "cells", "tuning"):
            pd.testing.assert_frame_equal(getattr(data, name), getattr(first, name), check_exact=True, obj=name)
