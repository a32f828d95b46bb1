"""A difference within the standings' margin (0.005) is level wherever the report counts: a family that
leads the overview, a task where tuning helped, an ensemble better or worse than its tuned trial."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import synthetic
from tables import table_rows


def test_a_family_leads_only_by_more_than_the_margin():
    """Means 0.745 against 0.742 (within 0.005) are level: a tie that no family leads, in the table and in
    words; 0.750 against 0.740 is a lead."""
    from pipeline.report.stats.answer import Leader, SizeAnswer, summary_sentences

    def answer(attention: float, boosting: float) -> SizeAnswer:
        a = SizeAnswer("128", 20, n_run=20)
        for family, model, score in (("attention network", "ft", attention), ("gradient boosting", "cb", boosting)):
            a.leaders[family] = Leader(model, score, 20, 20, 20, 1.0, 0.1, 0, 0, 20)
        return a

    close, apart = answer(0.745, 0.742), answer(0.750, 0.740)
    assert close.leading == ["attention network", "gradient boosting"] and close.leader is None
    assert close.leader_text == "tie: attention network, gradient boosting"
    assert apart.leading == ["attention network"] and apart.leader == "attention network"
    coverage = {"datasets": 20, "sizes": 1, "splits": 1, "cells": 40, "cells_ok": 40}
    text = " ".join(summary_sentences([close], pd.DataFrame(columns=["family"]), coverage))
    assert "attention network and gradient boosting tie on mean normalised score" in text, text


def test_tuning_and_ensembling_help_only_by_more_than_the_margin(tmp_path: Path):
    """A selected configuration 0.003 better on test than the default is level with it, not a task where
    tuning helped: "+0.003 (0/2 tasks)", not "(2/2 tasks)"."""
    import duckdb

    from pipeline.report.data import ReportData
    from pipeline.report.pages.accuracy import ensemble_rows
    from pipeline.report.parts import summary_table
    from pipeline.report.stats import aggregate as agg
    from pipeline.report.stats.ranking import ranking

    db = synthetic.build(tmp_path / "near.duckdb")
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE trials t SET accuracy = r.accuracy - 0.003, r2 = r.r2 - 0.003 FROM results r "
                    "WHERE t.cell_id = r.cell_id AND r.model = 'ft_transformer' AND t.trial_index = 0")
    st = ranking(ReportData.load(db), "all")
    by = st.summary.set_index("model")
    assert by.loc["ft_transformer", "tuning_compared"] == 2 and by.loc["ft_transformer", "tuning_helped"] == 0
    assert abs(by.loc["ft_transformer", "tuning_gain"] - 0.003) < 1e-9
    rows = {r[0]: r for r in table_rows(summary_table(st, "t"), "t")}
    assert rows["ft_transformer"][6] == "+0.003 (0/2 tasks)"
    # The post-hoc ensembles likewise: 0.003 better than the tuned trial is level, 0.01 better or worse is not.
    data = ReportData.load(db)
    ok = data.cells[(data.cells.sample_size == "all") & (data.cells.status == "ok") & (data.cells.model == "ft_transformer")]
    for gain, better, worse in ((0.003, 0, 0), (0.01, 2, 0), (-0.01, 0, 2)):
        data.ensembles = ok[list(dict.fromkeys([*agg.SPLIT, "model", "sample_size"]))].assign(
            pooled=False, score=ok.score + gain, members=1.0, candidates=3.0, selected_score=ok.score)
        ens = ensemble_rows(data, "all").set_index("model").loc["ft_transformer"]
        assert (ens.helped, ens.hurt, ens.tasks) == (better, worse, 2), (gain, ens)
