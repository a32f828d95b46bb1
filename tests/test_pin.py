"""``pin_suite`` through the real openml client against a local server that answers like OpenML's XML API."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from pipeline.errors import DataError
from pipeline.pin import pin_suite
from pipeline.spec import load_suite
from pipeline.suite_datasets import OpenMLTask

OML = 'xmlns:oml="http://openml.org/openml"'

# A small benchmark suite in the shape of OpenML-CC18 (study 99): four of its real tasks.
SUITE_ID = 99
TASKS = {  # tid: (did, name, n_rows, n_features, n_classes)
    3: (3, "kr-vs-kp", 3196, 37, 2),
    31: (31, "credit-g", 1000, 21, 2),
    10101: (1464, "blood-transfusion-service-center", 748, 5, 2),
    146821: (40975, "car", 1728, 7, 4),
}

STUDY_XML = f"""<oml:study {OML}>
  <oml:id>{{suite_id}}</oml:id>
  <oml:alias>OpenML-CC18</oml:alias>
  <oml:main_entity_type>task</oml:main_entity_type>
  <oml:name>OpenML-CC18 Curated Classification benchmark</oml:name>
  <oml:description>We advocate the use of curated, comprehensive benchmark suites of machine learning
datasets, backed by standardized OpenML-based interfaces.</oml:description>
  <oml:status>active</oml:status>
  <oml:creation_date>2019-02-21 18:47:13</oml:creation_date>
  <oml:creator>1</oml:creator>
  <oml:data>{"".join(f"<oml:data_id>{d}</oml:data_id>" for d, *_ in TASKS.values())}</oml:data>
  <oml:tasks>{"".join(f"<oml:task_id>{t}</oml:task_id>" for t in TASKS)}</oml:tasks>
</oml:study>
"""

PROCEDURES_XML = f"""<oml:estimationprocedures {OML}>
  <oml:estimationprocedure>
    <oml:id>1</oml:id><oml:ttid>1</oml:ttid><oml:name>10-fold Crossvalidation</oml:name>
    <oml:type>crossvalidation</oml:type><oml:repeats>1</oml:repeats><oml:folds>10</oml:folds>
    <oml:stratified_sampling>true</oml:stratified_sampling>
  </oml:estimationprocedure>
  <oml:estimationprocedure>
    <oml:id>7</oml:id><oml:ttid>2</oml:ttid><oml:name>10-fold Crossvalidation</oml:name>
    <oml:type>crossvalidation</oml:type><oml:repeats>1</oml:repeats><oml:folds>10</oml:folds>
    <oml:stratified_sampling>false</oml:stratified_sampling>
  </oml:estimationprocedure>
