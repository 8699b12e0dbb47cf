"""What each subcommand does, on top of the pipeline modules."""

from __future__ import annotations

import sys

from grader.settings import Settings


def grade_command(args, settings: Settings) -> int:
    """``grade``: one submission, a JSON report and a terminal summary.

    3 (and no Classroom payloads) when the grader failed on any check: that is not a grade.
    """
    from grader.assignment import Assignment, AssignmentNotFound
    from grader.sandbox.client import Sandbox

    if not args.submission.is_dir():
        print(f"error: {args.submission} is not a folder", file=sys.stderr)
        return 2
    try:  # before the sandbox starts: a mistyped name is answered at once, not after importing torch
        assignment = Assignment.resolve(args.assignment, settings)
    except AssignmentNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if refused := not_a_submission(args.submission, assignment.name):
        print(f"error: {refused}", file=sys.stderr)
        return 2
    with Sandbox() as sandbox:  # started first: it imports torch while we import the rest
        from grader import environment
        from grader.check import unchanged_template_files
        from grader.grade import grade
        from grader.reports import terminal, write_json

        root = args.submission.resolve()
        with environment.verified(sandbox, settings):  # nothing is written unless the environment can grade
            # The template's own files (its pytest.ini, ...) are not the student's doing.
            report = grade(root, assignment, settings, sandbox, known=unchanged_template_files(root))
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
        return not_a_grade(report)
    return 0


def not_a_submission(folder, assignment: str) -> str:
    """Why ``grade`` will not grade ``folder`` ("" when it holds ``exercises/<assignment>/``, or is a
    git repository: a student's own, whose missing modules are graded 0 with a message, as every
    missing module is)."""
    from pathlib import Path

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


def not_a_grade(report) -> int:
    """Say that ``report`` is not a grade (on stderr, and as an ``::error::`` in Actions); return 3."""
    from grader.reports import classroom

    message = NOT_A_GRADE.format(count=len(report.grader_errors))
    if classroom.in_actions():
        print(classroom.error_annotation("Not graded", message), flush=True)
    print(f"error: {message}", file=sys.stderr)
    return 3


def batch_command(args, settings: Settings) -> int:
    """``batch``: every submission folder under ROOT; a CSV of grades and a report each."""
    from grader.batch import command as batch

    return batch.run(
        args.root.resolve(), args.assignment, settings,
        csv_path=args.csv_path, reports_dir=args.reports_dir, jobs=max(1, args.jobs),
        template=args.template, gradebook=args.gradebook, duedate=args.duedate, deadline=args.deadline,
        slug=args.slug, accept_weak_isolation=args.accept_weak_isolation,
    )


def check_command(args, settings: Settings) -> int:
    """``check``: the public tests, the same table, and a note that hidden tests decide the grade."""
    from grader.check import NOTE, NoAssignment, check, existing_public_suite, find_assignment
    from grader.assignment import AssignmentNotFound
    from grader.sandbox.local import runner_for_this_machine

    root, modules = module_argument(args.submission, list(args.modules))
    if not root.is_dir():
        print(f"error: {args.submission} is not a folder, a module of exercises/<assignment>/ or a module's name",
              file=sys.stderr)
        return 2
    try:
        assignment = args.assignment or find_assignment(root)
        suite = existing_public_suite(settings, assignment)  # a mistyped name is answered at once, not after importing torch
    except (NoAssignment, AssignmentNotFound) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if modules:
        from grader import rubric as rubrics

        known = [e.name for e in rubrics.load(suite, assignment).exercises]
        modules = [m.removesuffix(".py") for m in modules]
        if unknown := [m for m in modules if m not in known]:
            print(f"error: no module {', '.join(unknown)} in {assignment} (its modules: {', '.join(known)})", file=sys.stderr)
            return 2
    # Started before this process imports torch (nothing above does): the two imports overlap.
    runner = runner_for_this_machine(settings.workers)  # on macOS and Windows: spawned interpreters, nothing confined
    try:
        from grader import environment
        from grader.reports import terminal, write_json

        with environment.verified(runner, settings):
            report = check(root, assignment, settings, runner)
    finally:
        runner.close()
    if args.json_path:
        write_json(report, args.json_path)
    terminal.show(report, note=NOTE, public=True, only=list(dict.fromkeys(modules)) or None)
    return not_a_grade(report) if report.grader_errors else 0


def module_argument(given, modules: list[str]):
    """``check``'s positional: the submission folder, or one module (``causal``, ``causal.py`` or
    ``exercises/<a>/causal.py``), checked in the folder it belongs to; returns (folder, modules)."""
    from pathlib import Path

    if given.is_dir():
        return given.resolve(), modules
    if given.suffix == ".py" and given.parent.parent.name == "exercises":  # exercises/<assignment>/<module>.py
        return given.resolve().parent.parent.parent, modules + [given.stem]
    if len(given.parts) == 1 and not given.exists():  # a module's name, in the current folder
        return Path(".").resolve(), modules + [given.name]
    return given.resolve(), modules


def release_command(args) -> int:
    """``release``: build the student template; 1 when it would leak, 2 bad arguments, 3 a failed step."""
    try:
        from grader.release import command as release
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "grader":
            raise  # a missing package: grader.cli says what to install
        print("error: release is an instructor command; run it in the instructor's repository", file=sys.stderr)
        return 2
    try:
        built = release.build(args.assignment, args.out, force=args.force)
    except release.ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
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


def stubs_command(args) -> int:
    """``stubs``: regenerate the student stubs of an assignment from its solutions (2 when there are none)."""
    from grader.assignment import Assignment
    from grader.release.markers import MarkerError
    from grader.settings import PROJECT_ROOT
    from grader.release.stubs import write_stubs

    solutions = Assignment.at(args.assignment, PROJECT_ROOT).solutions
    if not any(solutions.glob("*.py")):
        print(f"error: no solutions/{args.assignment}/*.py", file=sys.stderr)
        return 2
    try:
        written = write_stubs(solutions, PROJECT_ROOT / "exercises" / args.assignment)
    except MarkerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(written)} stubs into exercises/{args.assignment}/: {', '.join(p.name for p in written)}")
    return 0
