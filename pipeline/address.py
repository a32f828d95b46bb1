"""Check a Ray cluster address before joining it: a clear error in seconds, rather than a traceback or
``ray.init`` waiting minutes for a head that is not there."""

from __future__ import annotations

import re
import socket

from pipeline.errors import AttnbenchError

PROBE_TIMEOUT_S = 5.0
_HOST_PORT = re.compile(r"^(?P<scheme>ray://)?(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.\-]+):(?P<port>\d{1,5})$")
FORMS = "host:port (the head's GCS port, e.g. 10.0.0.5:6379), ray://host:10001 (Ray Client), or auto"


def check_address(address: str) -> None:
    """Raise AttnbenchError unless ``address`` is one ``ray.init`` takes and something listens there."""
    if address in ("auto", "local"):
        return
    if address.startswith(("http://", "https://")):
        raise AttnbenchError(f"--address {address}: that is the job API (dashboard) address, which "
                             f"`ray job submit` takes; `attnbench run` joins a cluster at {FORMS}. Inside a "
                             "Ray job, leave --address out (the job sets RAY_ADDRESS); unset RAY_ADDRESS to "
                             "start a local Ray")
    m = _HOST_PORT.match(address)
    if not m or not 0 < int(m["port"]) < 65536:
        raise AttnbenchError(f"--address {address}: not an address Ray can join; use {FORMS}")
    host, port = m["host"].strip("[]"), int(m["port"])
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            pass
    except socket.gaierror:
        raise AttnbenchError(f"--address {address}: cannot resolve the host {host!r}") from None
    except TimeoutError:
        raise AttnbenchError(f"--address {address}: no answer within {PROBE_TIMEOUT_S:.0f} s; is the head "
                             "node up and the port open to this machine?") from None
    except OSError as err:
        raise AttnbenchError(f"--address {address}: cannot connect ({err.strerror or err}); is a Ray head "
                             f"running there? (`ray status --address {address}`)") from None
