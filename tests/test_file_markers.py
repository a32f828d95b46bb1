"""Files read as users write them (issue 84 item 5): a CSV's common missing-value markers are read as missing
('?' included), a file entry's na_values names more, its categorical key declares what a CSV cannot carry, and a
column of numbers with a marker is never made a categorical of numbers silently: one line names the marker."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.data.sources import load_file
from pipeline.errors import DataError
from pipeline.suite_datasets import LocalFile

ROWS = 60


def _frame(marker: str) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    age = [str(a) for a in rng.integers(18, 80, ROWS)]
    age[3] = age[17] = marker
    return pd.DataFrame({"age": age, "plan": rng.choice(["1", "2", "3"], ROWS), "y": rng.choice(["no", "yes"], ROWS)})


def _csv(tmp_path: Path, marker: str) -> str:
    path = tmp_path / "d.csv"
    _frame(marker).to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("marker", ["?", "NA", "", "null"])
def test_a_csvs_common_markers_are_missing_and_the_column_stays_numeric(tmp_path: Path, marker: str):
    raw = load_file(LocalFile(file=_csv(tmp_path, marker), target="y"))
    age = raw.features["age"]
    assert pd.api.types.is_numeric_dtype(age) and int(age.isna().sum()) == 2


def test_a_marker_of_ones_own_is_refused_in_one_line_naming_it_and_the_ways_forward(tmp_path: Path):
    path = _csv(tmp_path, "unknown")
    with pytest.raises(DataError) as err:
        load_file(LocalFile(file=path, target="y"))
    said = str(err.value)
    assert "column 'age' holds numbers but for 'unknown' (2 rows)" in said and "na_values" in said
    assert "categorical" in said and "\n" not in said
    raw = load_file(LocalFile(file=path, target="y", na_values=["unknown"]))
    assert pd.api.types.is_numeric_dtype(raw.features["age"]) and int(raw.features["age"].isna().sum()) == 2
    kept = load_file(LocalFile(file=path, target="y", categorical=["age"]))
    assert isinstance(kept.features["age"].dtype, pd.CategoricalDtype)


def test_na_values_apply_to_a_parquets_text_columns(tmp_path: Path):
    path = tmp_path / "d.parquet"
    _frame("n/a").to_parquet(path)
    with pytest.raises(DataError, match="'n/a'"):
        load_file(LocalFile(file=str(path), target="y"))
    raw = load_file(LocalFile(file=str(path), target="y", na_values=["n/a"]))
    assert int(raw.features["age"].isna().sum()) == 2


def test_categorical_declares_what_a_csv_cannot_carry(tmp_path: Path):
    path = _csv(tmp_path, "?")
    plain = load_file(LocalFile(file=path, target="y"))
    assert pd.api.types.is_numeric_dtype(plain.features["plan"])  # 1, 2, 3: read as numbers
    declared = load_file(LocalFile(file=path, target="y", categorical=["plan"]))
    assert isinstance(declared.features["plan"].dtype, pd.CategoricalDtype)
    assert sorted(declared.features["plan"].cat.categories) == ["1", "2", "3"]
