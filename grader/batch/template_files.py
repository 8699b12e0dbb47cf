"""Which files of a submission are the instructor's template, unchanged: flagged when a student
changed a guarded one (``--template``), and known without it (the template this checkout releases)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from grader import manifest
from grader.assignment import Assignment
from grader.settings import Settings
from grader.submission import shown


def guarded(path: str) -> bool:
    """Whether a template file is one a student must not change: a workflow, a file of the
    grader's (``.grader/``) or a public test (in a ``*test*`` folder, or ``test_*.py``)."""
    parts = Path(path).parts
    name = parts[-1]
    return (
        parts[:2] == (".github", "workflows")
        or parts[0] == ".grader"
        or any("test" in part.lower() for part in parts[:-1])
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
    )


def template_flags(root: Path, hashes: dict[str, str]) -> list[str]:
    """Workflow and test files of the template changed or removed in ``root``, and
    workflows added."""
    flags = []
    for path, digest in sorted(hashes.items()):
        if not guarded(path):
            continue
        actual = manifest.file_sha256(root / path)
        if actual is None:
            there = os.path.lexists(root / path)
            flags.append(f"{shown(Path(path))} was {'replaced by something that is not a regular file' if there else 'removed'} "
                         "(template file)")
        elif actual != digest:
            flags.append(f"{shown(Path(path))} was changed from the template")
    workflows = root / ".github" / "workflows"
    if workflows.is_dir() and not workflows.is_symlink():
        for entry in sorted(os.listdir(workflows))[:100]:
            relative = str(Path(".github") / "workflows" / entry)
            if relative not in hashes:
                flags.append(f"{shown(Path(relative))} is a workflow that is not in the template")
    return flags


# -- resuming: which reports of an earlier run still stand -----------------------------------


def checkout_template(settings: Settings, assignment: Assignment) -> dict[str, str]:
    """``{relative path: sha256}`` of the files this checkout's ``release`` ships unchanged: the
    template's own files without placeholders (``pytest.ini``, ...), the public tests and the
    grader package. Students' copies of them are not flagged."""
    root = settings.project_root
    hashes: dict[str, str] = {}
    template = assignment.template
    if template.is_dir():
        for relative, digest in manifest.hash_folder(template).items():
            if "__" not in (template / relative).read_text(errors="replace"):  # a placeholder: rendered by release
                hashes[relative] = digest
    for folder in (assignment.public_suite, root / "grader"):
        if folder.is_dir():
            shipped_as = folder.relative_to(root).as_posix()  # where release puts it in the template
            hashes |= {f"{shipped_as}/{relative}": digest for relative, digest in manifest.hash_folder(folder).items()
                       if "__pycache__" not in relative}
    return hashes


def template_stubs(assignment: Assignment) -> dict[str, str]:
    """``{exercises/<assignment>/<stem>.py: sha256}`` of the stubs ``release`` writes (made from
    the solutions, as it makes them): what a repository's first commit from GitHub Classroom
    holds. ``batch --deadline`` tells with them whether a student is graded at the template."""
    from grader.release.stubs import stub_files

    return {f"exercises/{assignment.name}/{name}": hashlib.sha256(text.encode()).hexdigest()
            for name, text in stub_files(assignment.solutions).items()}
