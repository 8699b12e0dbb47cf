"""The rubric loader: the order, the reference modules an exercise builds on, and the points
written next to each test."""

import pytest

from grader.rubric import RubricError, load

TESTS = "import pytest\n\n\n@pytest.mark.points({points})\ndef test_a():\n    pass\n\n\ndef helper():\n    pass\n"


def write(tmp_path, text, points=1):
    """A suite with ``text`` as its rubric and one test worth ``points`` per exercise it names."""
    (tmp_path / "rubric.toml").write_text(text)
    for line in text.splitlines():
        if line.startswith("[exercises.") and line.count(".") == 1:
            (tmp_path / f"test_{line[len('[exercises.'):-1]}.py").write_text(TESTS.format(points=points))
    return tmp_path


def test_uses_are_resolved_transitively_in_dependency_order(tmp_path):
    text = '[exercises.base]\n[exercises.middle]\nuses = ["base"]\n[exercises.top]\nuses = ["middle"]\n'
    rubric = load(write(tmp_path, text), "a")
    assert rubric.exercise("top").uses == ("base", "middle")
    assert rubric.exercise("middle").uses == ("base",)
    assert rubric.exercise("base").uses == ()
    assert [e.name for e in rubric.exercises] == ["base", "middle", "top"]


def test_a_module_s_phase_follows_every_module_it_uses_and_private_references_need_none(tmp_path):
    text = ('[exercises.base]\n[exercises.other]\n[exercises.middle]\nuses = ["base"]\n'
            '[exercises.top]\nuses = ["middle"]\n[exercises.beside]\nuses = ["base", "other"]\n')
    rubric = load(write(tmp_path, text), "a")
    assert {e.name: rubric.phase(e.name) for e in rubric.exercises} == {
        "base": 0, "other": 0, "middle": 1, "top": 2, "beside": 1}
    private = load(write(tmp_path, 'references = "private"\n' + text), "a")
    assert {private.phase(e.name) for e in private.exercises} == {0}


def test_circular_or_unknown_uses_are_rejected(tmp_path):
    with pytest.raises(RubricError, match="circular"):
        load(write(tmp_path, '[exercises.a]\nuses = ["b"]\n[exercises.b]\nuses = ["a"]\n'), "x")
    with pytest.raises(RubricError, match="not an exercise"):
        load(write(tmp_path, '[exercises.a]\nuses = ["zzz"]\n'), "x")


def test_points_are_read_from_the_tests_markers(tmp_path):
    rubric = load(write(tmp_path, "[exercises.a]\n[exercises.b]\n", points=2.5), "x")
    assert rubric.exercise("a").points == {"test_a": 2.5}  # helper() is no test
    assert rubric.max_score == 5.0


@pytest.mark.parametrize("points", ["0", "-1", "'2'", "1, 2", "points=1", "", "1, cases=0", "1, cases='3'",
                                    "1, case=3"])
def test_points_must_be_one_positive_number(tmp_path, points):
    with pytest.raises(RubricError, match="points should be one positive number"):
        load(write(tmp_path, "[exercises.a]\n", points=points), "x")


def test_a_suite_without_points_or_with_points_in_the_rubric_is_refused(tmp_path):
    suite = write(tmp_path, "[exercises.a]\n")
    (suite / "test_a.py").write_text("def test_a():\n    pass\n")
    with pytest.raises(RubricError, match="no test carries @pytest.mark.points"):
        load(suite, "x")
    with pytest.raises(RubricError, match="points belong next to each test"):
        load(write(tmp_path, "[exercises.a]\n[exercises.a.points]\ntest_a = 1\n"), "x")


CASES = '''import pytest

B_CASES = [4]

@pytest.mark.points(2)
@pytest.mark.parametrize("x", [1, 2, 3])
@pytest.mark.parametrize("y", argvalues=(pytest.param(0, id="zero"), 1))
def test_a(x, y):
    pass


@pytest.mark.points(1)
@pytest.mark.parametrize("z", B_CASES)
def test_b(z):
    pass
'''


