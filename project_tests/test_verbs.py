"""Every verb refuses what it will not do in one shape: one ``error:`` line and its exit code,
decided in ``grader.cli`` alone; an unknown assignment is told the same way by every verb."""

from __future__ import annotations

import pytest

from grader import cli

KNOWN = "(known: ch03, d2l_attention)"


@pytest.mark.parametrize("argv", [
    ["grade", ".", "--assignment", "nope"],
    ["check", ".", "--assignment", "nope"],
    ["batch", ".", "--assignment", "nope", "--csv", "grades.csv"],
    ["demo", "--assignment", "nope"],
    ["stubs", "--assignment", "nope"],
    ["release", "--assignment", "nope", "--out", "template"],
], ids=lambda argv: argv[0])
def test_every_verb_says_the_same_of_an_unknown_assignment(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "student").mkdir()  # batch's root holds one folder
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == f"error: no assignment 'nope' {KNOWN}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["student"]  # nothing was written


def test_a_refusal_deep_in_a_verb_keeps_its_own_exit_code(tmp_path, capsys):
    (tmp_path / "template").mkdir()
    (tmp_path / "template" / "mine.txt").write_text("kept")
    assert cli.main(["release", "--assignment", "ch03", "--out", str(tmp_path / "template")]) == 2
    assert capsys.readouterr().err.startswith("error: ") and (tmp_path / "template" / "mine.txt").exists()
    assert cli.main(["batch", str(tmp_path), "--assignment", "ch03", "--csv", str(tmp_path / "g.csv"),
                     "--deadline", "soon"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --deadline 'soon' is not a date")
