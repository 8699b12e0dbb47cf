"""Where a wrong value or shape was made first (grader.diagnosis.origin), on small files written here.

Each test runs a reference and a mistaken function under the same recording the sandbox uses
(``trace.recording`` inside ``trace.student_files``), then walks back from the mistaken output.
"""

from __future__ import annotations

import torch

from grader.diagnosis.origin import value_origin
from grader.diagnosis.source_text import made_at, source_tree, statement_at
from grader.diagnosis.wrong_shapes import shape_origin
from grader.sandbox import failure_shapes, probing, trace
from grader.sandbox.protocol import Step, parse_shapes

REFERENCE = """import torch

def renormalize(w):
    mask = torch.tril(torch.ones(w.shape[-1], w.shape[-1]))
    masked = w * mask
    row_sums = masked.sum(dim=-1, keepdim=True)
    return masked / row_sums

def attend(x, wq, wk, wv):
    queries = x @ wq
    keys = x @ wk
    values = x @ wv
    weights = torch.softmax(queries @ keys.T, dim=-1)
    return weights @ values
"""


def run(tmp_path, text: str, name: str, *args):
    """``name(*args)`` from ``text`` (a file of tmp_path), with its recorded steps (as the diagnosis reads them)."""
    path = tmp_path / "mine.py"
    path.write_text(text)
    namespace: dict = {}
    exec(compile(text, str(path), "exec"), namespace)  # noqa: S102 - the test's own file
    with trace.student_files(str(tmp_path)), trace.recording() as recorder:
        out = namespace[name](*args)
    return out, [Step(*step) for step in recorder.steps]


def origin_line(tmp_path, mistaken: str, name: str, *args):
    """The line of ``mistaken`` where the walk from its output stops, and whether its inputs were right."""
    (tmp_path / "ref").mkdir()
    expected, reference = run(tmp_path / "ref", REFERENCE, name, *args)
    out, steps = run(tmp_path, mistaken, name, *args)
    assert not torch.allclose(out, expected)
    start = max(i for i, s in enumerate(steps) if s.value.shape == out.shape and torch.equal(s.value, out))
    found = value_origin(steps, start, reference, [expected])
    return (steps[found.step].where[1], found.same_inputs, [steps[i].where[1] for i in found.inputs]) if found else None


def test_the_walk_stops_at_the_line_that_makes_a_wrong_value_from_right_ones(tmp_path):
    mistaken = REFERENCE.replace("masked.sum(dim=-1, keepdim=True)", "masked.sum(dim=-2, keepdim=True)")
    line, same_inputs, _ = origin_line(tmp_path, mistaken, "renormalize", torch.rand(5, 5))
    assert line == 6 and same_inputs  # the column sums, not the division that uses them (line 7)


def test_a_right_value_in_the_wrong_place_shows_the_lines_its_inputs_come_from(tmp_path):
    # values from the key matrix: every value is one the reference computes; the reference never
    # multiplies the weights by the keys, so the last product is where it first differs.
    mistaken = REFERENCE.replace("values = x @ wv", "values = x @ wk")
    line, same_inputs, inputs = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert line == 14 and not same_inputs and 12 in inputs  # line 12: values = x @ wk


def test_queries_from_the_key_matrix_are_not_taken_for_the_queries(tmp_path):
    mistaken = REFERENCE.replace("queries = x @ wq", "queries = x @ wk")
    line, same_inputs, inputs = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert line == 13 and not same_inputs and 10 in inputs  # keys @ keys.T: the keys twice


def test_a_layout_of_its_own_is_not_taken_for_the_mistake(tmp_path):
    # The student transposes the keys as a step of their own (the reference uses .T, no step)
    # and scales the scores wrongly: the walk passes the transpose and stops at the scaling.
    mistaken = REFERENCE.replace("torch.softmax(queries @ keys.T, dim=-1)",
                                 "torch.softmax(queries @ keys.transpose(0, 1) * 2, dim=-1)")
    line, same_inputs, _ = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert line == 13 and same_inputs


def test_a_mask_is_a_step_of_its_own(tmp_path):
    mistaken = REFERENCE.replace("torch.tril(torch.ones(w.shape[-1], w.shape[-1]))",
                                 "torch.triu(torch.ones(w.shape[-1], w.shape[-1]))")
    line, same_inputs, _ = origin_line(tmp_path, mistaken, "renormalize", torch.rand(5, 5))
    assert line == 4 and same_inputs


