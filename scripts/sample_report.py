"""Regenerate docs/sample-report.json: the bundled sample submission, graded by the real CLI.

    .venv/bin/python scripts/sample_report.py

The sample is the one `make demo` shows (the reference solutions with the mistakes listed in
samples/ch03.toml). project_tests/test_report.py fails when the committed file drifts from
what the grader now writes for it; docs/report.md explains every field.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.assignment import Assignment  # noqa: E402
from grader.demo import build_submission, sample_mistakes  # noqa: E402
from grader.settings import Settings  # noqa: E402

OUT = ROOT / "docs" / "sample-report.json"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        assignment = Assignment.resolve("ch03", Settings())
        submission = build_submission(Path(tmp) / "sample", assignment, sample_mistakes(assignment))
        subprocess.run([sys.executable, "-m", "grader", "grade", str(submission), "--assignment", "ch03",
                        "--json", str(OUT), "--quiet"], cwd=ROOT, check=True)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
