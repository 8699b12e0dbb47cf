"""Hostile submissions: one row per attack, each with the outcome the grader must produce.

Every payload is the source of ``exercises/ch03/simple_attention.py`` (the *target*); the
other modules of the submission are the reference solutions, so they must keep full marks.
Placeholders are filled in by the harness (``harness.fill``) with the paths of one test run,
so each attack knows exactly where to strike, as an attacker who has read the repository would:

    @STUB@     the honest stub of the target (what the student was given)
    @REPO@     the instructor's repository the grader runs from (tests/, solutions/, grader/)
    @SITE@     the venv's site-packages            @STDLIB@  the standard library folder
    @CLASS@    the batch folder of submissions     @SELF@    this submission's folder
    @VICTIM@   an honest submission in the same batch
    @REPORTS@  the batch's report folder           @CSV@     the batch's CSV of grades
    @GH@       folder of the GITHUB_OUTPUT / _STEP_SUMMARY / _ENV / _PATH files
    @TOKEN@    a string unique to the run: anything an attack writes carries it
    @PORT@     a TCP port on 127.0.0.1 where the test listens for stolen data
    @MARK@     a file that only unpickling a returned object would create

``bound`` is the most the target may score: ``stub`` (what the honest stub scores),
``textbook`` (the points of the ``*textbook*`` tests: hard-coded answers may earn those, never
the behaviour tests) or ``refused`` (the whole exercises folder is refused). ``status`` lists
the statuses its non-passing tests may have; ``words`` must appear in one of its messages.
"""

from __future__ import annotations

from project_tests.adversarial.attack_kit import DAEMON, PRELUDE, TARGET, Hostile, at_import
from project_tests.adversarial.attacks_on_the_grader import ON_THE_GRADER
from project_tests.adversarial.attacks_on_the_result import ON_THE_RESULT
from project_tests.adversarial.attacks_on_the_run import ON_THE_RUN

__all__ = ["BY_NAME", "DAEMON", "HOSTILE", "PRELUDE", "TARGET", "Hostile", "at_import"]

HOSTILE: list[Hostile] = ON_THE_RUN + ON_THE_RESULT + ON_THE_GRADER
BY_NAME = {h.name: h for h in HOSTILE}
assert len(BY_NAME) == len(HOSTILE), "hostile submission names must be unique"
