"""Each verb of the command line in one shape: ``VERBS[name](args, settings) -> exit code``.

A verb checks its arguments, resolves the assignment (:class:`~grader.assignment.Assignment`:
one message for an unknown one), calls its module and says what came of it. What it will not do
as asked it raises as a :class:`~grader.errors.CommandError`, which ``grader.cli`` alone turns
into an exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.assignment import Assignment, AssignmentNotFound
from grader.errors import CommandError
from grader.settings import Settings


def grade(args, settings: Settings) -> int:
    """``grade``: one submission, a JSON report and a terminal summary.

    3 (and no Classroom payloads) when the grader failed on any check: that is not a grade.
    """
    from grader.sandbox.client import Sandbox

    if not args.submission.is_dir():
        raise CommandError(f"{args.submission} is not a folder")
    # Before the sandbox starts: a mistyped name is answered at once, not after importing torch.
    assignment = Assignment.resolve(args.assignment, settings)
    if refused := not_a_submission(args.submission, assignment.name):
        raise CommandError(refused)
    with Sandbox() as sandbox:  # started first: it imports torch while we import the rest
        from grader import environment
        from grader.check import unchanged_template_files
        from grader.grade import grade as grade_one
        from grader.reports import terminal, write_json

        root = args.submission.resolve()
        with environment.verified(sandbox, settings):  # nothing is written unless the environment can grade
            # The template's own files (its pytest.ini, ...) are not the student's doing.
            report = grade_one(root, assignment, settings, sandbox, known=unchanged_template_files(root))
    if args.json_path:
        write_json(report, args.json_path)
    from grader.reports import classroom

    valid = not report.grader_errors
    if classroom.in_actions():  # payloads for the Classroom reporter, the job summary
        classroom.write_actions_files(report, payloads=valid)
        with classroom.commands_stopped():  # student text must not become workflow commands
            terminal.show(report, quiet=args.quiet)
    else:
        terminal.show(report, quiet=args.quiet)
    if not valid:
        raise not_a_grade(report)
    return 0


def not_a_submission(folder, assignment: str) -> str:
    """Why ``grade`` will not grade ``folder`` ("" when it holds ``exercises/<assignment>/``, or is a
    git repository: a student's own, whose missing modules are graded 0 with a message, as every
    missing module is)."""
    from grader.submission import is_submission, shown

    if is_submission(folder, assignment):
        return ""
    message = f"{shown(folder)} has no exercises/{assignment}/ folder: it is not a submission of {assignment}"
    try:
        inside = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))[:10000]
    except OSError:
        inside = []
    students = [p for p in inside if is_submission(p, assignment)]
    if students:
        message += (f". It holds {len(students)} submission folder(s) (such as {shown(Path(students[0].name))}): to grade "
                    f"a class, use: python -m grader batch {shown(folder)} --assignment {assignment} --csv grades.csv")
    return message


NOT_A_GRADE = ("the grader failed on {count} check(s), which is not the student's fault; this is not a grade "
               "and none was posted. Tell the instructor (REPORT.json's grader_errors says what failed).")


def not_a_grade(report) -> CommandError:
    """What to raise when ``report``, written, is no grade (the grader failed on some check): exit 3,
    said first as an ``::error::`` annotation inside Actions."""
    from grader.reports import classroom

    message = NOT_A_GRADE.format(count=len(report.grader_errors))
    if classroom.in_actions():
        print(classroom.error_annotation("Not graded", message), flush=True)
    return CommandError(message, exit_code=3)


def batch(args, settings: Settings) -> int:
    """``batch``: every submission folder under ROOT; a CSV of grades and a report each."""
    from grader.batch import command as batch_command

    return batch_command.run(
        args.root.resolve(), Assignment.resolve(args.assignment, settings), settings,
        csv_path=args.csv_path, reports_dir=args.reports_dir, jobs=max(1, args.jobs),
        template=args.template, gradebook=args.gradebook, duedate=args.duedate, deadline=args.deadline,
        slug=args.slug, accept_weak_isolation=args.accept_weak_isolation,
    )


def check(args, settings: Settings) -> int:
    """``check``: the public tests, the same table, and a note that hidden tests decide the grade."""
    from grader.check import NOTE, check as check_one, find_assignment
    from grader.sandbox.local import runner_for_this_machine

    root, modules = module_argument(args.submission, list(args.modules))
    if not root.is_dir():
        raise CommandError(f"{args.submission} is not a folder, a module of exercises/<assignment>/ or a module's name")
    # A mistyped name is answered at once, not after importing torch.
    assignment = Assignment.public(args.assignment or find_assignment(root), settings)
    modules = [m.removesuffix(".py") for m in modules]
    known = [e.name for e in assignment.rubric.exercises]
    if unknown := [m for m in modules if m not in known]:
        raise CommandError(f"no module {', '.join(unknown)} in {assignment.name} (its modules: {', '.join(known)})")
    # Started before this process imports torch (nothing above does): the two imports overlap.
    runner = runner_for_this_machine(settings.workers)  # on macOS and Windows: spawned interpreters, nothing confined
    try:
        from grader import environment
        from grader.reports import terminal, write_json

        with environment.verified(runner, settings):
            report = check_one(root, assignment, settings, runner)
    finally:
        runner.close()
    if args.json_path:
        write_json(report, args.json_path)
    terminal.show(report, note=NOTE, public=True, only=list(dict.fromkeys(modules)) or None)
    if report.grader_errors:
        raise not_a_grade(report)
    return 0


def module_argument(given, modules: list[str]):
    """``check``'s positional: the submission folder, or one module (``causal``, ``causal.py`` or
    ``exercises/<a>/causal.py``), checked in the folder it belongs to; returns (folder, modules)."""
    if given.is_dir():
        return given.resolve(), modules
    if given.suffix == ".py" and given.parent.parent.name == "exercises":  # exercises/<assignment>/<module>.py
        return given.resolve().parent.parent.parent, modules + [given.stem]
    if len(given.parts) == 1 and not given.exists():  # a module's name, in the current folder
        return Path(".").resolve(), modules + [given.name]
    return given.resolve(), modules


def release(args, settings: Settings) -> int:
    """``release``: build the student template; ReleaseError (exit 1 when it would leak, 2 bad
    arguments, 3 a failed step) when it cannot."""
    try:
        from grader.release import command as release_command
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "grader":
            raise  # a missing package: grader.cli says what to install
        raise CommandError("release is an instructor command; run it in the instructor's repository") from None
    built = release_command.build(args.assignment, args.out, force=args.force)
    for warning in built.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"released {built.assignment} into {built.out}: notebooks {', '.join(built.notebooks)}; "
          f"Classroom runners {','.join(built.runners)}")
    print(NEXT_STEPS.format(out=built.out, assignment=built.assignment))
    return 0


NEXT_STEPS = """Next steps (docs/classroom.md):
  1. create a repository in the course organisation and push {out} to it
     (cd {out} && git init -b main && git add -A && git commit -m template && git push ...);
  2. mark it a template repository (Settings > Template repository) and make it the
     assignment's starter code in GitHub Classroom (without Classroom's own tests);
  3. in the organisation, set the secret GRADER_TOKEN (a read-only token for this repository),
     the variable GRADER_REPO (owner/name of this repository) and, optionally, GRADER_REF;
  4. after the deadline: gh classroom clone student-repos, then, as root (README, step 6):
     sudo .venv/bin/python -m grader batch <classroom-assignment>-submissions --assignment {assignment} \
         --csv grades/{assignment}.csv --deadline 2026-03-01T23:59:00+01:00 --template {out}"""


def stubs(args, settings: Settings) -> int:
    """``stubs``: regenerate the student stubs of an assignment from its solutions (2 when there are none)."""
    from grader.release.markers import MarkerError
    from grader.release.stubs import write_stubs

    root = settings.project_root
    solutions = Assignment.at(args.assignment, root).solutions
    if not solutions.is_dir():
        raise AssignmentNotFound(args.assignment, [p.name for p in (root / "solutions").iterdir() if p.is_dir()])
    if not any(solutions.glob("*.py")):
        raise CommandError(f"no solutions/{args.assignment}/*.py")
    try:
        written = write_stubs(solutions, root / "exercises" / args.assignment)
    except MarkerError as exc:
        raise CommandError(str(exc)) from None
    print(f"wrote {len(written)} stubs into exercises/{args.assignment}/: {', '.join(p.name for p in written)}")
    return 0


def demo(args, settings: Settings) -> int:
    """``demo``: grade the reference solutions and the bundled sample submission."""
    from grader import demo as demo_run

    return demo_run.run(Assignment.resolve(args.assignment, settings), settings)


# Every verb of ``python -m grader``, by name.
VERBS = {"grade": grade, "check": check, "batch": batch, "demo": demo, "stubs": stubs, "release": release}
