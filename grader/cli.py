"""The command line: parse arguments, call the verb (:mod:`grader.verbs`), map errors to exit codes.

Exit codes (mapped here alone): 0 whenever a report was produced (whatever the score), 2 for bad arguments, an
unknown assignment or nothing to grade, 3 when the grader itself failed: a broken environment
(one line says what to install), or a report in which the grader failed on some check (then it
is not a grade, and inside GitHub Actions nothing is posted to Classroom).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

from grader.errors import CommandError
from grader.settings import Settings


def build_parser() -> argparse.ArgumentParser:
    """The parser for every subcommand."""
    parser = argparse.ArgumentParser(prog="python -m grader", description="Grade attention exercises.")
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (add_grade, add_batch, add_demo, add_check, add_stubs, add_release):
        add(commands)
    return parser


def add_grade(commands) -> None:
    """``grade SUBMISSION --assignment A``."""
    grade = commands.add_parser("grade", help="grade one submission with the hidden tests")
    grade.add_argument("submission", type=Path, help="a folder holding exercises/<assignment>/*.py")
    grade.add_argument("--assignment", required=True, help="for example ch03")
    grade.add_argument("--json", type=Path, dest="json_path", help="write the report here")
    grade.add_argument("--suite", type=Path, help="grading suite folder (default: tests/<assignment>)")
    grade.add_argument("--quiet", action="store_true", help="print only the total")
    add_limits(grade)


def add_batch(commands) -> None:
    """``batch ROOT --assignment A --csv GRADES``."""
    batch = commands.add_parser("batch", help="grade every submission folder under ROOT (one per student)")
    batch.add_argument("root", type=Path, help="a folder of submission folders, one per student (named by the student "
                       "id, or GitHub Classroom's <assignment>-<login>)")
    batch.add_argument("--assignment", required=True, help="for example ch03")
    batch.add_argument("--csv", type=Path, required=True, dest="csv_path", help="write the grades here")
    batch.add_argument("--reports", type=Path, dest="reports_dir",
                       help="folder for each student's REPORT.json (default: <csv folder>/<assignment>-reports)")
    batch.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                       help="grading processes at once (the sandbox runs one student's code at a time, this many modules of it)")
    batch.add_argument("--template", type=Path, help="the released template: flag changed workflows and tests")
    batch.add_argument("--gradebook", type=Path, help="an nbgrader course folder: put the scores in its gradebook.db")
    batch.add_argument("--duedate", default="", help="written to the CSV's duedate column and the gradebook "
                       "(default: the --deadline)")
    batch.add_argument("--classroom-slug", default="", dest="slug",
                       help="the part of GitHub Classroom's <slug>-<login> folder names before the login (default: "
                       "what the folders' names share)")
    batch.add_argument("--accept-weak-isolation", action="store_true",
                       help="grade even where student code cannot run fully isolated (not as root, and no user "
                       "namespaces): it can then read what your user can, tests and solutions included")
    batch.add_argument("--deadline", default="", help="grade each git repository at its last commit at or before this "
                       "time (committer date; ISO 8601 with its time zone, e.g. 2026-03-01T23:59:00+01:00)")
    batch.add_argument("--suite", type=Path, help="grading suite folder (default: tests/<assignment>)")
    batch.add_argument("--no-reuse", action="store_false", dest="reuse_passes",
                       help="run every check for every student, even on a value it already passed on in this batch")
    add_limits(batch)
    # --jobs grading processes at once; the sandbox runs one submission's workers at a time, --jobs modules of it at once
    batch.set_defaults(workers=1)


def add_demo(commands) -> None:
    """``demo [--assignment A]``."""
    demo = commands.add_parser("demo", help="grade the reference solutions and a bundled sample submission")
    demo.add_argument("--assignment", default="ch03", help="for example ch03 (default) or d2l_attention")
    add_limits(demo)


def add_check(commands) -> None:
    """``check [SUBMISSION | MODULE]``."""
    check = commands.add_parser("check", help="run the public tests on your work (hidden tests run on GitHub)")
    check.add_argument("submission", type=Path, nargs="?", default=Path("."),
                       help="your repository (default: here), or one module to check: causal, or exercises/ch03/causal.py")
    check.add_argument("--assignment", help="default: the one folder under exercises/")
    check.add_argument("--module", action="append", dest="modules", default=[], metavar="MODULE",
                       help="show only this module (for example causal); may be given more than once")
    check.add_argument("--json", type=Path, dest="json_path", help="write the report here")
    add_limits(check)


def add_stubs(commands) -> None:
    """``stubs --assignment A``."""
    stubs = commands.add_parser("stubs", help="write exercises/<assignment>/ from solutions/<assignment>/")
    stubs.add_argument("--assignment", required=True, help="for example ch03")


def add_release(commands) -> None:
    """``release --assignment A --out DIR``."""
    release = commands.add_parser("release", help="build the student template repository of an assignment")
    release.add_argument("--assignment", required=True, help="for example ch03")
    release.add_argument("--out", type=Path, required=True, help="the template's folder (empty, or use --force)")
    release.add_argument("--force", action="store_true", help="replace the folder's contents (its .git is kept)")


def add_limits(parser: argparse.ArgumentParser) -> None:
    """Flags that map onto :class:`Settings` limits."""
    defaults = Settings()
    group = parser.add_argument_group("limits for student code")
    group.add_argument("--probe-timeout", type=float, default=defaults.probe_timeout, help="seconds per check")
    group.add_argument("--memory-mb", type=int, default=defaults.memory_mb, help="address space per process")
    group.add_argument("--workers", type=int, default=defaults.workers, help="modules graded at once")
    group.add_argument("--module-budget", type=float, default=defaults.module_budget,
                       help="seconds all checks of one module may take together")
    group.add_argument("--cpu-seconds", type=int, default=defaults.cpu_seconds, help="CPU seconds per process")
    group.add_argument("--file-mb", type=int, default=defaults.file_mb, help="largest file a process may write")
    group.add_argument("--output-chars", type=int, default=defaults.output_chars,
                       help="characters of a module's printed output kept in the report")
    group.add_argument("--sandbox-user", default=defaults.sandbox_user,
                       help="unprivileged user that runs student code when the grader runs as root")


LIMITS = ("probe_timeout", "memory_mb", "workers", "module_budget", "cpu_seconds", "file_mb", "output_chars", "sandbox_user")


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings the parsed flags ask for (the defaults for a verb without them: stubs, release)."""
    return Settings(
        suite_dir=args.suite.resolve() if getattr(args, "suite", None) else None,
        reuse_passes=getattr(args, "reuse_passes", True),
        **{name: getattr(args, name) for name in LIMITS if hasattr(args, name)},
    )


