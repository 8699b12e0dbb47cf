"""The rubric loader: points, and the reference modules an exercise builds on."""

import pytest

from grader.rubric import RubricError, load


def write(tmp_path, text):
    (tmp_path / "rubric.toml").write_text(text)
    return tmp_path


POINTS = "[exercises.{0}.points]\ntest_a = 1\n"


def test_uses_are_resolved_transitively_in_dependency_order(tmp_path):
    text = (
        POINTS.format("base")
        + '[exercises.middle]\nuses = ["base"]\n' + POINTS.format("middle")
        + '[exercises.top]\nuses = ["middle"]\n' + POINTS.format("top")
    )
    rubric = load(write(tmp_path, text), "a")
    assert rubric.exercise("top").uses == ("base", "middle")
    assert rubric.exercise("middle").uses == ("base",)
    assert rubric.exercise("base").uses == ()
    assert [e.name for e in rubric.exercises] == ["base", "middle", "top"]


def test_circular_or_unknown_uses_are_rejected(tmp_path):
    circular = '[exercises.a]\nuses = ["b"]\n' + POINTS.format("a") + '[exercises.b]\nuses = ["a"]\n' + POINTS.format("b")
    with pytest.raises(RubricError, match="circular"):
        load(write(tmp_path, circular), "x")
    with pytest.raises(RubricError, match="not an exercise"):
        load(write(tmp_path, '[exercises.a]\nuses = ["zzz"]\n' + POINTS.format("a")), "x")


def test_points_must_be_positive(tmp_path):
    with pytest.raises(RubricError, match="positive points"):
        load(write(tmp_path, "[exercises.a.points]\ntest_a = 0\n"), "x")
