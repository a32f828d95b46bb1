"""The across_datasets table (issue 82 item 4): the hierarchical model's fits per size and pair, shipped beside the
study's chunks, read only where they are fits of the data now, printed by `attnbench answer` and drawn on the
overview; a fit repeats to the digit from its seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from shipped import exported

from pipeline.data.store import Store
from pipeline.data.views import temporary_views
from pipeline.report import across_text, answer_text
from pipeline.report.stats import across, hierarchical


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> str:
    return str(exported(tmp_path_factory, "study-every-dataset", tmp_path_factory.mktemp("across") / "study.duckdb"))


def _read(db: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    store = Store(db, create=False)
    stored = store.read_across()
    assert stored is not None
    return store.query("SELECT * FROM standings ORDER BY ALL", prepare=temporary_views), stored


def test_the_shipped_fits_are_fits_of_the_shipped_data(study: str):
    """`make answers` fits what a chunk changed: every (size, pair) the data calls for has a current fit, and the
    table holds no other."""
    standings, stored = _read(study)
    assert across.missing(standings, stored) == []
    assert len(across.current(standings, stored)) == len(stored)
    pairs = {(z, p) for z, p, _ in across.inputs(standings)}
    assert (across.LARGEST, across.BEST_ATTENTION) in pairs and ("1024", across.BEST_NETWORK) in pairs
    assert ("128", "tab_transformer") in pairs
    for _, g in stored.groupby(["sample_size", "pair", "rope"], dropna=False):
        three = g[["behind", "equivalent", "ahead"]].to_numpy()
        assert ((three >= 0) & (three <= 1)).all() and np.allclose(three.sum(axis=1), 1.0)
        assert g.dataset.isna().sum() == 1 and g.dataset.notna().sum() == int(g.n_datasets.iloc[0])
    # the wider region of practical equivalence holds the narrower one: equivalent at ±0.01 at least as often
    new = stored[stored.dataset.isna()].pivot_table(index=["sample_size", "pair"], columns="rope", values="equivalent")
    assert (new[0.01] >= new[0.005] - 1e-9).all()


def test_a_fit_of_other_data_is_never_read(study: str):
    standings, stored = _read(study)
    changed = standings.copy()
    hit = (changed.sample_size == "1024") & changed.family_best & (changed.family == "attention network")
    first = changed[hit & (changed.versus == across.AGAINST)].index[0]
    changed.loc[first, "diff"] += 0.001  # one dataset's difference moved, as a chunk would move it
    now = across.current(changed, stored)
    assert not ((now.sample_size == "1024") & (now.pair == across.BEST_ATTENTION)).any()
    assert ("1024", across.BEST_ATTENTION) in across.missing(changed, stored)
    assert len(now) < len(stored) and ((now.sample_size == "128") & (now.pair == across.BEST_ATTENTION)).any()


def test_answer_fits_what_a_file_lacks_stores_it_and_the_fit_repeats_to_the_digit(study: str, tmp_path: Path):
    db = str(tmp_path / "s.duckdb")
    Path(db).write_bytes(Path(study).read_bytes())
    standings, stored = _read(db)
    size, pair = min(((z, p) for z, p, f in across.inputs(standings)), key=lambda k: (
        int(stored[(stored.sample_size == k[0]) & (stored.pair == k[1])].n_datasets.iloc[0]), k))
    dropped = (stored.sample_size == size) & (stored.pair == pair)
    Store(db, create=False).write_across(stored[~dropped])
    assert across.missing(standings, Store(db, create=False).read_across()) == [(size, pair)]
    assert across_text.refresh(db) == 1
    _, again = _read(db)
    assert across.missing(standings, again) == []
    key = ["sample_size", "pair", "rope", "dataset"]
    old = stored[dropped].sort_values(key, na_position="first").reset_index(drop=True)
    new = again[(again.sample_size == size) & (again.pair == pair)].sort_values(key, na_position="first").reset_index(drop=True)
    assert old[key].equals(new[key]) or old[key].astype(str).equals(new[key].astype(str))
    for col in ("behind", "equivalent", "ahead"):
        assert new[col].to_numpy() == pytest.approx(old[col].to_numpy(), abs=1e-9), col
    assert across_text.refresh(db) == 0  # current: nothing to fit


def test_the_answer_prints_the_tables_figures(study: str):
    lines = answer_text.markdown(study, "study-every-dataset").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("**Across datasets**"))
    _, stored = _read(study)
    new = stored[stored.dataset.isna()]
    row = next(line for line in lines[start:] if line.startswith(f"| {across.BEST_ATTENTION} | {across.LARGEST} |"))
    for rope in hierarchical.ROPES:
        r = new[(new.sample_size == across.LARGEST) & (new.pair == across.BEST_ATTENTION) & (new.rope == rope)].iloc[0]
        assert f"{r.behind:.0%}–{r.equivalent:.0%}–{r.ahead:.0%}" in row, (rope, row)
    # a fit whose sampler diverged on more than 1% of its draws says so in its row; the others read ok
    draws = hierarchical.SAMPLES * hierarchical.CHAINS
    for r in new[new.rope == hierarchical.ROPES[0]].itertuples(index=False):
        label = r.sample_size if r.sample_size == across.LARGEST else f"{int(r.sample_size):,}"
        line = next(x for x in lines[start:] if x.startswith(f"| {r.pair} | {label} |"))
        rough = r.divergences > across_text.DIVERGED * draws
        assert line.endswith(f"| rough: {int(r.divergences):,} of {draws:,} draws diverged |" if rough else "| ok |"), line
    shrunk = [line for line in lines[start:] if line.startswith("| ") and line.count("|") == 4]
    assert len(shrunk) - 2 == int(new[new.sample_size == across.LARGEST].n_datasets.iloc[0])  # header, rule


def test_the_overview_draws_a_new_datasets_probabilities(study: str, tmp_path: Path):
    from pipeline.report.pages import overview, write_report

    write_report(study, tmp_path / "reports", [overview.SPEC])
    page = (tmp_path / "reports" / "index.html").read_text(encoding="utf-8")
    assert 'id="fig-index-across"' in page and "Across datasets: on a new dataset" in page