def test_an_error_carries_what_the_failing_call_received_and_the_walk_finds_the_odd_shape(tmp_path):
    text = ("import torch\n\ndef f(x):\n    y = x.squeeze()\n    z = y * 2\n"
            "    return torch.cat([z, torch.ones(1, 3)], dim=1)\n")
    namespace: dict = {}
    (tmp_path / "mine.py").write_text(text)
    exec(compile(text, str(tmp_path / "mine.py"), "exec"), namespace)  # noqa: S102 - the test's own file
    steps = None
    try:
        with probing.sending_steps(True), trace.student_files(str(tmp_path)), probing.recorded():
            namespace["f"](torch.rand(1, 1, 4))
    except (RuntimeError, IndexError) as exc:
        steps, raised = parse_shapes(failure_shapes.shapes_of_failure(exc))
    assert steps, "the squeezed tensor no longer fits torch.cat"
    with trace.recording() as reference:  # squeeze(0): (1, 4)
        torch.cat([torch.rand(1, 1, 4).squeeze(0) * 2, torch.ones(1, 3)], dim=1)
    found = shape_origin(steps, raised, [Step(*step) for step in reference.steps])
    assert steps[found].label == "squeeze" and steps[found].where[1] == 4  # not line 5, which only doubles it


def test_what_a_line_uses_is_found_where_it_is_made(tmp_path):
    path = tmp_path / "layer.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Layer(nn.Module):\n"
        "    def __init__(self, d):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(d, d)\n"
        "        table = torch.arange(d,\n"
        "                             dtype=torch.float32)\n"
        "        self.register_buffer('table', table)\n\n"
        "    def forward(self, x):\n"
        "        d = x.shape[0]\n"
        "        return self.proj(x) + self.table / d\n")
    made = made_at(path, 15, "return self.proj(x) + self.table / d", computed={15})
    assert made["self.proj"] == [(8, "self.proj = nn.Linear(d, d)")]
    assert made["self.table"] == [(9, "table = torch.arange(d, dtype=torch.float32)"),
                                  (11, "self.register_buffer('table', table)")]
    assert made["d"] == [(14, "d = x.shape[0]")]
    assert "d" not in made_at(path, 15, "return self.proj(x) + self.table / d", computed={14, 15})  # d is a tensor there
    assert statement_at(path, 9) == "table = torch.arange(d, dtype=torch.float32)"


def test_the_report_says_which_line_and_what_it_claims_of_its_inputs():
    from grader.model import Diagnosis
    from grader.reports.common import diagnosis_line, lead

    same = Diagnosis(stage="output", where="causal.py, line 79", code="return masked / row_sums",
                     origin="causal.py, line 78", origin_code="row_sums = masked.sum(dim=-2, keepdim=True)",
                     origin_kind="value", made=["self.P: line 69: P = 1", "self.P: line 73: P[0] = 2"])
    lines = lead(same)
    assert ("First line of yours whose result the reference never computes (the tensors it is computed from match the "
            "reference's): "
            "causal.py, line 78: row_sums = masked.sum(dim=-2, keepdim=True)") in lines
    assert lines[-3:] == ["It uses self.P; these lines of yours make it, or what it is made from:", "  line 69: P = 1",
                          "  line 73: P[0] = 2"]
    mixed = Diagnosis(stage="output", origin="mine.py, line 14", origin_code="return weights @ values",
                      origin_kind="combination", inputs=["line 12: values = x @ wk"])
    text = "\n".join(lead(mixed))
    assert "match the reference" not in text and "line 12: values = x @ wk" in text
    assert "line 12: values = x @ wk" in diagnosis_line(mixed)


def test_a_softmax_written_by_hand_is_not_taken_for_the_mistake(tmp_path):
    # exp of the shifted scores is right (the reference's softmax written out); the sum without
    # keepdim divides each row by the wrong sums: that division is where it first goes wrong.
    mistaken = REFERENCE.replace(
        "    weights = torch.softmax(queries @ keys.T, dim=-1)\n",
        "    scores = queries @ keys.T\n"
        "    e = torch.exp(scores - scores.max(dim=-1).values.unsqueeze(-1))\n"
        "    weights = e / e.sum(dim=-1)\n")
    line, same_inputs, inputs = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert line == 15 and not same_inputs and 14 in inputs  # the division, from the right exponentials


