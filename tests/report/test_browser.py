"""Every report page in a real headless Chromium: no console errors, no network, figures drawn.

Needs Debian's chromium (``apt-get install chromium``, or ``make browser``) and websocket-client;
a missing one fails these tests rather than skipping them. The screenshot of the index goes to
$ATTNBENCH_SCREENSHOT_DIR when set, else to the test's temporary directory.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from chromium import Chromium, PageLoad, find_chromium
from synthetic import EVIL_DATASET, EVIL_FEATURE, EVIL_MODEL

SIZES = ("all", "128", "32")
EXPECTED: dict[str, tuple[list[str], list[str]]] = {  # page → (figure ids, table ids)
    "index": (["fig-index-answer", "fig-index-elo", "fig-index-sizes"],
              ["table-answer", "table-answer-cost", "table-index-crossover", "table-headline"]),
    "accuracy": ([f"fig-{f}-{s}" for s in SIZES for f in ("summary", "winrate", "elo", "cd")],
                 [f"table-{t}-{s}" for s in SIZES for t in ("datasets", "summary")]),
    # (which data favours attention needs 3 datasets compared: 2 of these 3 are not converged)
    "sample_size": (["fig-curve-avg", "fig-curve-0", "fig-curve-1", "fig-curve-2"],
                    ["table-crossover", "table-standing"]),
    "tuning": ([f"fig-tuning-{x}-{s}" for s in SIZES for x in ("trials", "seconds", "test")], [f"table-tuning-{s}" for s in SIZES]),
    "compute": (["fig-compute-bars", "fig-pareto", "fig-pareto-predict"], ["table-compute"]),
    "memory": (["fig-memory-bars", "fig-memory-cpu-features"], ["table-memory"]),
    # 3 datasets; the HTML-named one has two attention models (ft_transformer and the evil label).
    "attention": (["fig-attention-0-0", "fig-attention-0-1", "fig-attention-1-0", "fig-attention-1-1",
                   "fig-attention-2-0", "fig-attention-2-1"], []),
    "claims": ([], ["table-claims"]),
    "runs": ([], ["table-runs", "table-models", "table-datasets", "table-trials", "table-failures"]),
}


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    binary = find_chromium()
    if binary is None:
        pytest.fail("chromium not found: the browser tests need Debian's chromium — install it with "
                    "`apt-get update && apt-get install -y chromium` (or `make tools`), or point "
                    "$ATTNBENCH_CHROMIUM at a Chromium binary")
    try:
        import websocket  # noqa: F401 - websocket-client, the DevTools connection
    except ImportError:
        pytest.fail("the browser tests need websocket-client: pip install websocket-client")
    b = Chromium(binary, tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


@pytest.fixture(scope="module")
def loads(browser: Chromium, evil_report) -> dict[str, PageLoad]:
    _, reports = evil_report
    return {name: browser.load((reports / f"{name}.html").as_uri()) for name in EXPECTED}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_page_loads_clean(loads, name):
    page = loads[name]
    assert page.problems == [], f"{name}.html: {page.problems}"
    assert all(u.startswith("file://") for u in page.requests if not u.startswith("data:")), page.requests
    figures, tables = EXPECTED[name]
    drawn = {f["id"]: f for f in page.dom["figures"]}
    assert set(figures) <= set(drawn), f"{name}: missing figures {set(figures) - set(drawn)}"
    for fid in figures:
        f = drawn[fid]
        assert f["rendered"] and f["traces"] > 0 and f["width"] > 200 and f["height"] > 100, f
    assert set(tables) <= set(page.dom["tables"]), f"{name}: missing tables {set(tables) - set(page.dom['tables'])}"
    assert page.dom["links"][:1] == ["index.html"] and len(page.dom["links"]) == 9


def test_index_screenshot(browser, evil_report, tmp_path):
    _, reports = evil_report
    browser.load((reports / "index.html").as_uri())
    out = Path(os.environ.get("ATTNBENCH_SCREENSHOT_DIR") or tmp_path) / "index.png"
    browser.screenshot(out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 900)
    assert len(data) > 30_000, f"{out}: {len(data)} bytes looks like a blank page"
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(out) as img:
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colors is not None and len(colors) > 100, "the screenshot has almost no distinct colours"


def test_html_names_show_as_text(loads):
    # The tables show the names literally, and no page opened a dialog (an injected alert would).
    assert EVIL_DATASET in loads["accuracy"].dom["text"]
    assert EVIL_MODEL in loads["runs"].dom["text"]
    assert all(page.dialogs == [] for page in loads.values())


@pytest.mark.parametrize(("name", "needle"), [("sample_size", EVIL_DATASET), ("sample_size", EVIL_MODEL),
                                              ("attention", EVIL_FEATURE)])
def test_figure_labels_escaped(browser, evil_report, name, needle):
    _, reports = evil_report
    page = browser.load((reports / f"{name}.html").as_uri())
    assert page.problems == []
    svg_text = browser.evaluate(
        "[...document.querySelectorAll('.plotly-graph-div svg text')].map(t => t.textContent).join('\\n')")
    assert needle in svg_text, f"{needle!r} not drawn literally on {name}.html"
    # Nothing from the names became an element.
    assert browser.evaluate("document.querySelectorAll('main img, main b, svg b, svg img').length") == 0


LOG_AXES_JS = """
[...document.querySelectorAll('.plotly-graph-div')].flatMap(div => {
  const out = [];
  for (const [key, axis] of Object.entries(div._fullLayout)) {
    if (!/^[xy]axis\\d*$/.test(key) || axis.type !== 'log') continue;
    const ref = (key[0]) + (key.slice(5) || '');  // 'xaxis2' -> 'x2'
    const bars = div._fullData.filter(t => t.type === 'bar' && (t[key[0] + 'axis'] || key[0]) === ref).length;
    const drawn = [...div.querySelectorAll(`g.${ref}tick text, g.${key[0]}${key.slice(5)}tick text`)]
      .map(t => t.textContent);
    out.push({fig: div.id, axis: key, ticks: axis.ticktext || [], vals: axis.tickvals || [], bars, drawn});
  }
  return out;
})
"""


@pytest.mark.parametrize("name", ["tuning", "compute", "memory"])
def test_log_axes_keep_their_magnitudes_and_carry_no_bars(browser, evil_report, name):
    """Every log axis is labelled with values that say their magnitude (0.5, 2 k, 10 s), not plotly's
    bare "5" or "2, 5" between decades, and no bar is drawn on a log scale."""
    _, reports = evil_report
    page = browser.load((reports / f"{name}.html").as_uri())
    assert page.problems == []
    axes = browser.evaluate(LOG_AXES_JS)
    if name != "memory":  # the memory page's synthetic datasets do not span a decade of widths
        assert axes, f"no log axis on {name}.html"
    for a in axes:
        assert a["bars"] == 0, a
        assert a["ticks"] and len(a["ticks"]) == len(a["vals"]), a  # our labels, not plotly's own
        for text, value in zip(a["ticks"], a["vals"]):
            number = text.split()[0]
            scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(number[-1], 1)
            assert float(number.rstrip("kMG")) * scale == pytest.approx(value, rel=0.05), a  # says its magnitude


def test_overview_leads_with_the_answer(loads):
    text = loads["index"].dom["text"]
    answer, leaderboard = text.index("the answer by training size"), text.index("Leaderboard (")
    assert answer < leaderboard  # the answer comes first
    summary = text[answer:leaderboard]
    for needle in ("Based on 3 datasets at 3 training sizes", "32 training rows", "all training rows",
                   "95% interval", "Cost per 1,000 rows", "Crossover size per dataset", "kept its last epoch or round"):
        assert needle in summary, needle


FIRST_SCREEN = """(() => {
  const main = document.querySelector('main');
  const first = [...main.children].find(e => !['H1', 'H2'].includes(e.tagName));
  const fig = document.getElementById('fig-index-answer'), box = fig.getBoundingClientRect();
  const table = document.getElementById('table-answer').getBoundingClientRect();
  return {first: (first.querySelector('.plotly-graph-div') || first).id, top: box.top, bottom: box.bottom,
          width: box.width, viewport: [innerWidth, innerHeight], table_top: table.top,
          legend: [...fig.querySelectorAll('.legendtext')].map(t => t.textContent),
          panels: [...fig.querySelectorAll('.gtitle, .annotation-text')].map(t => t.textContent)};
})()"""


def test_the_overview_shows_the_answer_as_a_figure_on_its_first_screen(browser, evil_report):
    """At 1400 × 900 the overview opens with the answer's figure, whole, with no scrolling: it is the first
    thing under the title and its heading, above the per-size table."""
    _, reports = evil_report
    metrics = {"deviceScaleFactor": 1, "mobile": False}
    browser.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 900, **metrics}, session=True)
    try:
        page = browser.load((reports / "index.html").as_uri())
        seen = browser.evaluate(FIRST_SCREEN)
    finally:
        browser.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900, **metrics}, session=True)
    assert page.problems == []
    assert seen["viewport"] == [1400, 900] and seen["first"] == "fig-index-answer", seen
    assert 0 < seen["top"] < seen["bottom"] <= 900 and seen["width"] > 1000, seen  # whole, above the fold
    assert seen["bottom"] <= seen["table_top"], seen  # the per-size table under it
    assert {"attention network", "other network", "gradient boosting"} <= set(seen["legend"]), seen
    assert any(t.startswith("share of datasets won against the best gradient boosting model") for t in seen["panels"])


CURVES_JS = """
[...document.querySelectorAll('.plotly-graph-div')].filter(d => d.id.startsWith('fig-curve')).map(div => ({
  id: div.id, title: (div._fullLayout.title || {}).text || '',
  traces: div._fullData.map(t => ({name: t.name, fill: t.fill, y: Array.from(t.y || []), gaps: t.connectgaps,
                                   legend: t.showlegend})),
  xtype: div._fullLayout.xaxis.type, xticks: div._fullLayout.xaxis.ticktext || [],
  categories: Array.from(div._fullLayout.xaxis._categories || []),
}))
"""


def test_learning_curves_leave_gaps_and_draw_no_band_across_datasets(browser, evil_report):
    _, reports = evil_report
    page = browser.load((reports / "sample_size.html").as_uri())
    assert page.problems == []
    figs = {f["id"]: f for f in browser.evaluate(CURVES_JS)}
    avg = figs["fig-curve-avg"]
    assert avg["xtype"] == "category" and avg["categories"] == ["32", "128", "all"]  # 'all' is not a number of rows
    assert all(t["fill"] in (None, "none") for t in avg["traces"]), avg  # no spread across datasets
    alpha = next(f for f in figs.values() if f["title"].startswith("alpha"))
    mlp = next(t for t in alpha["traces"] if t["name"] == "mlp" and t["legend"] is not False)
    assert mlp["y"][1] is None and mlp["y"][0] is not None and mlp["y"][2] is not None, mlp  # 128 rows missing
    assert mlp["gaps"] is False  # the missing point is a gap, not bridged
    assert alpha["xticks"] == ["32", "128", "800"]  # real row counts with their magnitude
    # Two folds per point: each band is a confidence interval within the dataset, around its own line.
    bands = [t for t in alpha["traces"] if t["fill"] == "toself"]
    assert bands and all(len(b["y"]) % 2 == 0 for b in bands)
