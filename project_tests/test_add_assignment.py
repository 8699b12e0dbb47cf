"""docs/adding-an-assignment.md, followed literally: its files into a copy of the repository,
then its commands, through grade, demo, release, check (in the template) and batch."""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import sys

from grader.release.stubs import make_stub
from project_tests.helpers import ROOT, copy_repository

GUIDE = ROOT / "docs" / "adding-an-assignment.md"
FILE_BLOCK = re.compile(r"^### `([^`]+)`\n\n```\w+\n(.*?)^```$", re.M | re.S)
COMMANDS = re.compile(r"^## 5\. The commands\n\n```sh\n(.*?)^```$", re.M | re.S)


def guide_files() -> dict[str, str]:
    """Every ``### `path``` heading of the guide with the code block under it."""
    return dict(FILE_BLOCK.findall(GUIDE.read_text()))


def guide_commands() -> list[list[str]]:
    """The guide's commands, ``python`` being this interpreter."""
    block = COMMANDS.search(GUIDE.read_text()).group(1)
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert all(c[:3] == ["python", "-m", "grader"] for c in commands)
    return [[sys.executable, *c[1:]] for c in commands]


def test_the_guide_adds_a_toy_assignment_that_every_command_handles(tmp_path):
    files = guide_files()
    assert {"solutions/toy/scaled_scores.py", "tests/toy/rubric.toml", "public_tests/toy/rubric.toml"} <= set(files)
    repo = copy_repository(tmp_path / "repo")
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    solution = files["solutions/toy/scaled_scores.py"]
    klass = tmp_path / "toy-class"  # the batch command's folder: one honest student, one who did nothing
    for who, text in (("alice", solution), ("bob", make_stub(solution))):
        (klass / who / "exercises" / "toy").mkdir(parents=True)
        (klass / who / "exercises" / "toy" / "scaled_scores.py").write_text(text)

    done = {}
    for command in guide_commands():
        proc = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-2000:])
        done[command[3]] = proc

    stub = (repo / "exercises" / "toy" / "scaled_scores.py").read_text()
    assert stub == make_stub(solution) and "NotImplementedError" in stub and "math.sqrt" not in stub
    report = json.loads((repo / "toy-stubs.json").read_text())
    assert (report["score"], report["max_score"]) == (0, 4)  # 2 points, then 1 for each of two cases
    assert report["exercises"][0]["message"] == "not attempted yet"
    assert "toy: 4 / 4 points" in " ".join(done["demo"].stdout.split())

    template = tmp_path / "toy-template"
    assert "no source notebook" in done["release"].stderr
    checked = subprocess.run([sys.executable, "-m", "grader", "check", "--json", "c.json"], cwd=template,
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert json.loads((template / "c.json").read_text())["score"] == 0
    (template / "exercises" / "toy" / "scaled_scores.py").write_text(solution)
    checked = subprocess.run([sys.executable, "-m", "grader", "check", "--json", "c.json"], cwd=template,
                             capture_output=True, text=True, timeout=300)
    public = json.loads((template / "c.json").read_text())
    assert checked.returncode == 0 and public["score"] == public["max_score"] == 1, checked.stderr

    with open(tmp_path / "toy-grades.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert (float(rows["alice"]["score"]), float(rows["bob"]["score"])) == (4.0, 0.0)
