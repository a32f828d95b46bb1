"""The suite files users run: every one validates, says where it comes from, and the benchmark suites
pin their OpenML tasks (a run is reproducible even if the suite changes online)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipeline.plan import cell_id
from pipeline.spec import load_suite
from pipeline.suite_datasets import LocalFile, OpenMLTask

SUITES = Path(__file__).resolve().parents[1] / "suites"
FILES = sorted(SUITES.glob("*.yaml"))

# OpenML benchmark suite → number of tasks, as published (CC18: Bischl et al. 2021; AMLB: Gijsbers et al.
# 2024, appendix A; Grinsztajn et al. 2022: the OpenML suites 334-337).
PUBLISHED = {"cc18": (99, 72), "amlb-clf": (271, 71), "amlb-reg": (269, 33), "grinsztajn-334": (334, 7),
             "grinsztajn-335": (335, 17), "grinsztajn-336": (336, 19), "grinsztajn-337": (337, 16)}


def header(path: Path) -> str:
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines[: next(i for i, x in enumerate(lines) if not x.startswith("#"))])


def test_the_expected_suites_ship():
    names = {f.stem for f in FILES}
    assert {"smoke", "zoo", "dev", "dev-lite"} <= names
    for base in PUBLISHED:
        assert {base, f"{base}-lite"} <= names, base


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_every_suite_validates_and_is_documented(path: Path):
    suite = load_suite(path)
    assert suite.name == path.stem
    top = header(path)
    assert path.stem in top.splitlines()[0]
    assert any(w in top.lower() for w in ("cost", "minutes")), "the header should say what a run costs"
    for d in suite.datasets:
        if isinstance(d, LocalFile):
            assert Path(d.file).is_file(), d.file  # relative paths resolve against the suite's folder


@pytest.mark.parametrize("base", list(PUBLISHED))
def test_benchmark_suites_pin_their_tasks(base: str):
    suite_id, n_tasks = PUBLISHED[base]
    full, lite = load_suite(SUITES / f"{base}.yaml"), load_suite(SUITES / f"{base}-lite.yaml")
    for s in (full, lite):
        assert all(isinstance(d, OpenMLTask) for d in s.datasets), "every task pinned, no openml_suite entry"
        tasks = [d.openml_task for d in s.datasets]
        assert len(tasks) == len(set(tasks)) == n_tasks
        top = header(SUITES / f"{s.name}.yaml")
        assert f"suite {suite_id}" in top and "Source:" in top and f"suites pin {suite_id}" in top
    assert [d.openml_task for d in full.datasets] == [d.openml_task for d in lite.datasets]
    # The lite profile: the first official fold, fewer trials; the full one runs every fold.
    assert lite.protocol.max_folds == 1 and full.protocol.max_folds is None
    assert sum(m.trials for m in lite.models) < sum(m.trials for m in full.models)
    assert {m.name for m in lite.models} == {m.name for m in full.models}


def test_grinsztajn_training_caps_are_sample_sizes():
    for n in (334, 335, 336, 337):
        suite = load_suite(SUITES / f"grinsztajn-{n}.yaml")
        assert suite.protocol.sample_sizes == [10000, 50000, "all"]


def test_dev_suites_use_the_shared_openml_files(shared_data: Path):
    index = {int(r["openml_dataset_id"]): r for r in
             pd.read_csv(shared_data / "INDEX.csv").to_dict("records")}
    dev = load_suite(SUITES / "dev.yaml")
    assert {d.openml_id for d in dev.datasets} == set(index)  # every shared dataset, with its OpenML id
    for d in dev.datasets:
        assert isinstance(d, LocalFile) and Path(d.file).resolve().parent == shared_data.resolve()
        assert Path(d.file).name == index[d.openml_id]["file"] and d.target == index[d.openml_id]["target"]
    lite = load_suite(SUITES / "dev-lite.yaml")
    assert {d.openml_id for d in lite.datasets} < {d.openml_id for d in dev.datasets}
    assert yaml.safe_load((SUITES / "dev-lite.yaml").read_text())["protocol"]["max_folds"] == 1


def test_shipped_suites_give_each_name_one_source():
    """Names key the results: suites meant to share a database never give one name to two datasets
    (the dev, zoo and claims suites use OpenML's names for local copies and say to keep them in a
    database of their own)."""
    from pipeline.data.sources import source_of
    from pipeline.suite_datasets import dataset_label

    seen: dict[str, tuple[str, str]] = {}
    for path in FILES:
        if path.stem in ("dev", "dev-lite", "zoo", "claims", "study", "study-lite", "bf16-check", "bf16-check-tabm",
                         "study-every-dataset", "study-tuned-slice", "pilot-attention"):
            continue
        for d in load_suite(path).datasets:
            name, source = dataset_label(d), source_of(d)
            if name in seen:
                assert seen[name][0] == source, f"{name!r}: {seen[name]} and ({source}, {path.stem})"
            seen[name] = (source, path.stem)


def test_the_study_reaches_above_ten_thousand_rows_on_every_large_dataset(shared_data: Path):
    """suites/study.yaml and its lite profile: the 8 large and 8 dev datasets; the lite's largest size
    is below every large dataset's training part (rows × (1 − 1/folds) × (1 − validation)), so that
    each gives a point above 10,000 rows; the full study runs every registered model with TPE on one
    budget, the lite a subset with one limit for all."""
    from pipeline.models.registry import REGISTRY
    from pipeline.report.stats.claims import REFERENCE_ROWS

    large = pd.read_csv(shared_data.parent / "openml-large" / "INDEX.csv")
    dev = pd.read_csv(shared_data / "INDEX.csv")
    full, lite = load_suite(SUITES / "study.yaml"), load_suite(SUITES / "study-lite.yaml")
    for s in (full, lite):
        assert {d.openml_id for d in s.datasets} == set(large.openml_dataset_id) | set(dev.openml_dataset_id)
        assert all(isinstance(d, LocalFile) and Path(d.file).is_file() for d in s.datasets)
    assert {256, 1024, 4096, 16384, 32768} <= set(full.protocol.sample_sizes)
    assert len({m.name for m in full.models}) == len(full.models) and {m.name for m in full.models} == {
        n for n, i in REGISTRY.items() if i.source == "attnbench"}
    assert {(m.search, m.trials, m.time_budget_s) for m in full.models} == {("tpe", 30, 7200.0)}
    assert {m.name for m in lite.models} < {m.name for m in full.models}
    assert len({(m.trials, m.time_budget_s, m.trial_timeout_s) for m in lite.models}) == 1  # one limit for all
    p = lite.protocol
    top = max(s for s in p.sample_sizes if isinstance(s, int))
    train_rows = large.n_rows * (1 - 1 / p.folds) * (1 - p.validation_fraction)
    assert top > REFERENCE_ROWS and (train_rows > top).all(), train_rows.min()
    assert "GPU-hours" in header(SUITES / "study.yaml") and "90 minutes" in header(SUITES / "study-lite.yaml")


def test_the_tuned_slice_runs_on_the_studys_own_fold_zero_tasks(shared_data: Path):
    """suites/study-tuned-slice.yaml stands tuned entries beside study-every-dataset's defaults, which it lists
    too, entry for entry (the same cells): its datasets
    are that study's entries verbatim, its split protocol the same (so fold 0 at 10,000 rows is one task in
    both), 8 or more of the datasets reach 10,000 training rows, and each entry is a labelled TPE search of
    at least 8 trials with CPU-second limits, each trial's the same as the study's default trial of that model
    (a tuned trial cut short where the default ran on would read as tuning's loss)."""
    study, tuned = (yaml.safe_load((SUITES / f"{n}.yaml").read_text()) for n in ("study-every-dataset", "study-tuned-slice"))
    assert all(d in study["datasets"] for d in tuned["datasets"]) and len(tuned["datasets"]) >= 8
    assert tuned.get("seed", 0) == study.get("seed", 0)
    for key in ("folds", "validation_fraction", "repeats", "subset_seeds"):
        assert tuned["protocol"].get(key) == study["protocol"].get(key), key
    assert tuned["protocol"]["sample_sizes"] == [10000] and 10000 in study["protocol"]["sample_sizes"]
    assert tuned["protocol"]["max_folds"] == 1
    searched = [m for m in tuned["models"] if "label" in m]
    eight = [m for m in study["models"] if "repeats" not in m]  # issue 59's entries run the first repeat only
    assert len(eight) == 8 and [m for m in tuned["models"] if "label" not in m] == eight  # the defaults, entry for entry
    assert {m["name"] for m in searched} == {"ft_transformer", "realmlp", "catboost"}
    # ... so their cells are the study's own cells (done in its file: nothing trains again)
    a, b = load_suite(SUITES / "study-every-dataset.yaml"), load_suite(SUITES / "study-tuned-slice.yaml")
    for m in eight:
        assert (cell_id(a, "electricity", "k", 0, 0, "10000", 0, m["name"])
                == cell_id(b, "electricity", "k", 0, 0, "10000", 0, m["name"])), m["name"]
    for m in searched:
        assert m["search"] == "tpe" and m["trials"] >= 8 and m["clock"] == "cpu" and m["label"] == f"{m['name']}-tuned"
        default = next(d for d in study["models"] if d["name"] == m["name"])
        assert m["trial_timeout_s"] == default["trial_timeout_s"] and default["clock"] == "cpu", m["name"]
    import pyarrow.parquet as pq

    rows_needed = 10000 / ((1 - 1 / 3) * (1 - 0.2))  # the training part of a 3-fold split, less validation
    for d in load_suite(SUITES / "study-tuned-slice.yaml").datasets:
        assert pq.ParquetFile(d.file).metadata.num_rows >= rows_needed, d.name
