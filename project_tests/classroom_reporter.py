"""A Python model of GitHub Classroom's reporter, ``classroom-resources/autograding-grading-reporter@v1``
(commit d13b591): what it reads of a payload, what it prints and what it posts, so the project's
tests can check that both its totals equal our report's score.
"""

from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

# What the reporter reads of a payload (src/main.js, console-results, notify-classroom).
PAYLOAD_SCHEMA = {
    "type": "object",
    "required": ["version", "status", "max_score", "tests"],
    "properties": {
        "version": {"const": 1},
        "status": {"enum": ["pass", "fail", "error"]},
        "max_score": {"type": "number", "exclusiveMinimum": 0},
        "tests": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "status", "score", "message", "test_code", "line_no"],
                "properties": {
                    "name": {"type": "string", "minLength": 1, "pattern": "^[^\\r\\n]*$"},
                    "status": {"enum": ["pass", "fail", "error"]},
                    "score": {"type": "number", "minimum": 0},
                    "message": {"type": "string", "pattern": "^[^\\r\\n]*$"},
                    "test_code": {"type": "string", "pattern": "^[^\\r\\n]*$"},
                    "filename": {"type": "string"},
                    "line_no": {"type": "integer"},
                    "duration": {"type": "number"},
                },
            },
        },
    },
}


def to_fixed(value: float, digits: int = 2) -> str:
    """JavaScript's ``Number.prototype.toFixed`` (round half up on the exact binary value)."""
    return str(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


@dataclass
class Reporter:
    """What the reporter does with ``runners`` and the ``<RUNNER>_RESULTS`` variables."""

    printed_total: float = 0.0  # the "Total:" row of its console table
    posted_total: float = 0.0  # "Points X/Y" notice: what GitHub Classroom records
    posted_max: float = 0.0
    lines: list[str] = field(default_factory=list)  # what it prints to the log
    failed: bool = False  # core.setFailed

    @classmethod
    def run(cls, runners: str, env: dict[str, str]) -> "Reporter":
        self = cls()
        results = []
        for runner in runners.split(","):
            encoded = env[f"{runner.strip().upper()}_RESULTS"]
            results.append((runner, json.loads(base64.b64decode(encoded).decode("utf-8"))))
        for runner, r in results:
            max_score = r.get("max_score") or 0
            tests = r["tests"]  # a payload without tests crashes the real one
            passes = sum(t["status"] == "pass" for t in tests)
            score = passes / len(tests) * max_score if tests else math.nan
            self.lines.append(f"🔄 Processing: {runner}")
            for t in tests:
                line = f" - line {t['line_no']}" if t.get("line_no") != 0 else ""
                if t["status"] == "pass":
                    self.lines.append(f"✅ {t['name']}{line}")
                elif t["status"] == "error":
                    message = t["message"] or f"Failed to run test '{t['name']}'"
                    self.lines += f"Error: {message}".split("\n")
                else:
                    self.lines.append(f"❌ {t['name']}{line}")
                if t.get("test_code"):
                    self.lines += ["Test code:", *t["test_code"].split("\n")]
            if max_score != 0:
                self.lines.append(f"Total points for {runner}: {to_fixed(score)}/{max_score}")
            self.printed_total += score
            if r.get("max_score"):
                self.posted_max += r["max_score"]
                self.posted_total += sum(t["score"] for t in tests)
        self.failed = any(r["status"] in ("fail", "error") for _, r in results)
        return self


def command_lines(lines: list[str]) -> list[str]:
    """Lines the Actions runner would take as workflow commands outside a stop-commands block."""
    found, token = [], None
    for raw in lines:
        for line in re.split(r"\r\n|\r|\n", raw):
            stripped = line.lstrip()
            if token is not None:
                if stripped.lower().startswith(f"::{token.lower()}::"):
                    token = None
                continue
            if stripped.startswith("::stop-commands::"):
                token = stripped[len("::stop-commands::"):].strip()
                if not re.fullmatch(r"[0-9a-f]{32}", token):
                    found.append(line)  # not one of ours
                continue
            if stripped.startswith("::") or "##[" in line:
                found.append(line)
    return found


def decode_outputs(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as ``{name: value}`` (only ``name=value`` lines are written)."""
    pairs = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[a-z0-9]+", name), line
        pairs[name] = value
    return pairs
