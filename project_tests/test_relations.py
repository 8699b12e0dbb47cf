"""What the diagnosis says is different at the first differing step, and where the student's
line is: relations stated only when they hold exactly, steps that carry their line, and the
first step whose shape the reference's steps of that kind never have."""

from __future__ import annotations

import torch

from grader.diagnosis.localize import first_difference, shape_departure
from grader.diagnosis.origin import value_origin
from grader.diagnosis.relations import relation
from grader.diagnosis.sent import AssignedNumber, numbers_with_lines, steps_of
from grader.diagnosis.stages import Localization
from grader.sandbox import failure_shapes, probing, protocol, trace
from grader.sandbox.protocol import ShapeStep, Step, parse_shapes

torch.manual_seed(0)
SCORES = torch.rand(2, 5, 5)
FUTURE = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
MASKED = SCORES.masked_fill(FUTURE, -torch.inf)
WEIGHTS = torch.softmax(MASKED, dim=-1)


def said(expected, yours, **around) -> str:
    return relation(Localization("step", expected, None, **around), yours)


def test_a_constant_factor_is_named_with_its_number():
    assert "times 0.7071 (= 1/√2)" in said(SCORES, SCORES / 2 ** 0.5)
    assert "times 2: a constant factor" in said(SCORES, SCORES * 2)


def test_transposed_permuted_and_masked_values():
    assert "transposed" in said(SCORES, SCORES.transpose(-2, -1))
    assert "rows in another order" in said(SCORES, SCORES[:, [1, 0, 2, 3, 4]])
    assert "hold 0 there" in said(MASKED, SCORES.masked_fill(FUTURE, 0.0))


def test_dimensions_in_another_order_are_named_with_the_permute_that_undoes_it():
    expected = torch.rand(2, 5, 7)  # (batch, time, vocabulary)
    assert said(expected, expected.permute(1, 0, 2)) == (
        "yours holds the expected values with its dimensions in another order: yours.permute(1, 0, 2) is the expected")
    assert said(expected, expected.reshape(5, 2, 7)) == ""  # the same size, the values laid out otherwise


def test_missing_repeated_and_other_axis():
    assert "this step is missing" in said(WEIGHTS, MASKED, before=MASKED)
    assert "softmax is applied twice" in said(WEIGHTS, torch.softmax(WEIGHTS, dim=-1))
    assert "dimension 1 instead of the last" in said(WEIGHTS, torch.softmax(MASKED, dim=1), softmax_input=MASKED)


def test_nothing_is_said_when_no_relation_holds_exactly():
    almost = SCORES * 2
    almost[0, 0, 0] += 0.01  # a factor on every entry but one is no factor
    assert said(SCORES, almost) == ""
    assert said(SCORES, torch.rand(2, 5, 5)) == ""
    assert said(SCORES, SCORES.clone()) == ""


def test_steps_note_the_line_of_the_student_file_that_computed_them(tmp_path):
    student = tmp_path / "mine.py"
    student.write_text("import torch\n\ndef f(x):\n    y = x * 2\n    return torch.softmax(y, dim=-1)\n")
    namespace: dict = {}
    exec(compile(student.read_text(), str(student), "exec"), namespace)  # noqa: S102 - the test's own file
    x = torch.rand(3, 3)
    with trace.student_files(str(tmp_path)), trace.recording() as recorder:
        namespace["f"](x)
    assert recorder.steps[0][2] == ["mine.py", 4, 0]  # x * 2
    assert recorder.steps[-1][0] == "softmax" and recorder.steps[-1][2] == ["mine.py", 5, 0]
    with trace.recording() as recorder:  # outside student_files: no line
        namespace["f"](x)
    assert all(step[2] == ["", 0, 0] for step in recorder.steps)


def test_the_steps_and_numbers_sent_are_read_by_name_each_checked():
    sent = protocol.traced(torch.ones(2), [["softmax", torch.ones(2), ["mine.py", 5, 0], [0, "W_query"]],
                                           ["view", torch.zeros(3), ["mine.py", -1], ["not a name", 7]],
                                           ["matmul", [1, 2], ["mine.py", 6, 0], []], ["too", "many", "fields", [], []]],
                           [["d", 4, ["mine.py", 3, 0]], ["not a name", 1.0, ["mine.py", 4, 0]]])
    steps = steps_of(sent)
    assert all(type(step) is Step for step in steps) and [step.label for step in steps] == ["softmax", "view"]
    assert steps[0].where == ["mine.py", 5, 0] and steps[0].parents == [0, "W_query"]
    assert steps[1].where == ["", 0, 0] and steps[1].parents == [7]  # a line that is none, a parent that is no name
    assert numbers_with_lines(sent) == [AssignedNumber("d", 4.0, ["mine.py", 3, 0])]



