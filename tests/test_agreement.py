"""benchmarks/agreement.py picks the published figures it compares with: like with like, and across
versions of the data only where the metric does not depend on what differs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from pipeline.spec import parse_suite

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def agreement():
    spec = importlib.util.spec_from_file_location("agreement", REPO / "benchmarks" / "agreement.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def refs(agreement):
    return agreement.references(pd.concat([pd.read_csv(p) for p in agreement.PUBLISHED], ignore_index=True))


def test_a_class_balanced_version_is_compared_on_auc_alone(refs):
    magic = refs[refs.dataset == "MagicTelescope"]
    assert len(magic) > 0 and set(magic.metric) == {"auc"}
    assert magic.reference.str.contains("other version").all()
    # Other datasets' other versions (bank-marketing: numeric features only) stay out entirely.
    assert "bank-marketing" not in set(refs[refs.reference.str.contains("TabM")].dataset)


def test_tabm_with_shared_batches_is_compared_with_that_rule_only(refs):
    tabm = refs[refs.reference.str.startswith("TabM")]
    spade = tabm[tabm.reference.str.startswith("TabM-spade")]
    paper = tabm[tabm.reference.str.startswith("TabM (")]
    assert len(spade) and len(paper)
    assert all(o == ["tabm_spade"] for o in spade.ours)
    assert all("tabm" in o and "tabm_spade" not in o for o in paper.ours)
    assert not tabm[~tabm.index.isin(spade.index.union(paper.index))].ours.map(bool).any()  # TabM-mini, …: none
    bike = spade[(spade.dataset == "Bike_Sharing_Demand") & (spade.metric == "rmse")]
    assert len(bike) == 1 and bike.value.iloc[0] == pytest.approx(42.1081)
    assert "pooled over splits and seeds" in bike.reference.iloc[0]  # the README's figure, not one split


def test_the_shared_batches_run_is_a_labelled_tabm_entry_with_a_long_trial_limit(agreement):
    suite = parse_suite(agreement.build_suite("bike-tabm", quick=False, folds=2, models=None, trials=1), "<test>")
    (model,) = suite.models
    assert (model.name, model.key, model.trials) == ("tabm", "tabm_spade", 1)
    assert model.fixed["share_training_batches"] is True and model.trial_timeout_s == 4 * 3600
    assert suite.protocol.max_folds == 2 and suite.protocol.sample_sizes == [10_000]


def test_the_trials_column_shows_mixed_budgets(agreement):
    assert agreement._span(pd.Series([8, 8])) == "8"
    assert agreement._span(pd.Series([1, 8, 4])) == "1-8"


def test_the_summary_counts_a_labelled_variant_for_the_model_it_runs(agreement):
    df = pd.DataFrame({"ours": ["tabm", "tabm", "tabm_spade", "lightgbm"],
                       "dataset": ["wine_quality", "MagicTelescope", "Bike_Sharing_Demand", "wine_quality"],
                       "diff_in_sigma": [0.5, -1.0, 3.4, 2.0]})
    lines = agreement.summary(df).splitlines()
    (tabm,) = [line for line in lines if line.strip().startswith("tabm")]
    assert "3 datasets" in tabm and "Bike_Sharing_Demand as tabm_spade" in tabm
    assert tabm.endswith("2 of 3 within 2 σ")
    (lgbm,) = [line for line in lines if line.strip().startswith("lightgbm")]
    assert lgbm.endswith("1 of 1 within 2 σ")
