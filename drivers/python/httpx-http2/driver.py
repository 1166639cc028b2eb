"""clientlab driver: httpx[http2], one AsyncClient for the job, HTTP/2 forced when the job asks.

The client code is python-httpx-async's (../httpx-async/httpx_async.py); this folder's venv adds
the h2 package and its manifest claims HTTP/2 and h2c.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "httpx-async")  # the driver class, python-httpx-async's
sys.path[:0] = [os.path.join(HERE, "..", "_lib"), SHARED]

import labdriver  # noqa: E402
from httpx_async import HttpxAsyncDriver  # noqa: E402

if __name__ == "__main__":
    labdriver.leave_import_path(SHARED)  # main() leaves _lib's folder
    labdriver.main(HttpxAsyncDriver())