def test_a_step_whose_label_is_no_string_counts_as_absent():
    """What the sandbox sends is hostile: a label the recorder never makes (a list, a number, None) is
    no step, so that the diagnosis, which reads labels as strings (``label.split``, a set of kinds),
    never fails on it (it would be the instructor's "diagnosis failed", not the student's advice)."""
    x = torch.rand(2, 3)
    sent = protocol.traced(x, [[["softmax"], x * 2, ["mine.py", 3, 0], []], [5, x * 3, ["mine.py", 4, 0], [0]],
                               [None, x * 4, ["mine.py", 5, 0], []], ["mul", x * 5, ["mine.py", 6, 0], []]])
    steps = steps_of(sent)
    assert [step.label for step in steps] == ["mul"]
    reference = [Step("softmax input", x, ["", 0, 0], []), Step("softmax", x.softmax(-1), ["", 0, 0], [0])]
    first_difference(reference, x.softmax(-1), steps, x)  # raises nothing
    value_origin(steps, 0, reference)

def test_an_error_carries_the_shapes_and_lines_of_its_steps(tmp_path):
    student = tmp_path / "mine.py"
    student.write_text("import torch\n\ndef f(x):\n    y = x.squeeze()\n    return y @ torch.ones(5, 2)\n")
    namespace: dict = {}
    exec(compile(student.read_text(), str(student), "exec"), namespace)  # noqa: S102 - the test's own file
    x = torch.rand(1, 3, 4)
    try:
        with probing.sending_steps(True), trace.student_files(str(tmp_path)), probing.recorded():
            namespace["f"](x)
    except RuntimeError as exc:
        steps, _ = parse_shapes(failure_shapes.shapes_of_failure(exc))
        shapes = [steps[i] for i in sorted(steps)]
    assert shapes[0] == ShapeStep("squeeze", [3, 4], ["mine.py", 4, 0], [])
    reference = [Step("squeeze", torch.zeros(1, 3, 4), ["", 0, 0], []), Step("matmul", torch.zeros(1, 3, 2), ["", 0, 0], [])]
    assert shape_departure(reference, shapes) == 0
    assert shape_departure(reference, [ShapeStep("view", [7], ["mine.py", 2, 0], [])]) is None  # a kind the reference never takes


def _causal_steps(change=None):
    """Steps and output of the reference CausalAttention (optionally with one text change): it
    computes the keys before the queries, as the book does."""
    from grader.diagnosis.live_reference import load_source
    from grader.sandbox.trace import traced
    from project_tests.helpers import ROOT, solution_sources

    source = solution_sources("ch03")["causal"]
    if change:
        assert change[0] in source
        source = source.replace(*change)
    module = load_source("causal", source, ROOT / "solutions" / "ch03" / "causal.py")
    torch.manual_seed(3)
    attention = module.CausalAttention(3, 4, 6, 0.0).eval()
    result = traced(attention, torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(1)), module=attention)
    return steps_of(result), result["$traced"]


def test_yours_is_the_students_step_of_the_same_layer_even_when_made_before():
    reference = _causal_steps()
    student = _causal_steps(("self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)",
                             "self.W_key = nn.Linear(d_in, d_out, bias=True)"))
    found = first_difference(*reference, *student)
    assert found.stage.startswith("keys") and found.step is not None
    assert student[0][found.step].label == "W_key"  # not the values, made after the queries that match


def test_another_layers_step_is_not_yours_nor_a_step_applied_twice():
    reference = _causal_steps()
    student = _causal_steps(("queries = self.W_query(x)", "queries = self.W_key(x)"))
    found = first_difference(*reference, *student)
    assert found.stage.startswith("queries")
    assert found.step is None or student[0][found.step].label == "W_query"  # never the keys' line
    if found.actual is not None:
        assert "twice" not in relation(found, found.actual) and "missing" not in relation(found, found.actual)


def test_a_line_is_shown_only_in_the_diagnosed_modules_own_file(tmp_path):
    from grader.diagnosis.student_lines import line_at

    (tmp_path / "scoring.py").write_text("import torch\nscores = q @ k\n")
    (tmp_path / "masked_softmax.py").write_text("import torch\nreturn softmax(x)\n")
    assert line_at(["scoring.py", 2], tmp_path, "scoring") == ("scoring.py, line 2", "scores = q @ k")
    # A step the diagnosed module made through the student's own helper module is not its line.
    assert line_at(["masked_softmax.py", 2], tmp_path, "scoring") == ("", "")
    assert line_at(["../scoring.py", 2], tmp_path, "scoring") == ("", "")
