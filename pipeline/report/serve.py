"""``attnbench serve``: the report directory over HTTP on 127.0.0.1, regenerated first when a db is given.

The pages work from ``file://`` as they are; serving them helps where a browser runs elsewhere (an
SSH tunnel to a cluster head node) or opens local files poorly. Only the loopback interface is bound.
"""

from __future__ import annotations

import functools
import http.server
import logging
from pathlib import Path

from pipeline.errors import AttnbenchError

log = logging.getLogger(__name__)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        log.info("%s - %s", self.address_string(), format % args)

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # a regenerated report shows on reload
        super().end_headers()


def make_server(reports_dir: str | Path, port: int = 8000, db: str | Path | None = None) -> http.server.ThreadingHTTPServer:
    """Bind a server for ``reports_dir`` (port 0: any free one), then write the report from ``db`` when
    given: a port in use is refused before any page is written."""
    root = Path(reports_dir)
    if db is None and not (root / "index.html").is_file():
        raise AttnbenchError(f"{root}: no index.html here; run `attnbench report` first or pass --db")
    handler = functools.partial(_Handler, directory=str(root.resolve()))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as err:
        raise AttnbenchError(f"cannot listen on 127.0.0.1:{port} ({err.strerror}); choose another --port") from None
    if db is not None:
        from pipeline.report.pages import write_report

        try:
            write_report(db, root)
        except BaseException:
            server.server_close()
            raise
    return server


def serve(reports_dir: str | Path, port: int = 8000, db: str | Path | None = None) -> None:
    """Serve the report until interrupted (Ctrl-C)."""
    server = make_server(reports_dir, port, db)
    bound = server.server_address[1]
    print(f"serving {Path(reports_dir).resolve()} at http://127.0.0.1:{bound}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
