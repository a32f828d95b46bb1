"""One vocabulary for states (pipeline/records.py): how a trial or cell ended (Status), why its fit stopped
(StopReason), how a run ended (RunStatus). The code compares with the members, the SQL renders them, and the
stored words are the ones results files and shipped references hold."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from pipeline.data import views
from pipeline.data.schema import REFERENCE_COLUMNS
from pipeline.data.store import Store
from pipeline.records import (
    OUT_OF_BUDGET,
    SCORED,
    TEST_METRICS,
    CellResult,
    Metrics,
    RunRecord,
    RunStatus,
    State,
    Status,
    StopReason,
    TrialRecord,
    sql_columns,
    sql_list,
)

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pipeline"

SQL_WORDS = re.compile(r"\b(SELECT|WHERE|UPDATE|INSERT|DELETE|CASE|FILTER|HAVING|JOIN|RETURNING)\b")


def states() -> list[type[State]]:
    """Every enum of stored words, whenever it was declared (a new one is checked as soon as it exists)."""
    out: list[type[State]] = []
    todo = list(State.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


def strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Each string a file builds, docstrings apart: a plain one as written, an f-string with ``{}`` where it
    renders a value (an implicitly joined string is one string)."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    parts = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.JoinedStr):
            parts |= {id(v) for v in n.values}
            yield n.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in n.values)
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in parts | docs:
            yield n.lineno, n.value


def label(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def sql_literals(path: Path) -> list[str]:
    """State words written out as SQL literals: ``'ok'`` in a string that reads as SQL (a keyword, or the
    literal compared or listed)."""
    words = sorted({m.value for cls in states() for m in cls})
    literal = re.compile(r"'(" + "|".join(map(re.escape, words)) + r")'")
    compared = re.compile(r"(=|<>|!=|\(|,)\s*'(" + "|".join(map(re.escape, words)) + r")'")
    out = []
    for line, text in strings(ast.parse(path.read_text(encoding="utf-8"))):
        found = literal.findall(text) if SQL_WORDS.search(text) else [m[1] for m in compared.findall(text)]
        out += [f"{label(path)}:{line}: '{w}'" for w in found]
    return out


def compared_words(path: Path) -> list[str]:
    """Python comparisons of a state with a written-out word (``res.status == 'ok'``, ``stop in ('pruned',)``)."""
    fields = {Status: "status", RunStatus: "status", StopReason: "stop"}
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        consts = {c.value for s in sides for c in ([s] if isinstance(s, ast.Constant) else getattr(s, "elts", []))
                  if isinstance(c, ast.Constant)}
        text = ast.unparse(node)
        if any(hint in text.lower() and consts & {m.value for m in cls} for cls, hint in fields.items()):
            out.append(f"{label(path)}:{node.lineno}: {text}")
    return out


def package_files() -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py"))
            if p.name != "records.py"]


def test_no_sql_spells_out_a_state_word():
    """The views, the schema, the store and the references render every state through State.sql and sql_list:
    a renamed member renames it in every query, and no query keeps a word the enum no longer has."""
    bad = [b for p in package_files() for b in sql_literals(p)]
    assert bad == [], f"state words written out in SQL (render them: Status.OK.sql, sql_list(SCORED)): {bad}"


def test_the_sql_check_sees_what_it_is_for(tmp_path: Path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""A docstring may say \'running\'."""\n'
        "a = \"SELECT count(*) FILTER (WHERE status = 'ok') FROM results\"\n"
        "b = f\"SELECT * FROM {t} WHERE status IN ('ok', 'stopped')\"\n"
        "c = \"AND stop_reason <> 'pruned'\"\n"
        "d = (\"UPDATE runs SET status = 'killed' \"\n     \"WHERE status = 'running'\")\n"
        "e = \"a message: still 'running' in the file\"\n", encoding="utf-8")
    found = sql_literals(probe)
    assert [f.split(": ")[1] for f in found] == ["'ok'", "'stopped'", "'ok'", "'pruned'", "'killed'", "'running'"], found


def test_a_new_member_is_rendered_and_checked_at_once(tmp_path: Path):
    """A member added to an enum (here a new enum of stored words) renders through the same functions, and
    the checks above know its word with no list to extend."""

    class Probe(State):
        FIRST = "first_word"
        QUOTED = "it's"

    assert Probe.QUOTED.sql == "'it''s'" and str(Probe.FIRST) == f"{Probe.FIRST}" == "first_word"
    assert sql_list([Probe.QUOTED, Probe.FIRST, Probe.QUOTED]) == "('first_word', 'it''s')"  # the enum's order
    path = tmp_path / "probe.py"
    path.write_text("x = \"SELECT * FROM t WHERE w = 'first_word'\"\n", encoding="utf-8")
    assert sql_literals(path) == ["probe.py:1: 'first_word'"]
    with pytest.raises(ValueError):
        sql_list([])


