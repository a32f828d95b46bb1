"""A headless Chromium driven over the DevTools protocol, for the report's browser tests.

It records what a page does while it loads: console errors, uncaught exceptions, JavaScript
dialogs (an ``alert`` from injected markup would show here) and every network request.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars"]
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")


def find_chromium() -> str | None:
    """$ATTNBENCH_CHROMIUM when set (and then only it), else Debian's chromium on the PATH or at
    /usr/bin/chromium."""
    chosen = os.environ.get("ATTNBENCH_CHROMIUM")
    candidates = [chosen] if chosen else [shutil.which("chromium"), "/usr/bin/chromium"]
    return next((c for c in candidates if c and Path(c).exists()), None)


@dataclass
class PageLoad:
    url: str
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dom: dict[str, Any] = field(default_factory=dict)

    @property
    def remote_requests(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(LOCAL_SCHEMES)]

    @property
    def problems(self) -> list[str]:
        return ([f"console error: {e}" for e in self.console_errors] + [f"exception: {e}" for e in self.exceptions]
                + [f"dialog: {d}" for d in self.dialogs] + [f"network request: {u}" for u in self.remote_requests])


# What a test wants to know about the DOM once the page has rendered.
DOM_PROBE = """(() => {
  const figs = [...document.querySelectorAll('.plotly-graph-div')].map(d => ({
    id: d.id, rendered: d.classList.contains('js-plotly-plot') && !!d.querySelector('svg.main-svg'),
    traces: (d.data || []).length,
    width: d.getBoundingClientRect().width, height: d.getBoundingClientRect().height}));
  return {title: document.title, figures: figs, tables: [...document.querySelectorAll('table[id]')].map(t => t.id),
          text: document.body.innerText, scripts: document.scripts.length,
          links: [...document.querySelectorAll('header a')].map(a => a.getAttribute('href'))};
})()"""


class Chromium:
    """One browser process and one tab, talked to over the DevTools websocket."""

    def __init__(self, binary: str, profile: Path, width: int = 1280, height: int = 900) -> None:
        import websocket  # websocket-client

        profile.mkdir(parents=True, exist_ok=True)
        self.log = (profile / "chromium.log").open("wb")
        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                      f"--window-size={width},{height}", "about:blank"],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"chromium did not start (see {profile / 'chromium.log'})")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=60, suppress_origin=True)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)

    # ------------------------------------------------------------------------------- protocol
    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False,
             timeout: float = 60) -> dict[str, Any]:
        self._id += 1
        my_id = self._id
        msg: dict[str, Any] = {"id": my_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == my_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._event(reply)
        raise TimeoutError(method)

    def _event(self, ev: dict[str, Any]) -> None:
        self.events.append(ev)
        if ev.get("method") == "Page.javascriptDialogOpening":
            # Answer at once, or the page would hang on the dialog.
            self._id += 1
            self.ws.send(json.dumps({"id": self._id, "method": "Page.handleJavaScriptDialog",
                                     "params": {"accept": True}, "sessionId": self.session}))

    def wait_for(self, method: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        start = len(self.events)
        while time.monotonic() < deadline:
            if any(e.get("method") == method for e in self.events[start:]):
                return
            self.ws.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                self._event(json.loads(self.ws.recv()))
            finally:
                self.ws.settimeout(60)
        raise TimeoutError(f"no {method} within {timeout} s")

    def evaluate(self, expr: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True},
                        session=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluate failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    # ---------------------------------------------------------------------------------- pages
    def load(self, url: str, settle_s: float = 0.3, timeout: float = 30) -> PageLoad:
        """Navigate, wait for the load event and for every Plotly figure to draw, then probe the DOM."""
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_for("Page.loadEventFired", timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.evaluate(
                "[...document.querySelectorAll('.plotly-graph-div')].every(d => d.classList.contains('js-plotly-plot'))"):
            time.sleep(0.1)
        time.sleep(settle_s)
        self.evaluate("1")  # drain events that arrived while settling
        out = PageLoad(url, dom=self.evaluate(DOM_PROBE))
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.exceptions.append(d.get("exception", {}).get("description") or d.get("text", ""))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.console_errors.append(p["entry"].get("text", ""))
            elif m == "Page.javascriptDialogOpening":
                out.dialogs.append(f"{p.get('type')}: {p.get('message')}")
            elif m == "Network.requestWillBeSent":
                out.requests.append(p["request"]["url"])
        return out

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.call("Page.captureScreenshot", params, session=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.log.close()
