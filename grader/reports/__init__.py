"""Writers of the report: each a pure function of :class:`grader.model.Report`."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from grader.hygiene import clean_report
from grader.model import Report


def write_json(report: Report, path: Path) -> None:
    """Write REPORT.json (see docs/report.md for every field), replacing any earlier one at once."""
    replace_atomically(path, json.dumps(clean_report(report).to_dict(), indent=2) + "\n")


def replace_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
