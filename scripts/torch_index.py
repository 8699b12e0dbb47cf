"""The extra index `make` gives pip for torch: prints ``--extra-index-url URL``, or nothing.

    python scripts/torch_index.py URL

URL is PyTorch's CPU index by default (the Makefile's ``TORCH_INDEX``): with it, pip takes
``torch==2.13.0+cpu``, since a local version label ranks above PyPI's ``2.13.0`` (which on
Linux is the CUDA build, gigabytes) and ``==2.13.0`` matches both. When its host cannot be
reached (offline, or a machine that reaches only a mirror), pip would try it five times per
package with growing waits, about 8 s each (a whole install took 17 minutes so); then this
prints nothing and says why on stderr, and pip installs from the indexes it is configured with.
Behind a proxy, which pip knows and this does not, the index is given as it is; when
``PIP_EXTRA_INDEX_URL`` names it already (CI), it is not given twice.
"""

from __future__ import annotations

import os
import socket
import sys
from urllib.parse import urlsplit

PROXIES = ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "PIP_PROXY")
TIMEOUT = 5.0  # seconds to open a connection to the index's host


def reachable(url: str) -> bool:
    """Whether pip can reach ``url``, as far as one connection to its host tells."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or any(os.environ.get(name) for name in PROXIES):
        return True  # a local index, or a proxy's business
    try:
        socket.create_connection((parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)), TIMEOUT).close()
    except (OSError, ValueError):
        return False
    return True


def main(argv: list[str]) -> int:
    url = argv[1].strip() if len(argv) > 1 else ""
    if not url or url in os.environ.get("PIP_EXTRA_INDEX_URL", "").split():  # none wanted, or pip has it already
        return 0
    if reachable(url):
        print("--extra-index-url", url)
    else:
        print(f"{url} cannot be reached: installing from pip's configured indexes only "
              "(where that is PyPI, torch is its CUDA build on Linux)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
