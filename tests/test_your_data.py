"""docs/YOUR-DATA.md, followed as a user would (issue 84 item 1): a CSV with '?' markers and category codes, the
page's own suite and commands in its order — the price before the run, the run, the answer beside the study —
each asserted on what a user reads."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from processes import in_process as cli

from pipeline.data.store import Store

pytestmark = pytest.mark.slow
DOC = Path(__file__).resolve().parent.parent / "docs" / "YOUR-DATA.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def _credit(path: Path, rows: int = 1200) -> None:
    """A small credit table: the default depends on age, debt and plan, with '?' where age is unknown."""
    rng = np.random.default_rng(0)
    age = rng.integers(20, 70, rows).astype(float)
    debt = rng.gamma(2.0, 1.0, rows)
    plan = rng.integers(1, 4, rows)
    logit = -1.2 + 0.8 * debt - 0.03 * (age - 45) + 0.6 * (plan == 3)
    default = np.where(rng.random(rows) < 1 / (1 + np.exp(-logit)), "yes", "no")
    frame = pd.DataFrame({"age": age.astype(int).astype(str), "debt": debt.round(3), "plan": plan, "default": default})
    frame.loc[rng.choice(rows, 40, replace=False), "age"] = "?"
    frame.to_csv(path, index=False)


def _argv(line: str, tmp: Path) -> list[str]:
    words = line.split()
    assert words[0] == "attnbench"
    return [str(tmp / w) if w.endswith((".yaml", ".duckdb")) else w for w in words[1:]]


def test_the_page_runs_from_a_csv_to_a_verdict_beside_the_study(ray_local, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]):
    _credit(tmp_path / "credit.csv")
    suite = yaml.safe_load(_blocks("yaml")[0])
    (tmp_path / "my-credit.yaml").write_text(yaml.safe_dump(suite))
    commands = [line for block in _blocks("sh") for line in block.strip().splitlines()]
    assert [c.split()[1] for c in commands] == ["run", "run", "answer"]
    dry, run, answer = (_argv(c, tmp_path) for c in commands)

    price = cli(dry, capsys)
    assert price.returncode == 0, price.stderr
    assert "9 cells, 0 already done, 9 to run" in price.stdout and not (tmp_path / "mine.duckdb").exists()
    rows = [line for line in price.stdout.splitlines() if line.startswith("| ft_transformer | all |")]
    assert rows and "unpriced" not in price.stdout, price.stdout  # every cell priced from the study's own entries
    total = float(re.search(r"total: ([\d.]+) trial-hours", price.stdout).group(1))
    assert total > 0

    ran = cli(run, capsys)
    assert ran.returncode == 0, ran.stderr
    cells = Store(tmp_path / "mine.duckdb").query("SELECT model, status FROM results")
    assert len(cells) == 9 and (cells.status == "ok").all()  # 3 entries × 3 folds
    age = Store(tmp_path / "mine.duckdb").query("SELECT n_numeric, n_categorical FROM datasets")
    assert age.n_categorical[0] == 1 and age.n_numeric[0] == 2  # plan declared categorical; age numeric, '?' missing

    beside = cli(answer, capsys)
    assert beside.returncode == 0, beside.stderr
    text = beside.stdout
    assert "## Your data beside study-every-dataset" in text
    mine = next(line for line in text.splitlines() if line.startswith("| credit |"))
    assert "| ft_transformer |" in mine and any(f"| {b} |" in mine for b in ("xgboost", "catboost"))
    assert "| 1,024 |" in mine or "| 256 |" in mine  # 640 training rows: binned to the study's nearest size
    assert re.search(r"\| [\d,]+ \| \d+ \(1\) \|", text)  # the by-size lines count the user's dataset
