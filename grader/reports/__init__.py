"""Writers of the report: each a pure function of :class:`grader.model.Report`."""

from __future__ import annotations

import json
from pathlib import Path

from grader.model import Report


def write_json(report: Report, path: Path) -> None:
    """Write REPORT.json (see docs/report.md for every field)."""
    path.write_text(json.dumps(report.to_dict(), indent=2) + "\n")
