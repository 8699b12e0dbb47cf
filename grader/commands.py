"""What each subcommand does, on top of the pipeline modules."""

from __future__ import annotations

import sys

from grader.settings import Settings


def grade_command(args, settings: Settings) -> int:
    """``grade``: one submission, a JSON report and a terminal summary."""
    from grader.sandbox.client import Sandbox

    if not args.submission.is_dir():
        print(f"error: {args.submission} is not a folder", file=sys.stderr)
        return 2
    with Sandbox() as sandbox:  # started first: it imports torch while we import the rest
        from grader.grade import AssignmentNotFound, grade
        from grader.reports import terminal, write_json

        try:
            report = grade(args.submission.resolve(), args.assignment, settings, sandbox)
        except AssignmentNotFound as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.json_path:
        write_json(report, args.json_path)
    from grader.reports import classroom

    if classroom.in_actions():  # payloads for the Classroom reporter, the job summary
        classroom.write_actions_files(report)
        with classroom.commands_stopped():  # student text must not become workflow commands
            terminal.show(report, quiet=args.quiet)
        return 0
    terminal.show(report, quiet=args.quiet)
    return 0


def batch_command(args, settings: Settings) -> int:
    """``batch``: every submission folder under ROOT; a CSV of grades and a report each."""
    from grader import batch

    return batch.run(
        args.root.resolve(), args.assignment, settings,
        csv_path=args.csv_path, reports_dir=args.reports_dir, jobs=max(1, args.jobs),
        template=args.template, gradebook=args.gradebook, duedate=args.duedate,
    )


def check_command(args, settings: Settings) -> int:
    """``check``: the public tests, the same table, and a note that hidden tests decide the grade."""
    from grader.check import NOTE, NoAssignment, check, find_assignment
    from grader.sandbox.client import Sandbox

    root = args.submission.resolve()
    if not root.is_dir():
        print(f"error: {args.submission} is not a folder", file=sys.stderr)
        return 2
    try:
        assignment = args.assignment or find_assignment(root)
    except NoAssignment as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with Sandbox() as sandbox:
        from grader.grade import AssignmentNotFound
        from grader.reports import terminal, write_json

        try:
            report = check(root, assignment, settings, sandbox)
        except AssignmentNotFound as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.json_path:
        write_json(report, args.json_path)
    terminal.show(report, note=NOTE, public=True)
    return 0


def release_command(args) -> int:
    """``release``: build the student template; 1 when it would leak, 2 bad arguments, 3 a failed step."""
    try:
        from grader import release
    except ImportError:
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
    return 0
