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
    terminal.show(report, quiet=args.quiet)
    return 0