def test_a_parametrized_test_is_worth_its_points_once_per_literal_case(tmp_path):
    suite = write(tmp_path, "[exercises.a]\n")
    (suite / "test_a.py").write_text(CASES)
    exercise = load(suite, "x").exercise("a")
    assert exercise.points == {"test_a": 2.0, "test_b": 1.0}
    assert exercise.cases_of("test_a") == 6 and exercise.cases_of("test_b") == 1  # stacked decorators multiply
    assert exercise.max_score == load(suite, "x").max_score == 13.0
    (suite / "test_a.py").write_text(CASES.replace("B_CASES = [4]", "B_CASES = [4, 5, 6, 7]"))  # named, at module level
    assert load(suite, "x").exercise("a").cases_of("test_b") == 4


@pytest.mark.parametrize("values", ["OTHER", "B_CASES + B_CASES", "[*B_CASES]", "[]", "range(3)"])
def test_cases_the_rubric_cannot_count_are_refused(tmp_path, values):
    suite = write(tmp_path, "[exercises.a]\n")
    (suite / "test_a.py").write_text(CASES.replace("[1, 2, 3]", values))
    with pytest.raises(RubricError, match=r"test_a.py:6: test_a: list its cases literally"):
        load(suite, "x")


def test_cases_made_by_a_function_are_counted_in_the_points_marker(tmp_path):
    suite = write(tmp_path, "[exercises.a]\n")
    made = CASES.replace("@pytest.mark.points(2)", "@pytest.mark.points(2, cases=6)").replace("[1, 2, 3]", "table()")
    (suite / "test_a.py").write_text(made)
    exercise = load(suite, "x").exercise("a")
    assert exercise.cases_of("test_a") == 6 and exercise.max_score == 13.0


@pytest.mark.parametrize("taking", [
    "import shared\n\ntest_a = shared.test_a\ntest_other = shared.test_b\n",
    "import shared as s\n\ntest_a = s.test_a\ntest_other = s.test_b\n",
    "from shared import test_a, test_b as test_other\n",
], ids=["assigned", "aliased", "imported"])
def test_a_test_taken_from_a_shared_module_counts_with_that_modules_points_and_cases(tmp_path, taking):
    suite = write(tmp_path, "[exercises.a]\n[exercises.b]\n")
    (suite / "shared.py").write_text(CASES + "\n\n@pytest.mark.points(5)\ndef test_b():\n    pass\n")  # the last test_b counts
    for stem in ("a", "b"):  # the file's own test_a is replaced by the shared one, as pytest would collect it
        (suite / f"test_{stem}.py").write_text(TESTS.format(points=1) + "\n\n" + taking)
    rubric = load(suite, "x")
    for stem in ("a", "b"):
        assert rubric.exercise(stem).points == {"test_a": 2.0, "test_other": 5.0}
        assert rubric.exercise(stem).cases_of("test_a") == 6 and rubric.exercise(stem).max_score == 17.0


def test_the_last_binding_of_a_test_name_counts_and_data_named_test_is_no_test(tmp_path):
    suite = write(tmp_path, "[exercises.a]\n")
    (suite / "shared.py").write_text(CASES)
    taken_first = "import shared\n\ntest_a = shared.test_a\n\n\n" + TESTS.format(points=1)
    (suite / "test_a.py").write_text(taken_first + "\ntest_inputs = [1, 2]\n")
    assert load(suite, "x").exercise("a").points == {"test_a": 1.0}
    assert load(suite, "x").exercise("a").cases_of("test_a") == 1
    (suite / "test_a.py").write_text(taken_first + "\n\n@pytest.mark.points(3)\ndef test_c():\n    pass\n\n\n"
                                     "def test_a():\n    pass\n")  # redefined without points: no longer counted
    assert load(suite, "x").exercise("a").points == {"test_c": 3.0}


@pytest.mark.parametrize("taken, message", [
    ("import missing\n\ntest_c = missing.test_a", "take shared tests from a module of this folder, not from missing"),
    ("from missing import test_c", "take shared tests from a module of this folder, not from missing"),
    ("import shared\n\ntest_c = shared.test_z", "shared.py defines no test test_z"),
])
def test_a_shared_test_the_rubric_cannot_find_is_refused(tmp_path, taken, message):
    suite = write(tmp_path, "[exercises.a]\n")
    (suite / "shared.py").write_text(CASES)
    (suite / "test_a.py").write_text(TESTS.format(points=1) + f"\n\n{taken}\n")
    with pytest.raises(RubricError, match=rf"test_a.py:\d+: test_c: {message}"):
        load(suite, "x")
