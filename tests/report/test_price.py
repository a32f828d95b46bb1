"""`attnbench price PILOT STUDY` (issue 59 item 2): each entry the study does not run yet, priced on a pilot's
cells against the study's own entry on the same splits, scaled by that entry's cost over the study."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import synthetic

from pipeline.report import price_text
from pipeline.report.stats.price import prices

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The study: FT-Transformer and XGBoost, three folds at 32 and 128 rows. The pilot: fold 0 of the same
    split, FT-Transformer, XGBoost (the study's, not priced) and 'ft-192', three times FT-Transformer's trial
    time; its cell on beta at 128 rows failed, so FT-Transformer's cell there must not count either."""
    root = tmp_path_factory.mktemp("price")
    study = synthetic.Synth(models={k: synthetic.MODELS[k] for k in ("xgboost", "ft_transformer")},
                            sizes=("32", "128"), folds=(0, 1, 2))
    study.missing, study.failed = set(), set()
    pilot = synthetic.Synth(models={k: synthetic.MODELS[k] for k in ("xgboost", "ft_transformer")}
                            | {"ft-192": ("ft_transformer", 0.76, 0.035, 6.0)}, sizes=("32", "128"), folds=(0,))
    pilot.missing, pilot.failed = set(), {("beta", "128", 0, "ft-192")}
    return (str(synthetic.build(root / "pilot.duckdb", pilot)), str(synthetic.build(root / "study.duckdb", study)))


def test_an_entry_is_priced_by_its_ratio_on_the_cells_both_finished(files):
    pilot, study = price_text.entries_and_cells(*files, base="ft_transformer")
    assert set(pilot.model) == {"ft_transformer", "ft-192"}  # XGBoost is the study's own: no price
    rows = {p.sample_size: p for p in prices(pilot, study, "ft_transformer", extend=[128, 512])}
    assert set(rows) == {32, 128, 512}
    assert (rows[32].cells, rows[128].cells) == (2, 1)
    for size in (32, 128):
        assert rows[size].ratio == pytest.approx(3.0)  # 2.5 at 128 had beta's base cell been counted
        # the base over the study: search_seconds = 3 × 2.0 × n / 32 on each of 2 datasets × 3 folds
        assert rows[size].study_cells == 6
        assert rows[size].study_base_hours == pytest.approx(6 * 3 * 2.0 * size / 32 / 3600)
        assert rows[size].projected == pytest.approx(3.0 * rows[size].study_base_hours)
    assert not rows[512].measured and rows[512].priced_at == 128 and rows[512].study_cells == 0


def test_the_command_prints_the_table_and_its_total(files):
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "price", *files, "--extend", "512"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == price_text.markdown(*files, files[0], files[1], extend=[512])
    total = sum(p.projected for p in prices(*price_text.entries_and_cells(*files, "ft_transformer"), "ft_transformer"))
    assert f"Projected: {total:.1f} trial-hours" in out.stdout
    # 512 rows: priced by the ratio at 128, but the study has no base cell there to scale: said, never a zero
    assert "| ft-192 | 512 | (ratio at 128) not priced |" in out.stdout
    assert "Not priced (no pilot cell both finished, or no cell of the base in the study at that size): ft-192 at 512" \
        in out.stdout


def test_a_size_no_pilot_cell_of_an_entry_finished_is_named_not_zero():
    import pandas as pd

    pilot = pd.DataFrame([("d", "32", 0, 0, 0, "base", 10.0), ("d", "32", 0, 0, 0, "new", 30.0),
                          ("d", "128", 0, 0, 0, "base", 40.0)],
                         columns=["dataset", "sample_size", "repeat", "fold", "seed", "model", "seconds"])
    study = pd.DataFrame({"dataset": ["d", "d"], "sample_size": ["32", "128"], "seconds": [3600.0, 7200.0]})
    rows = {p.sample_size: p for p in prices(pilot, study, "base")}
    assert rows[32].projected == pytest.approx(3.0) and rows[128].cells == 0 and rows[128].projected != rows[128].projected
    text = price_text.totals(list(rows.values()))
    assert text.startswith("Projected: 3.0 trial-hours") and "Not priced" in text and "new at 128" in text
    with pytest.raises(ValueError, match="the study holds no finished cell of the base entry 'base'"):
        prices(pilot, study.iloc[:0], "base")


def test_a_base_the_pilot_never_ran_is_one_line(files):
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "price", *files, "--base", "tabm"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr.strip().count("\n") == 0 and "no finished cell of the base entry 'tabm'" in out.stderr
