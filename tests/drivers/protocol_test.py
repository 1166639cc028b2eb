"""A driver process: what the lab hands it besides the protocol."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from clientlab.drivers.protocol import REDIRECTING_ENV, DriverProcess

# prints the environment it was given as one protocol line
SHOW_ENV = "import json, os; print(json.dumps({'type': 'hello', 'env': dict(os.environ)}), flush=True); input()"


def test_a_driver_starts_without_the_variables_that_would_send_its_client_elsewhere(tmp_path: Path):
    given = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "HTTP_PROXY": "http://elsewhere:3128",
             "https_proxy": "http://elsewhere:3128", "NO_PROXY": "*", "REQUESTS_CA_BUNDLE": "/tmp/other.pem",
             "SSL_CERT_FILE": "/tmp/other.pem", "NODE_EXTRA_CA_CERTS": "/tmp/other.pem"}
    proc = DriverProcess([sys.executable, "-c", SHOW_ENV], tmp_path, env=given)
    try:
        seen = proc.receive({"hello"}, 30)["env"]
    finally:
        proc.close()
    assert not REDIRECTING_ENV & set(seen)
    assert seen["LANG"] == "C.UTF-8" and seen["PATH"] == given["PATH"]   # the rest is passed on as it was
