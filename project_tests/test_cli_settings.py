"""Every setting a grading run has can be given on the command line, and reaches the run."""

from __future__ import annotations

import dataclasses

from grader.cli import build_parser, settings_from
from grader.settings import Settings

# A value for each field that differs from its default, and the flags that ask for it.
ASKED = {
    "suite_dir": ["--suite", "tests/ch03"],
    "probe_timeout": ["--probe-timeout", "7.5"],
    "module_budget": ["--module-budget", "44"],
    "memory_mb": ["--memory-mb", "3000"],
    "cpu_seconds": ["--cpu-seconds", "90"],
    "file_mb": ["--file-mb", "3"],
    "workers": ["--workers", "3"],
    "output_chars": ["--output-chars", "500"],
    "sandbox_user": ["--sandbox-user", "grader-sandbox"],
    "reuse_passes": ["--no-reuse"],
}


def test_every_field_but_the_project_root_has_a_flag():
    assert {f.name for f in dataclasses.fields(Settings)} - {"project_root"} == set(ASKED)


def test_batch_flags_reach_every_field():
    argv = ["batch", "class", "--assignment", "ch03", "--csv", "g.csv"] + [a for flags in ASKED.values() for a in flags]
    settings = settings_from(build_parser().parse_args(argv))
    defaults = Settings()
    for name in ASKED:
        assert getattr(settings, name) != getattr(defaults, name), name
    assert (settings.module_budget, settings.cpu_seconds, settings.file_mb) == (44.0, 90, 3)
    assert (settings.output_chars, settings.sandbox_user, settings.reuse_passes) == (500, "grader-sandbox", False)


def test_grade_and_check_take_the_limits_too():
    for command in (["grade", "sub", "--assignment", "ch03"], ["check"]):
        settings = settings_from(build_parser().parse_args(command + ["--module-budget", "12", "--sandbox-user", "x"]))
        assert (settings.module_budget, settings.sandbox_user) == (12.0, "x")
