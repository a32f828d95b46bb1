"""The claims page's verdict logic on hand-made results: supported, contradicted, not enough data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pipeline.report.stats import claims


def cell(split: int, name: str, model: str, score: float, config: dict, seconds: float = 1.0, mb: float = 10.0,
         status: str = "ok", dataset: str | None = None) -> dict:
    """A cell on split ``split``: fold 0 of its own dataset (``d<split>``), or fold ``split`` of ``dataset``."""
    return {"split_key": "k", "dataset": dataset or f"d{split}", "sample_size": "all", "repeat": 0,
            "fold": split if dataset else 0, "seed": 0,
            "model": model, "model_name": name, "score": score, "status": status, "best_config": json.dumps(config),
            "fit_seconds": seconds, "peak_cpu_mb": mb, "cell_id": f"{model}-{split}"}


def test_ablation_verdicts_supported_contradicted_and_thin():
    rng = np.random.default_rng(0)
    rows = []
    for split in range(6):  # SE on beats SE off by about 0.05 on every split: supported
        rows.append(cell(split, "cross_attention_se", "xa", 0.85 + rng.normal(0, 0.005), {"se_reduction": 4}))
        rows.append(cell(split, "cross_attention_se", "xa-nose", 0.80 + rng.normal(0, 0.005), {"se_reduction": 0}))
        # Warmup hurts by about 0.03 everywhere: the claim that it is critical is contradicted.
        rows.append(cell(split, "ft_transformer", "ft", 0.70 + rng.normal(0, 0.005), {"lr": 1e-3}))
        rows.append(cell(split, "ft_transformer", "ft-nowarm", 0.73 + rng.normal(0, 0.005), {"warmup_frac": 0.0}))
    for split in range(2):  # only two cross/self pairs: not enough data, however large the effect
        rows.append(cell(split, "cross_attention_se", "xa-self", 0.80, {"attention": "self"}, seconds=9.0))
    rows.append(cell(5, "ft_transformer", "ft-broken", float("nan"), {"warmup_frac": 0.0}, status="error"))
    cells = pd.DataFrame(rows)

    se = claims.claim_se(cells)
    assert se.verdict == claims.SUPPORTED and se.n == 6 and 0.04 < se.low < se.effect < se.high < 0.06
    assert sorted(se.cells)[:2] == ["xa-0", "xa-1"] and len(se.cells) == 12

    warm = claims.claim_warmup(cells)
    assert warm.verdict == claims.CONTRADICTED and warm.n == 6 and warm.high < 0 and "below zero" in warm.why

    cost = claims.claim_cross_cost(cells)
    assert cost.verdict == claims.THIN and cost.n == 2 and "too few" in cost.why
    assert cost.effect == np.log(9.0)  # self-attention took 9× the time of cross-attention

    nothing = claims.claim_se(cells[cells.model_name == "ft_transformer"])
    assert nothing.verdict == claims.THIN and nothing.n == 0


def test_an_ablation_on_the_folds_of_one_dataset_is_one_unit():
    """Six folds of one dataset share its rows: their paired differences are one dataset's, never six
    independent ones (pooled, the same gain read supported)."""
    rng = np.random.default_rng(0)
    rows = []
    for split in range(6):
        rows.append(cell(split, "cross_attention_se", "xa", 0.85 + rng.normal(0, 0.005), {"se_reduction": 4},
                         dataset="one"))
        rows.append(cell(split, "cross_attention_se", "xa-nose", 0.80 + rng.normal(0, 0.005), {"se_reduction": 0},
                         dataset="one"))
    se = claims.claim_se(pd.DataFrame(rows))
    assert se.n == 1 and se.verdict == claims.THIN and "6 paired cells on 1 dataset" in se.coverage
    assert "too few" in se.why and 0.04 < se.effect < 0.06


def test_the_claims_name_no_model():
    """The ablations' switches are the models' own (their INFO's ``ablations``): the claims code asks the
    registry for them and names no model, nor copies a default."""
    import ast
    import inspect

    from pipeline.models.registry import REGISTRY

    words = {n.value for n in ast.walk(ast.parse(inspect.getsource(claims))) if isinstance(n, ast.Constant)
             and isinstance(n.value, str)}
    assert not {w for w in words for name in REGISTRY if name in w}
    assert claims.switch_state("se")("cbam_cnn", {"se": False}) is False
    assert claims.switch_state("se")("cross_attention_se", {"attention": "self"}) is None  # SE is tested crossed
    assert claims.switch_state("warmup")("mlp", {"warmup_frac": 0.0}) is None  # not a transformer


KINDS = {"xgboost": "boosting", "ft_transformer": "attention"}
AHEAD, LEVEL, BEHIND = [0.05, 0.06, 0.05], [0.002, -0.001, 0.001], [-0.10, -0.11, -0.09]
NOISY = [0.08, -0.07, 0.02]  # +0.01 on average, the folds disagreeing: undetermined
SPREAD = (0.0, 0.004, -0.002)  # each fold's offset, the same for both models


def _rows(gaps: list[list[float]], **kw: object) -> pd.DataFrame:
    """The standings view over :func:`_cells`."""
    from tables import standings_of

    return standings_of(_cells(gaps, **kw), KINDS)  # type: ignore[arg-type]


def _cells(gaps: list[list[float]], below: list[float] | None = None, n_above: int = 20_000, bound: int = 0,
           bound_below: int = 0) -> list[dict]:
    """Cells of len(gaps) datasets, three folds each: at 512 rows FT-Transformer − XGBoost is ``below`` on
    each fold (default −0.05: boosting ahead), at ``n_above`` rows ``gaps``; FT-Transformer still improving at
    its budget above on the first ``bound`` datasets, and at 512 rows on the first ``bound_below``."""
    below = below or [-0.05, -0.05, -0.05]
    rows = []
    for i, per_fold in enumerate(gaps):
        for fold in range(3):
            for size, n, gap, bound_here in (("512", 512, below[fold], i < bound_below),
                                             ("all", n_above, per_fold[fold], i < bound)):
                for m, v in (("xgboost", 0.80 + SPREAD[fold]), ("ft_transformer", 0.80 + SPREAD[fold] + gap)):
                    rows.append({"dataset": f"d{i}", "sample_size": size, "n_train": n, "fold": fold, "model": m,
                                 "score": v, "epochs_bound": m == "ft_transformer" and bound_here})
    return rows


def test_sample_size_claim_below_counts_points_and_above_stands_per_dataset():
    # Below 10,000 rows boosting is ahead on all 6 points; above, attention is ahead on every dataset.
    c = claims.claim_sample_size(_rows([AHEAD] * 6))
    assert c.verdict == claims.SUPPORTED and c.n == 6 and c.effect == 1.0 and c.low > 0.5  # Wilson 6/6: 61%
    assert c.above.verdict == claims.SUPPORTED and c.above.n == 6 and c.above.effect == pytest.approx(0.0533, abs=1e-4)
    assert "Below 10,000 rows boosting was ahead on 6, equivalent on 0, behind on 0 and undetermined on 0 of 6 points" in c.why
    assert "attention was ahead on 6, equivalent on 0, behind on 0 and undetermined on 0 of 6 datasets" in c.why
    assert ("Counting an equivalent point as half a win, boosting won 100% of the 6 points decided (95% interval 61%"
            in c.why and ": above an even match, supported." in c.why), c.why
    assert ": no further behind than the −0.005 margin, so attention caught up." in c.why, c.why
    assert "20,000-20,000 rows" in c.coverage and "6 decided points of 6 on 6 datasets" in c.coverage
    assert claims.effect_text(c).startswith("below: 100% [61%") and "at or above: +0.053 [" in claims.effect_text(c)

    # Behind on every dataset, beyond the margin: the half, and so the claim, is contradicted.
    still = claims.claim_sample_size(_rows([BEHIND] * 6))
    assert still.above.verdict == claims.CONTRADICTED and still.verdict == claims.CONTRADICTED
    assert "boosting still leads there" in still.why and still.above.high < -0.005

    # Within the margin on every dataset, the folds agreeing: equivalent, caught up. Never "level".
    level = claims.claim_sample_size(_rows([LEVEL] * 6))
    assert level.above.verdict == claims.SUPPORTED and "equivalent on 6" in level.why and "level" not in level.why
    # Mixed: two ahead, two equivalent, two behind; the interval reaches both sides of the margin.
    mixed = claims.claim_sample_size(_rows([AHEAD, AHEAD, LEVEL, LEVEL, BEHIND, BEHIND]))
    assert mixed.above.verdict == claims.THIN and mixed.verdict == claims.THIN
    assert "within and beyond the −0.005 margin, so whether attention caught up is undetermined." in mixed.why, mixed.why
    assert "ahead on 2, equivalent on 2, behind on 2 and undetermined on 0 of 6 datasets" in mixed.why
    # Folds that disagree: undetermined, counted as such (its difference still in the mean over datasets).
    noisy = claims.claim_sample_size(_rows([NOISY] * 6))
    assert "undetermined on 6 of 6 datasets" in noisy.why and noisy.above.n == 6

    # Behind on all 6 above, but on 4 FT-Transformer was still improving when its epochs ran out: those
    # are not converged, counted neither way; 2 datasets are too few for a verdict.
    unsettled = claims.claim_sample_size(_rows([BEHIND] * 6, bound=4))
    assert unsettled.above.n == 2 and unsettled.above.verdict == claims.THIN and unsettled.verdict == claims.THIN
    assert "4 not converged, left out" in unsettled.above.coverage and "too few datasets" in unsettled.why
    assert ", 4 of them not converged" in unsettled.why
    # Where the bound model was ahead, its lead stands.
    ahead = claims.claim_sample_size(_rows([AHEAD] * 6, bound=4))
    assert ahead.above.n == 6 and ahead.above.verdict == claims.SUPPORTED and "not converged" not in ahead.why

    # Points below: a model bound at its budget where it lost is left out there too, as are points the folds
    # cannot decide.
    below_bound = claims.claim_sample_size(_rows([BEHIND] * 6, bound_below=4))
    assert below_bound.n == 2 and below_bound.above.n == 6 and "4 not converged, left out" in below_bound.coverage
    undecided = claims.claim_sample_size(_rows([AHEAD] * 6, below=NOISY))
    assert undecided.n == 0 and "6 undetermined, left out" in undecided.coverage and undecided.verdict == claims.THIN

    # A size is above or below by its mean rows over folds (as the points below are): one fold of 10,010
    # rows beside two of 9,990 is a size below 10,000, in neither half's count twice.
    from tables import standings_of

    near = _cells([AHEAD] * 6, n_above=10_010)
    for r in near:
        if r["sample_size"] == "all" and r["fold"] > 0:
            r["n_train"] = 9_990
    assert claims.claim_sample_size(standings_of(near, KINDS)).above.n == 0

    small = claims.claim_sample_size(_rows([AHEAD] * 6, n_above=5_000))
    assert small.above.n == 0 and small.verdict == claims.THIN and small.n == 12
    assert "No dataset was run at or above 10,000 training rows" in small.why


def test_attention_map_claim_reads_the_synthetic_tasks_informative_features():
    feats = ["noise_0", "signal_a", "noise_1", "signal_b"]
    focused = np.full((4, 4), 0.1)
    focused[np.ix_([1, 3], [1, 3])] = 0.4  # the signal pair gives each other 0.8 of their attention
    maps, cells = [], []
    for i, (mat, score) in enumerate([(focused, 0.97), (focused, 0.95), (focused, 0.96), (np.full((4, 4), 0.25), 0.6)]):
        maps.append({"cell_id": f"c{i}", "dataset": f"inter{i % 3}", "features": json.dumps(feats),
                     "map": json.dumps(mat.tolist())})
        cells.append({"cell_id": f"c{i}", "status": "ok", "score": score})
    datasets = pd.DataFrame({"dataset": ["inter0", "inter1", "inter2"],
                             "source": ["synthetic:interaction?n_rows=2000"] * 3})
    c = claims.claim_attention_maps(pd.DataFrame(maps), pd.DataFrame(cells), datasets)
    # each signal row gives its partner 0.4 of 1.0 against a uniform 1/4: log2(1.6); the uniform map's
    # model did not learn the task
    assert c.n == 3 and c.effect == np.log2(1.6) and "1 more did not learn it" in c.coverage
    assert c.verdict == claims.SUPPORTED and c.cells == ["c0", "c1", "c2"]
    # The same three maps on one task are one unit: not enough data.
    one = claims.claim_attention_maps(pd.DataFrame(maps).assign(dataset="inter0"), pd.DataFrame(cells), datasets)
    assert one.n == 1 and one.verdict == claims.THIN and "3 maps on 1 task" in one.coverage
    assert claims.decide(0.1, 0.5, 3) == claims.SUPPORTED and claims.decide(-0.5, -0.1, 3) == claims.CONTRADICTED
    assert claims.decide(0.1, 0.5, 2) == claims.THIN and claims.decide(-0.1, 0.5, 30) == claims.THIN


def test_partner_focus_reads_a_cross_attention_map_by_its_keys():
    # Cross-attention: categorical rows (2, 3) attend to numeric columns (0, 1) only; numeric rows are empty.
    grid = np.zeros((4, 4))
    grid[2, :2] = [0.9, 0.1]  # signal_cat (row 2) gives its partner signal_a (column 0) 0.9 of its attention
    grid[3, :2] = [0.5, 0.5]  # a noise category, uniform
    focus = claims.partner_focus(grid, [0, 2])
    assert focus == np.log2(0.9 / (1 / 2))  # two keys: uniform would give the partner 1/2
    assert claims.partner_focus(np.zeros((4, 4)), [0, 2]) is None


def test_an_effect_from_one_comparison_shows_no_interval_rather_than_nan():
    one = claims.Claim("k", "s", "m", effect=-0.019, n=1)
    assert claims.effect_text(one) == "-0.019 (no interval from 1)"
    two = claims.Claim("k", "s", "m", effect=-0.02, low=-0.03, high=-0.01, n=4)
    assert claims.effect_text(two) == "-0.020 [-0.030, -0.010]"


def test_the_answer_prints_the_claims_as_the_page_decides_them(tmp_path, tmp_path_factory):
    """`attnbench answer claims` (the block docs/STUDY.md holds) and the Claims page, built from the same shipped
    reference, give each claim the same verdict, effect and comparisons; a file that tests none of claims 2-5
    (the study's: no ablation pair, no synthetic task) prints no claims table."""
    from shipped import exported
    from tables import table_rows

    from pipeline.data import references
    from pipeline.report import answer_text
    from pipeline.report.pages import claims as claims_page
    from pipeline.report.pages import write_report

    assert "claims" in references.shipped()
    db = exported(tmp_path_factory, "claims", tmp_path / "claims.duckdb")
    lines = answer_text.claims(str(db))
    printed = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines if line.startswith("| ")][2:]
    page = (write_report(db, tmp_path / "reports", [claims_page.SPEC]).parent / "claims.html").read_text()
    shown = table_rows(page, "table-claims")
    assert len(printed) == len(shown) == 5
    for mine, theirs in zip(printed, shown, strict=True):
        assert mine[1:4] == theirs[2:5], (mine, theirs)  # verdict, effect [95% interval], comparisons
    study = exported(tmp_path_factory, "study-tuned-slice", tmp_path / "study.duckdb")
    assert answer_text.claims(str(study)) == []