def test_code_compares_states_as_members_never_as_written_out_words(tmp_path: Path):
    bad = [b for p in package_files() for b in compared_words(p)]
    assert bad == [], f"state words compared outside pipeline/records.py: {bad}"
    probe = tmp_path / "probe.py"
    probe.write_text("a = summary.status == 'finished'\nb = r.stop_reason in ('max_epochs', 'time_limit')\n"
                     "c = res.status != 'ok'\nd = counts['failed'] == 0\n", encoding="utf-8")
    assert len(compared_words(probe)) == 3


def test_the_views_render_the_enums():
    """What the views compare is rendered from the enums, in words the stored files hold."""
    assert views.SCORED_IN == "('ok', 'stopped')" == sql_list(SCORED)
    assert views.BUDGET_STOPS == "('max_epochs', 'time_limit', 'pruned')"
    assert views.OK_OR_MISSING == "('ok', 'missing')" and views.OK == "'ok'" and views.MISSING == "'missing'"
    assert views.SCORED_IN in views.VIEWS["tuning_curves"] and views.SCORED_IN in views.VIEWS["failures"]
    assert views.BUDGET_STOPS in views.VIEWS["scores"]
    assert {s for s in Status if s.scored} == set(SCORED) and set(OUT_OF_BUDGET) < set(StopReason)


def test_the_stored_words_are_those_shipped_references_hold():
    """Every status, stop reason and run status a shipped reference holds is a member's word: a member whose
    word drifted would no longer read them."""
    con = duckdb.connect()
    chunks = ROOT / "references"

    def held(table: str, column: str) -> set[str]:
        return {r[0] for r in con.execute(f"SELECT DISTINCT {column} FROM read_parquet('{chunks}/*/*/{table}.parquet') "
                                          f"WHERE {column} IS NOT NULL").fetchall()}

    statuses = held("results", "status") | held("trials", "status")
    assert statuses and statuses <= {s.value for s in Status}
    stops = held("results", "stop_reason") | held("trials", "stop_reason")
    assert stops and stops <= {s.value for s in StopReason}
    runs = held("runs", "status")
    assert runs and runs <= {s.value for s in RunStatus}
    for word in statuses | stops | runs:  # a member is its stored word: equal to it, printed as it
        member = next(cls(word) for cls in (Status, StopReason, RunStatus) if word in {m.value for m in cls})
        assert member == word and str(member) == f"{member}" == word


def test_records_hold_members_whatever_they_are_given():
    """A record read back from the store is given stored words; it holds the members (a user Learner's own
    stop reason stays its word)."""
    t = TrialRecord(cell_id="c", trial_id="t", status="stopped", stop_reason="max_epochs")  # type: ignore[arg-type]
    assert t.status is Status.STOPPED and t.status.scored and t.stop_reason == StopReason.MAX_EPOCHS
    assert TrialRecord(cell_id="c", trial_id="t", stop_reason="fit").stop_reason == "fit"
    res = CellResult(cell_id="c", run_id="r", suite="s", dataset="d", task_type="binary", repeat=0, fold=0,
                     sample_size="all", seed=0, model="m", model_name="m", spec_hash="h", status="ok")  # type: ignore[arg-type]
    assert res.status is Status.OK
    run = dataclasses.replace(RunRecord(run_id="r", suite="s", status="killed"), n_done=3)  # type: ignore[arg-type]
    assert run.status is RunStatus.KILLED and run.n_done == 3
    with pytest.raises(ValueError):
        TrialRecord(cell_id="c", trial_id="t", status="no such status")  # type: ignore[arg-type]


def test_one_metrics_block_makes_the_records_and_the_reference_scores(tmp_path: Path):
    """The test metrics are declared once (Metrics): every record takes them in the same place of its table,
    and the reference scores' columns are theirs."""
    from pipeline.evaluation import Scores
    from pipeline.records import VariantRecord

    assert tuple(f.name for f in dataclasses.fields(Metrics)) == TEST_METRICS
    for record in (Scores, TrialRecord, VariantRecord, CellResult):
        names = [f.name for f in dataclasses.fields(record)]
        assert issubclass(record, Metrics)
        at = names.index(TEST_METRICS[0])
        assert tuple(names[at:at + len(TEST_METRICS)]) == TEST_METRICS, record.__name__
    store = Store(tmp_path / "r.duckdb").init()
    with store.connect() as con:
        def columns(table: str) -> list[tuple[str, str]]:
            return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {table}").fetchall()]

        reference = columns("reference_scores")
        runs = columns("runs")
    assert [c for c, _ in reference] == REFERENCE_COLUMNS
    assert [c for c in reference if c[0] in TEST_METRICS] == sql_columns(Metrics)
    # The run's record is the runs table's row: the same columns, of the same types.
    assert runs == sql_columns(RunRecord)