# Commands that need the instructor repository (solutions, hidden suites, release tools).
INSTRUCTOR_COMMANDS = {"release", "batch", "demo", "stubs"}


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the process exit code (3, with the traceback, when the grader fails)."""
    args = build_parser().parse_args(argv)
    from grader.environment import BrokenEnvironment

    interrupted = []

    def on_interrupt(signum, frame):  # noted, so that a failure it causes (an import cut short) is not misread
        interrupted.append(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_interrupt)
    try:
        return run(args)
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return stopped(args.command)
    except BrokenEnvironment as exc:
        return stopped(args.command) if interrupted else broken_environment(str(exc))
    except ImportError as exc:
        if interrupted:
            return stopped(args.command)
        if not exc.name or exc.name.split(".")[0] == "grader":
            raise
        return missing_package(args.command, exc.name.split(".")[0])
    except Exception:  # a bug of the grader's, never the student's: their code runs in the sandbox
        traceback.print_exc()
        print(f"error: the grader itself failed while running '{args.command}' (see the traceback above)", file=sys.stderr)
        return 3


def stopped(command: str) -> int:
    """Ctrl-C: one line (what is kept, and how to go on); 130, as a shell says for SIGINT."""
    again = ("; run the same command again to grade the rest (what was graded is kept and reused)"
             if command == "batch" else "")
    print(f"\ninterrupted: {command} stopped{again}", file=sys.stderr)
    return 130


def broken_environment(message: str) -> int:
    """This environment cannot grade: one line (and an ``::error::`` in Actions, with no payloads); 3."""
    from grader.reports.classroom import error_annotation, in_actions

    if in_actions():
        print(error_annotation("The grading environment is broken", message), flush=True)
    print(f"error: the grading environment is broken: {message}", file=sys.stderr)
    return 3


def missing_package(command: str, package: str) -> int:
    """A package this command imports is not installed: one line saying what to install; 3."""
    from grader.environment import CPU_INDEX, install_command

    root = Settings().project_root
    venv = root / ".venv" / "bin" / "python"
    if venv.exists() and Path(sys.prefix).resolve() != venv.parent.parent.resolve():
        hint = f"run it with the project's environment: {venv.relative_to(root)} -m grader {command} ..."
    elif command in INSTRUCTOR_COMMANDS:
        hint = f"install the instructor's list: make demo (it sets up .venv), or python -m pip install -r requirements.txt --extra-index-url {CPU_INDEX}"
    else:
        hint = f"install what grading needs: {install_command()}"
    print(f"error: '{command}' needs the package {package}, which is not installed here; {hint}", file=sys.stderr)
    return 3


def run(args: argparse.Namespace) -> int:
    """Dispatch the parsed command to its verb (:data:`grader.verbs.VERBS`)."""
    if args.command in INSTRUCTOR_COMMANDS and not (Settings().project_root / "solutions").is_dir():
        raise CommandError(f"'{args.command}' is an instructor command; this copy of the grader (a student "
                           "template) has no solutions. Use 'python -m grader check'.")
    from grader.verbs import VERBS

    return VERBS[args.command](args, settings_from(args))
