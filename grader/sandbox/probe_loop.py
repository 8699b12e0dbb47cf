"""The one probe loop both runners drive: deadlines, a module's time budget, a fresh worker after
a hang or a crash, and the probes left when the budget is spent.

The sandbox's supervisor (:mod:`grader.sandbox.supervisor`, in the zygote) and the student's own
machine (:mod:`grader.sandbox.local`) differ in how a worker is started and read; what a module's
probes come to does not, so it is written here once. A runner gives :func:`run_module` an
``attempt(base, budget_end)``: start a worker on the probes from ``base`` on and yield what
:func:`outcomes` reads from it. A worker says ``ready`` (or ``import_error``), then one ``result``
per probe, one JSON line each (:mod:`grader.sandbox.worker`).
"""

from __future__ import annotations

import time
from typing import Callable, Iterator

from grader.sandbox import wire
from grader.sandbox.protocol import CRASH, TIMEOUT, ErrorAccount, Limits, ModulePlan

TIMED_OUT = object()  # what a line reader returns when no line came before the deadline
ENDED = object()  # ... when the worker's channel closed
TOO_LONG = object()  # ... when the worker sent more than one line may hold (wire.MAX_LINE)

WHOLE_MODULE = None  # the index of an outcome that is every remaining probe's (the module could not be imported)


def error(kind: str, message: str) -> dict:
    """An error the runner saw (a timeout, a crash), as a worker's are written."""
    return ErrorAccount(type=kind, message=message).to_wire()


def outcomes(next_line: Callable[[float], object], death_message: Callable[[], str], probe_timeout: float,
             budget_end: float, count: int) -> Iterator[tuple[int | None, dict]]:
    """``(probe index, outcome)`` for each of a worker's ``count`` probes, as its lines come
    (``next_line(deadline)``: a line, or :data:`TIMED_OUT`, :data:`ENDED`, :data:`TOO_LONG`); the
    index is :data:`WHOLE_MODULE` for the module's import failing. Each line is given until
    ``probe_timeout`` seconds from the last, and never past ``budget_end``. Returns whether the
    worker ended its task as it should (it may be given another), not by a hang or a crash."""
    index = -1  # while the module is being imported
    while index < count:
        line = next_line(min(time.monotonic() + probe_timeout, budget_end))
        if line is TIMED_OUT:
            what = "importing the module" if index < 0 else "this check"
            timed_out = error(TIMEOUT, f"{what} did not finish within {probe_timeout:g} s (infinite loop?)")
            yield _ended(index, "timeout", timed_out)
            return False
        if line is ENDED:
            yield _ended(index, "crash", error(CRASH, death_message()))
            return False
        if line is TOO_LONG:
            yield max(index, 0), {"outcome": "crash", "error": error(CRASH, "your code sent more data than the grader accepts")}
            return False
        try:
            event = wire.parse_line(line)
            kind = event["event"]
        except (wire.WireError, KeyError, TypeError):
            yield max(index, 0), {"outcome": "crash", "error": error(CRASH, "your code interfered with the grader's channel")}
            return False
        if index < 0 and kind == "import_error":
            yield WHOLE_MODULE, {"outcome": "module_error", "error": event.get("error")}
            return True
        if index >= 0:
            yield index, ({"outcome": "error", "error": event["error"]} if "error" in event
                          else {"outcome": "ok", "value": event.get("value")})
        index += 1
    return True


def _ended(index: int, outcome: str, account: dict) -> tuple[int | None, dict]:
    """A worker that hung or died: while importing the module, every probe's ``module_error``."""
    if index < 0:
        return WHOLE_MODULE, {"outcome": "module_error", "error": account}
    return index, {"outcome": outcome, "error": account}


def run_module(module: ModulePlan, limits: Limits, stem: str,
               attempt: Callable[[int, float], Iterator[tuple[int | None, dict]]]) -> Iterator[dict]:
    """Run ``module``'s probes, one ``attempt`` (a fresh worker) after another, each from the first
    probe the last did not answer, until every probe has an outcome or the module's budget is
    spent; yield ``{"module": stem, "id": probe id, "outcome": ..., ...}`` per probe, then
    ``{"module": stem, "event": "spent", "seconds": ...}`` (measured here, not by student code).

    An attempt that answers nothing (the grader's failure: its references did not load) ends the
    run, its probes without a result (the client gives them one that says so). Probes left when the
    budget is spent are timeouts that say so."""
    probes = module.probes
    budget = module.budget_within(limits)
    started = time.monotonic()
    budget_end = started + budget
    next_probe = 0
    while next_probe < len(probes) and time.monotonic() < budget_end:
        base = next_probe
        for index, outcome in attempt(base, budget_end):
            if index is WHOLE_MODULE:
                for probe in probes[base:]:
                    yield {"module": stem, "id": probe.id, **outcome}
                next_probe = len(probes)
            else:
                yield {"module": stem, "id": probes[base + index].id, **outcome}
                next_probe = base + index + 1
        if next_probe == base:
            next_probe = len(probes)
    spent = error(TIMEOUT, f"not run: {stem}.py used up its {limits.module_budget:g} s time budget")
    for probe in probes[next_probe:]:
        yield {"module": stem, "id": probe.id, "outcome": "timeout", "error": spent}
    yield {"module": stem, "event": "spent", "seconds": min(time.monotonic() - started, budget)}