def test_a_mask_built_from_positions_is_not_taken_for_the_mistake_but_shown_as_an_input(tmp_path):
    # The positions (an arange the reference never makes) are right; the comparison keeps the
    # future instead of the past. The first value that differs is the masked weights, made from that mask.
    mistaken = REFERENCE.replace(
        "    mask = torch.tril(torch.ones(w.shape[-1], w.shape[-1]))\n",
        "    positions = torch.arange(w.shape[-1])\n"
        "    mask = positions[None, :] >= positions[:, None]\n")
    line, same_inputs, inputs = origin_line(tmp_path, mistaken, "renormalize", torch.rand(5, 5))
    assert line == 6 and not same_inputs and 5 in inputs  # masked = w * mask, from the mask of line 5


def test_a_sum_over_the_whole_tensor_is_where_it_goes_wrong_not_the_division_that_uses_it(tmp_path):
    # One number for the whole matrix (the reference sums each row): a scalar is judged when it
    # reduces a whole tensor, so the walk stops at the sum, not at the division of the next line.
    mistaken = REFERENCE.replace("    weights = torch.softmax(queries @ keys.T, dim=-1)\n",
                                 "    e = torch.exp(queries @ keys.T)\n"
                                 "    total = e.sum()\n"
                                 "    weights = e / total\n")
    line, same_inputs, inputs = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert line == 14 and inputs == [13]  # total = e.sum(), from the right exponentials


def test_a_softmax_shifted_by_the_maximum_of_the_whole_tensor_is_not_taken_for_the_mistake(tmp_path):
    # Subtracting the whole tensor's maximum is a right way to stabilise softmax; the mistake is the
    # sum over every entry on the next line.
    mistaken = REFERENCE.replace("    weights = torch.softmax(queries @ keys.T, dim=-1)\n",
                                 "    scores = queries @ keys.T\n"
                                 "    e = torch.exp(scores - scores.max())\n"
                                 "    weights = e / e.sum()\n")
    line, _, _ = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert line == 15


def test_the_dimension_the_reference_reduces_along_is_found_for_a_whole_tensor_sum(tmp_path):
    from grader.diagnosis.reductions import reduced_along

    _, reference = run(tmp_path, REFERENCE, "attend", *torch.rand(4, 3, 3).unbind())
    softmax_input = next(s.value for s in reference if s.label == "softmax input")
    assert reduced_along(reference, "sum", torch.exp(softmax_input)) == [(-1, True)]


def test_a_reduction_instead_of_a_whole_sum_is_said_as_the_reference_makes_it():
    from grader.diagnosis.reductions import reduced_instead

    columns = reduced_instead((4, 3), -2, False)
    assert "dimension 0 only (of size 4), one result per column" in columns and "(dim=0)" in columns
    rows = reduced_instead((4, 3), -1, True)
    assert "dimension -1 only (of size 3), one result per row" in rows and "(dim=-1, keepdim=True)" in rows
    assert "each index of the other dimensions" in reduced_instead((2, 4, 3), -1, False)


def test_a_tensor_of_zeros_written_into_row_by_row_is_not_taken_for_the_mistake(tmp_path):
    # The loop stops one row short; torch.zeros is a way of starting, not a wrong value.
    mistaken = REFERENCE.replace("    return weights @ values\n",
                                 "    out = torch.zeros(x.shape[0], values.shape[1])\n"
                                 "    for i in range(x.shape[0] - 1):\n"
                                 "        out[i] = weights[i] @ values\n"
                                 "    return out\n")
    found = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert found is None or found[0] != 14  # never line 14: out = torch.zeros(...)


def test_memory_left_uninitialised_to_write_into_is_never_listed_as_a_wrong_input(tmp_path):
    # Each row is written from the keys' values, not the values': torch.empty is a way of starting.
    mistaken = REFERENCE.replace("    return weights @ values\n",
                                 "    out = torch.empty(x.shape[0], values.shape[1])\n"
                                 "    for i, row in enumerate(weights):\n"
                                 "        out[i] = row @ keys\n"
                                 "    return out\n")
    line, _, inputs = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert line == 16 and 14 not in inputs  # line 16: out[i] = row @ keys; never line 14: torch.empty


def test_a_row_of_a_loop_over_an_input_is_as_right_as_the_input(tmp_path):
    # Each row of x reversed: the flip is the mistake, not the loop that gives the rows.
    mistaken = REFERENCE.replace("    queries = x @ wq\n",
                                 "    rows = []\n"
                                 "    for row in x:\n"
                                 "        rows.append(row.flip(0))\n"
                                 "    queries = torch.stack(rows) @ wq\n")
    line, _, _ = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert line == 12  # rows.append(row.flip(0)); never line 11: for row in x


