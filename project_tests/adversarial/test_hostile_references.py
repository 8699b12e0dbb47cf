"""Unpublished references stay unseen: a module graded on top of another (``attend`` uses ``scores``)
looks for the reference's code everywhere it can (module sources and files, ``vars``, docstrings,
code objects' constants, disassembly, every function the collector holds, the solutions' paths on
disk) and shows what it finds through its printed output and its exception messages.

With ``references = "private"`` (``project_tests/private_assignment.py``) the secret marker the
references hold reaches nothing grading writes: REPORT.json, the terminal, the job summary and the
Classroom payloads. With ``references = "published"`` (the books' assignments) the same module
does show it: the attack works, and only the declaration stops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from project_tests import private_assignment as vault
from project_tests.adversarial.grader_runs import require_isolation

HOSTILE_ATTEND = '''import dis, gc, inspect, io, os, sys, types

import torch

from scores import scaled_scores

KEY = "".join(["SECR", "ET-"])  # what a secret marker starts with (this file holds no marker)


def loot():
    found = []

    def keep(text):
        text = str(text)
        at = text.find(KEY)
        while at >= 0 and len(found) < 12:
            found.append(text[max(0, at - 6):at + 30])
            at = text.find(KEY, at + 1)

    def each(getter):
        try:
            keep(getter())
        except BaseException:
            pass

    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None) or ""
        if module is None or name == __name__ or "site-packages" in where or "/lib/python3" in where:
            continue
        each(lambda: inspect.getsource(module))
        each(lambda: open(where).read())
        each(lambda: repr(vars(module)))
        for value in list(vars(module).values()):
            try:
                code = getattr(value, "__code__", None)
            except BaseException:
                continue
            if code is not None:
                each(lambda: repr(code.co_consts) + str(value.__doc__))
                each(lambda: (lambda out: (dis.dis(value, file=out), out.getvalue())[1])(io.StringIO()))
    for thing in gc.get_objects():
        if isinstance(thing, types.FunctionType) and thing.__module__ != __name__:
            each(lambda: repr(thing.__code__.co_consts) + str(thing.__doc__))
    for path in ("@REPO@/solutions/vault/scores.py", "@REPO@/solutions/vault/attend.py"):
        each(lambda: open(path).read())
    return "loot: " + (" | ".join(dict.fromkeys(found)) or "nothing found")


print(loot())


def attend(queries, keys, values):
    raise RuntimeError(loot())


def average(values):
    return values.mean(dim=-2)
'''


def grade_in_actions(repo, root, folder):
    """``grade`` as the Classroom job runs it: the report, the terminal, the job summary, the payloads."""
    folder.mkdir()
    files = {name: folder / name for name in ("summary", "output", "env", "path")}
    for path in files.values():
        path.write_text("")
    env = {**os.environ, "PYTHONPATH": "", "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(files["summary"]),
           "GITHUB_OUTPUT": str(files["output"]), "GITHUB_ENV": str(files["env"]), "GITHUB_PATH": str(files["path"])}
    report = folder / "REPORT.json"
    proc = subprocess.run([sys.executable, "-m", "grader", "grade", str(root), "--assignment", vault.NAME,
                           "--json", str(report), "--probe-timeout", "20"],
                          cwd=repo, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = {"REPORT.json": report.read_text(), "terminal": proc.stdout + proc.stderr,
             **{name: path.read_text() for name, path in files.items()}}
    return json.loads(shown["REPORT.json"]), shown


@pytest.mark.parametrize("references", ["private", "published"])
def test_a_module_built_on_a_private_reference_cannot_show_it(tmp_path, references):
    require_isolation()  # hostile code runs as this user otherwise (and could read solutions/ itself)
    mark = vault.new_mark()
    repo = vault.build(tmp_path / "repo", mark, references=references)
    root = vault.submission(tmp_path / "student", scores=vault.HONEST_SCORES,
                            attend=HOSTILE_ATTEND.replace("@REPO@", str(repo)))
    report, shown = grade_in_actions(repo, root, tmp_path / "out")

    attend = next(e for e in report["exercises"] if e["name"] == "attend")
    assert "loot: " in attend["output"]  # the hostile module ran, printed, and raised what it found
    assert any("loot: " in t["message"] for t in attend["tests"])
    assert "loot: " in shown["summary"]
    leaked = [where for where, text in shown.items() if mark in text]
    if references == "private":
        assert leaked == [], f"the private reference's marker reached {leaked}"
        assert "nothing found" in attend["output"]
    else:  # the control: loaded beside the student's code, the reference is theirs to print
        assert "REPORT.json" in leaked and "summary" in leaked, shown["REPORT.json"][:3000]
