"""One settings object for a grading run; each command-line flag of a limit maps onto a field."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from grader.sandbox.protocol import Limits

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Settings:
    """Limits and locations shared by every step of grading.

    The defaults suit a laptop or a GitHub-hosted runner. Every field but ``project_root`` (the
    checkout this grader belongs to) has a flag of the same name in ``grader.cli``: ``--suite``
    for ``suite_dir``, ``--no-reuse`` for ``reuse_passes`` (``batch`` only), ``--probe-timeout``,
    ``--module-budget``, ``--memory-mb``, ``--cpu-seconds``, ``--file-mb``, ``--workers``,
    ``--output-chars`` and ``--sandbox-user`` for the rest (``project_tests/test_cli_settings.py``).
    """

    # Where the instructor's material lives: solutions/<assignment>/, tests/<assignment>/.
    project_root: Path = PROJECT_ROOT
    # A grading suite other than tests/<assignment>/ (the public suite, a fetched hidden suite).
    suite_dir: Path | None = None
    # Seconds one probe (one call into student code, made for one test) may run.
    probe_timeout: float = 5.0
    # Seconds all probes of one module may take together; later probes are reported as timeouts.
    module_budget: float = 30.0
    # Address space of a sandboxed process, in MiB (torch alone maps about 1.5 GiB).
    memory_mb: int = 4096
    # CPU seconds a sandboxed process may use before the kernel stops it.
    cpu_seconds: int = 60
    # Largest file a sandboxed process may write, in MiB (its captured output included).
    file_mb: int = 8
    # Sandboxed processes running student code at the same time (one per module).
    workers: int = 2
    # Characters of a module's captured stdout/stderr kept in the report.
    output_chars: int = 2000
    # Drop to this unprivileged user for student code when the grader runs as root.
    sandbox_user: str = "nobody"
    # batch: a check whose probe gave a value it already passed on for an earlier student passes
    # again without running (grader.batch.passes); off, every check runs for every student.
    reuse_passes: bool = True

    def sandbox_limits(self) -> Limits:
        """The limits every sandbox plan carries (read by ``grader.sandbox``)."""
        return Limits(**{field.name: getattr(self, field.name) for field in dataclasses.fields(Limits)})
