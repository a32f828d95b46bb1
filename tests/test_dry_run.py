"""``attnbench run --dry-run``: a suite's pending cells priced before anything runs (issue 84 item 2, issue 81
item 3), each price on the nearest evidence there is and saying which; nothing run, nothing written."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest
import yaml
from processes import in_process as cli

from pipeline import pricing as pp


def _seen(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=pp.SEEN[:len(rows[0])])


def _pending(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=pp.PENDING[:len(rows[0])])


def test_each_cell_is_priced_on_the_nearest_evidence_and_says_which():
    seen = _seen([("xgb", "a", "1024", 1024, 10.0, "h1"), ("xgb", "a", "1024", 1024, 30.0, "h1"),
                  ("xgb", "b", "4096", 4096, 80.0, "h1"), ("xgb", "b", "4096", 4096, 100.0, "h1"),
                  ("net", "a", "128", 128, 5.0, "old")])
    pending = _pending([("xgb", "a", "1024", 1024, "h1"),     # measured here: the median of 10 and 30
                        ("xgb", "c", "4096", 4096, "h1"),     # this size on another dataset: median of 80, 100
                        ("xgb", "a", "8192", 8192, "h1"),     # this dataset's nearest size below, × 8
                        ("xgb", "c", "all", 2048, "h1"),      # no cell of c: the nearest size anywhere, × 2048/1024
                        ("net", "c", "512", 512, "new"),      # another version only: 5 s × 4, said
                        ("own", "a", "128", 128, "x")])       # nothing of it anywhere
    got = pp.price_cells(pending, seen)
    assert got.seconds.tolist()[:5] == pytest.approx([20.0, 90.0, 160.0, 40.0, 20.0])
    assert got.basis.tolist() == [pp.MEASURED, pp.OTHER_DATASETS, pp.SCALED_HERE, pp.SCALED, pp.SCALED, pp.UNPRICED]
    assert got.seconds.isna().tolist() == [False] * 5 + [True]
    assert got.same_version.tolist() == [True, True, True, True, False, False]
    points = {(p.model, p.sample_size): p for p in pp.points(got)}
    assert points["xgb", "1024"].hours == pytest.approx(20 / 3600) and points["own", "128"].unpriced == 1
    assert not points["net", "512"].same_version


def test_other_datasets_price_a_cell_by_its_features_too():
    """An FT-Transformer makes a token of each feature: priced from a 40-feature dataset, a 10-feature one costs a
    quarter as much per row (where both know their features; without them, the rows alone)."""
    seen = _seen([("ft", "wide", "1024", 1024, 40.0, "f", 40), ("ft", "wide", "4096", 4096, 160.0, "f", 40)])
    pending = _pending([("ft", "narrow", "1024", 1024, "f", 10), ("ft", "narrow", "8192", 8192, "f", 10)])
    got = pp.price_cells(pending, seen)
    assert got.seconds.tolist() == pytest.approx([10.0, 80.0]) and got.basis.tolist() == [pp.OTHER_DATASETS, pp.SCALED]
    plain = pp.price_cells(pending.drop(columns="n_features"), seen)
    assert plain.seconds.tolist() == pytest.approx([40.0, 320.0])


def test_an_entrys_own_version_prices_it_where_it_has_cells():
    seen = _seen([("xgb", "a", "1024", 1024, 10.0, "now"), ("xgb", "a", "1024", 1024, 99.0, "before")])
    got = pp.price_cells(_pending([("xgb", "a", "1024", 1024, "now")]), seen)
    assert got.seconds.tolist() == [10.0] and got.same_version.all()


def test_a_base_entry_prices_the_others_by_their_ratio_to_it():
    """The pilot's way (issue 81): TabM at 49,152 rows is its time over FT-Transformer's where both ran, times
    FT-Transformer's price at 49,152, not TabM's own time scaled by rows."""
    seen = _seen([("ft", "a", "1024", 1024, 10.0, "f"), ("ft", "a", "4096", 4096, 60.0, "f"),
                  ("tabm", "a", "1024", 1024, 50.0, "t")])
    pending = _pending([("tabm", "a", "4096", 4096, "t"),   # ft's 60 s there × 5
                        ("ft", "b", "8192", 8192, "f"),     # ft itself: scaled from its cells (60 × 2)
                        ("tabm", "b", "8192", 8192, "t")])  # ft's price there (120) × 5
    plain = pp.price_cells(pending, seen)
    assert plain.basis.tolist() == [pp.SCALED_HERE, pp.SCALED, pp.SCALED]
    got = pp.price_cells(pending, seen, ratios={"tabm": "ft"})
    assert got.seconds.tolist() == pytest.approx([300.0, 120.0, 600.0])
    assert got.basis.tolist() == [pp.BY_BASE, pp.SCALED, pp.BY_BASE]


@pytest.mark.slow
def test_a_dry_run_prices_the_pending_cells_and_writes_nothing(ray_local, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]):
    suite = tmp_path / "s.yaml"

    def write(sizes: list) -> None:
        suite.write_text(yaml.safe_dump({"name": "s", "seed": 0, "datasets": [{"sklearn": "wine"}],
                                         "protocol": {"folds": 3, "max_folds": 2, "sample_sizes": sizes},
                                         "models": [{"name": "xgboost", "trials": 1, "fixed": {"n_estimators": 5}}]}))

    db = tmp_path / "r.duckdb"
    write([32])
    before = cli(["run", str(suite), "--db", str(db), "--dry-run", "--price-from", "study-lite"], capsys)
    assert before.returncode == 0, before.stderr
    assert "2 cells, 0 already done, 2 to run" in before.stdout and not db.exists()  # nothing written
    assert "(other versions of the entry)" in before.stdout  # study-lite's xgboost is not this one
    assert cli(["run", str(suite), "--db", str(db), "--no-report"], capsys).returncode == 0
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    write([32, 64])
    out = cli(["run", str(suite), "--db", str(db), "--dry-run", "--price-from", "study-lite"], capsys)
    assert out.returncode == 0, out.stderr
    assert "4 cells, 2 already done, 2 to run" in out.stdout, out.stdout
    row = next(line for line in out.stdout.splitlines() if line.startswith("| xgboost | 64 |"))
    assert "scaled, this dataset 2" in row and "other versions" not in row  # from its own cells at 32 rows
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest  # the results file is as it was
    bad = cli(["run", str(suite), "--db", str(db), "--dry-run", "--price-from", "no-such-ref"], capsys)
    assert bad.returncode == 2 and "no-such-ref: no such reference" in bad.stderr
    bad = cli(["run", str(suite), "--db", str(db), "--dry-run", "--price-ratio", "tabm=xgboost"], capsys)
    assert bad.returncode == 2 and "--price-ratio names ['tabm'], not entries of suite 's'" in bad.stderr
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