</oml:estimationprocedures>
"""

NO_RESULT_XML = f"""<oml:error {OML}><oml:code>482</oml:code><oml:message>No results</oml:message></oml:error>"""
UNKNOWN_XML = f"""<oml:error {OML}><oml:code>600</oml:code><oml:message>Unknown study</oml:message></oml:error>"""


def task_list_xml(tids: list[int]) -> str:
    items = []
    for t in tids:
        did, name, n, f, k = TASKS[t]
        qualities = "".join(
            f'<oml:quality name="{q}">{v}.0</oml:quality>'
            for q, v in (("NumberOfInstances", n), ("NumberOfFeatures", f), ("NumberOfClasses", k))
        )
        items.append(
            f"<oml:task><oml:task_id>{t}</oml:task_id><oml:task_type_id>1</oml:task_type_id>"
            f"<oml:task_type>Supervised Classification</oml:task_type><oml:did>{did}</oml:did>"
            f"<oml:name>{name}</oml:name><oml:status>active</oml:status><oml:format>ARFF</oml:format>"
            f'<oml:input name="estimation_procedure">1</oml:input>'
            f'<oml:input name="target_feature">class</oml:input>{qualities}</oml:task>'
        )
    return f"<oml:tasks {OML}>{''.join(items)}</oml:tasks>\n"


class FakeOpenML(BaseHTTPRequestHandler):
    requests: list[str] = []  # noqa: RUF012  (per-test list, reset by the fixture)
    serve_listing = True

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def _send(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/xml; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        type(self).requests.append(path)
        call = path.removeprefix("/api/v1/xml/")
        parts = call.split("/")
        if parts[:1] == ["study"] and len(parts) == 2:
            if parts[1] in (str(SUITE_ID), "OpenML-CC18", "271", "334"):  # the same tasks under other ids
                sid = parts[1] if parts[1].isdigit() else str(SUITE_ID)
                return self._send(200, STUDY_XML.replace("{suite_id}", sid))
            return self._send(412, UNKNOWN_XML)
        if call == "estimationprocedure/list" and type(self).serve_listing:
            return self._send(200, PROCEDURES_XML)
        if parts[:2] == ["task", "list"] and type(self).serve_listing:
            filters = dict(zip(parts[2::2], parts[3::2]))
            if int(filters.get("offset", 0)) > 0:
                return self._send(412, NO_RESULT_XML)
            tids = [int(t) for t in filters.get("task_id", "").split(",") if t]
            return self._send(200, task_list_xml([t for t in tids if t in TASKS]))
        return self._send(412, UNKNOWN_XML)


@pytest.fixture
def fake_openml(tmp_path: Path):
    import openml

    FakeOpenML.requests = []
    FakeOpenML.serve_listing = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenML)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    old_root, old_server = openml.config._root_cache_directory, openml.config.server
    old_retries = openml.config.connection_n_retries
    openml.config.server = f"http://127.0.0.1:{server.server_address[1]}/api/v1/xml"
    openml.config.set_root_cache_directory(str(tmp_path / "openml-cache"))
    openml.config.connection_n_retries = 1
    try:
        yield FakeOpenML
    finally:
        openml.config.server = old_server
        openml.config.set_root_cache_directory(str(old_root))
        openml.config.connection_n_retries = old_retries
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("lite", [False, True])
def test_pin_writes_every_served_task(fake_openml, tmp_path: Path, lite: bool):
    out = pin_suite(SUITE_ID, tmp_path / "suites" / "cc18.yaml", lite=lite)
    assert any(r == f"/api/v1/xml/study/{SUITE_ID}" for r in fake_openml.requests), fake_openml.requests
    spec = load_suite(out)
    assert all(isinstance(d, OpenMLTask) for d in spec.datasets)
    assert [d.openml_task for d in spec.datasets] == list(TASKS)  # exactly the served tasks, in order
    assert [d.name for d in spec.datasets] == [v[1] for v in TASKS.values()]
    assert spec.name == ("OpenML-CC18-lite" if lite else "OpenML-CC18")
    assert spec.protocol.max_folds == (1 if lite else None)
    assert {m.name for m in spec.models} == {"xgboost", "catboost", "mlp", "ft_transformer"}
    text = out.read_text()
    assert "OpenML benchmark suite 99 (OpenML-CC18)" in text and "# Size: 4 tasks, 748-3,196 rows" in text
    assert "did 40975, 1,728 rows, 7 features, 4 classes" in text
    assert yaml.safe_load(text)["description"].startswith("We advocate the use of curated")


def test_pin_by_alias_and_without_listing(fake_openml, tmp_path: Path):
    fake_openml.serve_listing = False  # the server answers the study but not the task listing
    out = pin_suite("OpenML-CC18", tmp_path / "x.yaml", lite=True)
    spec = load_suite(out)
    assert [d.openml_task for d in spec.datasets] == list(TASKS)
    assert [d.name for d in spec.datasets] == [f"openml-task-{t}" for t in TASKS]
    assert "task metadata unavailable" in out.read_text()


def test_pin_unknown_suite_is_a_clear_error(fake_openml, tmp_path: Path):
    with pytest.raises(DataError, match="OpenML suite 12345: the server answered"):
        pin_suite(12345, tmp_path / "y.yaml", lite=False)
    assert not (tmp_path / "y.yaml").exists()


@pytest.mark.parametrize("lite", [False, True])
def test_pin_keeps_the_conventions_of_shipped_suites(fake_openml, tmp_path: Path, lite: bool):
    """Re-pinning a Grinsztajn suite keeps both training caps and the names' tag; AMLB keeps the names
    that set its datasets apart from CC18's (the shipped files are written this way)."""
    grinsztajn = load_suite(pin_suite(334, tmp_path / "g.yaml", lite=lite))
    assert [d.name for d in grinsztajn.datasets] == [f"{v[1]}-clf_cat" for v in TASKS.values()]
    assert grinsztajn.protocol.sample_sizes == ([1000] if lite else [10000, 50000, "all"])
    shipped = load_suite(Path(__file__).resolve().parents[1] / "suites" / f"grinsztajn-334{'-lite' if lite else ''}.yaml")
    assert grinsztajn.protocol.sample_sizes == shipped.protocol.sample_sizes
    amlb = load_suite(pin_suite(271, tmp_path / "a.yaml", lite=lite))
    assert [d.name for d in amlb.datasets] == [f"{v[1]}-amlb" for v in TASKS.values()]  # all four are in CC18
    assert amlb.protocol.sample_sizes == ["all"]
