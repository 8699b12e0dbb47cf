"""Checks a batch has already seen pass, by the value they judged.

A hidden test's verdict depends only on its probe's value and on what the suite computed when
it was collected (the suite's contract: a test reads ``probed``, never the submission's files,
the clock or an unseeded random stream; see docs/adding-an-assignment.md). So a test whose probe
gives a value that the same test passed on for an earlier student in the same batch passes
again: :mod:`grader.batch.class_session` keeps the digests of those values (:class:`Passes`, in the
collecting process, learning from each grading process's answer; ``ProbeOutcome.digest``, of the
line that brought the value from the sandbox), and each later grading
process leaves those tests out of its pytest run and records them as passed
(:meth:`GradingPlugin.pytest_json_modifyreport`). A failure is always run, so its message,
feedback and diagnosis are the student's own; the first students of a batch run everything.
"""

from __future__ import annotations

from grader.sandbox.client import PlanResult

MAX_PER_TEST = 64  # digests kept for one test (a class's correct answers are few)


class Passes:
    """For every test id, the digests of the probe values it passed on."""

    def __init__(self):
        self.known: dict[str, set[str]] = {}

    def split(self, items: list, result: PlanResult) -> tuple[list, list[str]]:
        """``items`` to run, and the ids of those whose probe value already passed."""
        run, passed = [], []
        for item in items:
            outcome = result.outcomes.get(item.nodeid)
            # A known digest is that of a value which decoded and passed before: it is not decoded again.
            if outcome is not None and outcome.sent_ok() and outcome.digest in self.known.get(item.nodeid, ()):
                passed.append(item.nodeid)
            else:
                run.append(item)
        return run, passed

    def learn(self, passed: dict[str, str]) -> None:
        """Remember ``{test id: digest}`` of tests a grading process saw pass."""
        for nodeid, digest in passed.items():
            seen = self.known.setdefault(nodeid, set())
            if len(seen) < MAX_PER_TEST:
                seen.add(digest)


def passed_on(json_report: dict | None, result: PlanResult) -> dict[str, str]:
    """``{test id: digest of its probe value}`` for every test that passed on an ok probe value
    (those recorded as passed on a known value left out)."""
    found = {}
    for test in (json_report or {}).get("tests", []):
        if test.get("reused"):
            continue
        outcome = result.outcomes.get(test["nodeid"])
        if test["outcome"] == "passed" and outcome is not None and outcome.outcome == "ok" and outcome.digest:
            found[test["nodeid"]] = outcome.digest
    return found
