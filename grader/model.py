"""The result model: every writer (JSON, Classroom payloads, summaries, tables) reads only this."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Status = Literal["passed", "failed", "error", "timeout"]


@dataclass
class Feedback:
    """What a student needs to fix one failing test.

    Every field is optional: a passing test has none.
    """

    # What the test checked, in one sentence ("SelfAttention_v1(3, 2) on the textbook inputs").
    checked: str = ""
    # The likely concept behind the failure ("scores are not scaled by sqrt(d_k)").
    hint: str = ""
    # Expected and actual values, short (shapes, a few entries), as text.
    expected: str = ""
    actual: str = ""
    # For attention-weight matrices: both matrices as nested lists, drawn side by side.
    expected_grid: list | None = None
    actual_grid: list | None = None


@dataclass
class TestResult:
    """One hidden test of one exercise."""

    name: str
    status: Status
    score: float
    max_score: float
    # One line a student can act on ("" when passed).
    message: str = ""
    feedback: Feedback | None = None


@dataclass
class ExerciseResult:
    """One exercise module (its name is the module stem, e.g. ``causal``)."""

    name: str
    score: float
    max_score: float
    tests: list[TestResult] = field(default_factory=list)
    # Why the whole module scored nothing, when it did (missing file, syntax error, ...).
    message: str = ""
    # The start of what the student's code printed, truncated.
    output: str = ""


@dataclass
class Report:
    """A graded submission: what ``REPORT.json`` holds."""

    assignment: str
    score: float
    max_score: float
    exercises: list[ExerciseResult] = field(default_factory=list)
    # Anything suspicious noticed in the submission, one sentence each.
    flags: list[str] = field(default_factory=list)
    # Where the grader itself failed (not the student's fault); empty normally.
    grader_errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The report as plain JSON-ready data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Report":
        """Rebuild a report written by :meth:`to_dict`."""
        exercises = []
        for ex in data["exercises"]:
            tests = [
                TestResult(**{**t, "feedback": Feedback(**t["feedback"]) if t.get("feedback") else None})
                for t in ex["tests"]
            ]
            exercises.append(ExerciseResult(**{**ex, "tests": tests}))
        return cls(**{**data, "exercises": exercises})
