"""clientlab driver: httpx, one AsyncClient for the job, requests in flight up to `concurrency`."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import labdriver  # noqa: E402
from httpx_async import HttpxAsyncDriver  # noqa: E402  (this folder; python-httpx-http2 shares it)

if __name__ == "__main__":
    labdriver.main(HttpxAsyncDriver())