def test_a_tensor_of_zeros_shaped_like_another_then_expanded_is_a_way_of_starting(tmp_path):
    # zeros_like(x[:, :1]).expand(...).clone(): made for its shape alone; the loop stops one row short.
    mistaken = REFERENCE.replace("    return weights @ values\n",
                                 "    out = torch.zeros_like(x[:, :1]).expand(-1, values.shape[1]).clone()\n"
                                 "    for i in range(x.shape[0] - 1):\n"
                                 "        out[i] = weights[i] @ values\n"
                                 "    return out\n")
    found = origin_line(tmp_path, mistaken, "attend", *torch.rand(4, 3, 3).unbind())
    assert found is None or found[0] != 14  # never line 14: out = torch.zeros_like(...)


MASKING = """import torch

def causal_weights(x, wq, wk):
    scores = (x @ wq) @ (x @ wk).T
    future = torch.triu(torch.ones(x.shape[0], x.shape[0], dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(future, -torch.inf)
    return torch.softmax(scores, dim=-1)
"""


def test_a_result_computed_and_dropped_is_found_where_the_reference_goes_on_with_it(tmp_path):
    from grader.diagnosis.origin import discarded

    args = torch.rand(3, 4, 4).unbind()
    (tmp_path / "ref").mkdir()
    expected, reference = run(tmp_path / "ref", MASKING, "causal_weights", *args)
    # The masked scores computed, and dropped: the softmax reads the scores as they were.
    mistaken = MASKING.replace("    scores = scores.masked_fill(", "    scores.masked_fill(")
    out, steps = run(tmp_path, mistaken, "causal_weights", *args)
    start = max(i for i, s in enumerate(steps) if s.value.shape == out.shape and torch.equal(s.value, out))
    found = value_origin(steps, start, reference, [expected])
    assert steps[found.step].where[1] == 7  # the softmax: the first value the reference never computes
    assert [steps[j].where[1] for j in discarded(steps, found.step, reference, out)] == [6]
    # Kept, under another name the softmax never reads: still computed and never used.
    kept_aside = MASKING.replace("    scores = scores.masked_fill(", "    masked = scores.masked_fill(")
    out, steps = run(tmp_path, kept_aside, "causal_weights", *args)
    found = value_origin(steps, len(steps) - 1, reference, [expected])
    assert [steps[j].where[1] for j in discarded(steps, found.step, reference, out)] == [6]
    # A value the reference never goes on with (a mask of its own, then not used) is not said to be dropped.
    unused_other = MASKING.replace("    return", "    scores.masked_fill(future, 0.0)\n    return")
    unused_other = unused_other.replace("    scores = scores.masked_fill(future, -torch.inf)\n", "")
    out, steps = run(tmp_path, unused_other, "causal_weights", *args)
    found = value_origin(steps, len(steps) - 1, reference, [expected])
    assert discarded(steps, found.step, reference, out) == []


def test_a_boolean_mask_is_known_inverted_only_in_its_own_shape():
    from grader.diagnosis.known_values import KnownValues

    future = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)  # the reference's: the entries filled
    values = KnownValues([Step("triu", future, ["x.py", 1, 0], [])])
    kept = ~future  # the entries kept (torch.where(allowed, ...)): another correct way
    assert values.matching(kept) == [0] and values.only_inverted(kept)
    assert values.matching(future) == [0] and not values.only_inverted(future)
    # Neither transposed nor as numbers: a mask with the diagonal filled (triu, diagonal=0) is the kept
    # mask transposed, and a float mask of ones is no boolean.
    assert not values.holds(kept.T, layout=True) and not values.only_inverted(kept.T)
    assert not values.matching(kept.float())


def test_a_file_is_parsed_once_per_text_and_anew_when_it_changes(tmp_path):
    path = tmp_path / "causal.py"
    path.write_text("x = 1\ny = 2\n")
    lines, tree = source_tree(path)
    assert lines == ("x = 1", "y = 2") and source_tree(path)[1] is tree  # the same text: parsed once
    path.write_text("x = 3\ny = 4\n")  # the same size, within the same tick of the file's clock
    assert statement_at(path, 2) == "y = 4" and source_tree(path)[1] is not tree
    path.write_text("def broken(:\n")
    assert source_tree(path) == (None, None) and statement_at(path, 1) == ""
    assert source_tree(tmp_path / "missing.py") == (None, None)
