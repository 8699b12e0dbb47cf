"""The result model: every writer (JSON, Classroom payloads, summaries, tables) reads only this."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Status = Literal["passed", "failed", "error", "timeout"]

# What a module still raising NotImplementedError (the template's stub, untouched) says: the whole
# of its message, and the start of each of its checks'. REPORT.json holds only the text, so the
# text is the state: read it through ``not_attempted``, never by comparing strings elsewhere.
NOT_ATTEMPTED = "not attempted yet"


@dataclass
class Comparison:
    """What was compared: what ran, and the expected and actual values (every field optional)."""

    # What ran, in one sentence ("SelfAttention_v1(3, 2) on the textbook inputs").
    checked: str = ""
    # Expected and actual values, short (shapes, a few entries), as text.
    expected: str = ""
    actual: str = ""
    # For attention-weight matrices: both matrices as nested lists, drawn side by side.
    expected_grid: list | None = None
    actual_grid: list | None = None


@dataclass
class Feedback(Comparison):
    """What a student needs to fix one failing test: the comparison that failed, and a hint.

    Every field is optional: a passing test has none.
    """

    # What to do about it, or the likely concept behind the failure.
    hint: str = ""
    # The hint follows from an exact relation the check verified (dropout on in eval mode: every
    # weight is 0 or scaled by 1 / (1 - p)): it stays beside the module's diagnosis.
    proven: bool = False


@dataclass
class Diagnosis(Comparison):
    """One diagnosis for an exercise module with failing checks, shown above them.

    A concept appears only when confirmed (a catalog mistake reproduces the student's results,
    or an exception leaves no doubt); otherwise the diagnosis says where the computation first
    leaves the reference's (the comparison of that step), or explains the exception.
    """

    # Confirmed concepts, one per mistake found ("Divide the scores by sqrt(d_k) ...").
    concepts: list[str] = field(default_factory=list)
    # The first step whose values differ ("attention weights (the softmax output)").
    stage: str = ""
    # An exception in student code, explained: its kind and meaning, where, and that line.
    error: str = ""
    # The student's line that computed the first differing step (or, for an error, that raised):
    # "causal.py, line 42", and that line of their file.
    where: str = ""
    code: str = ""
    # What is different at that step, when a relation holds exactly on every probe ("every value
    # of yours is the expected one times 2: a constant factor").
    relation: str = ""
    # For a value that differs: the line that first makes a value the reference never computes,
    # walking back from the differing step ("value": from values the reference combines at one of its
    # steps too; "combination": from values it computes but never combines so; "inputs": from values
    # it has only in another shape or order; "uses": from the reference's values and the module's own
    # tensors, which are not compared); for an error, where the shape
    # went wrong ("shape"), or the line of this module that called the file that raised ("call").
    origin: str = ""
    origin_code: str = ""
    origin_kind: str = "shape"
    # The lines of the student's class that make the attributes the line shown uses
    # ("self.W_o: line 125: self.W_o = nn.Linear(d_out, d_out)").
    made: list[str] = field(default_factory=list)
    # When the origin line computes from values the reference never combines: the lines that made
    # them ("line 77: values = x @ self.W_key").
    inputs: list[str] = field(default_factory=list)
    # Facts about the student's code that the diagnosis proved, each with its line ("line 132 defines
    # __init_, not __init__: ..."): what goes wrong beyond tensors (see grader.diagnosis.mechanism).
    notes: list[str] = field(default_factory=list)


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

    @property
    def not_attempted(self) -> bool:
        """Its module is still the template's stub."""
        return self.message.startswith(NOT_ATTEMPTED)


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
    # Why the failing checks fail, once for the module (None when every check passed).
    diagnosis: Diagnosis | None = None

    @property
    def not_attempted(self) -> bool:
        """The module is still the template's stub (every check said so)."""
        return self.message == NOT_ATTEMPTED


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
    # Where the diagnosis (advice, not the grade) failed, for the instructor; the grade stands.
    diagnosis_errors: list[str] = field(default_factory=list)
    # How student code was confined while this grade was made: "namespaces" (fully), or the
    # weaker mode and why (docs/threat-model.md, *Isolation levels*); "" when nothing ran.
    isolation: str = ""

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
            diagnosis = Diagnosis(**ex["diagnosis"]) if ex.get("diagnosis") else None
            exercises.append(ExerciseResult(**{**ex, "tests": tests, "diagnosis": diagnosis}))
        return cls(**{**data, "exercises": exercises})
