"""Mistakes of a suite's author are grader errors, never the student's: a misspelt probe name,
arguments a probe does not take, a bug in a probe's own code, a test without points, cases the
rubric did not count. A probe failing on what the student's code gave stays the student's error;
a parametrized test is worth its points once per case, in the report and in the rubric's totals."""

from __future__ import annotations

import shutil

import pytest

from grader.sandbox import fault
from grader.suite import probe_specs
from grader.sandbox import linear_layers, probing
from grader.assignment import Assignment
from grader.batch.pool import failed
from grader.sandbox.worker import BUILTIN_PROBES
from grader.settings import Settings
from project_tests.helpers import ROOT, exercise, grade_cli, make_submission, mutate, solution_sources

SHAPE_PROBE = '''

def scores_shape(student, inputs):
    """The shape of attention_scores(inputs, inputs[0]), read without checking it is a tensor."""
    return list(student.attention_scores(inputs, inputs[0]).shape)
'''
SHAPE_TEST = '''

@pytest.mark.points(1)
@pytest.mark.probe("scores_shape", inputs=INPUTS)
def test_scores_shape(probed):
    assert probed == [6]


@pytest.mark.points(1)
@pytest.mark.parametrize("tokens", [
    pytest.param(6, marks=pytest.mark.probe("scores_shape", inputs=INPUTS)),
    pytest.param(3, marks=pytest.mark.probe("scores_shape", inputs=INPUTS[:3])),
])
def test_scores_shape_cases(probed, tokens):
    assert probed == [tokens]
'''
FIXTURE_CASES_TEST = '''

@pytest.fixture(params=[1, 2])
def twice(request):
    return request.param


@pytest.mark.points(1)
def test_cases_from_a_fixture(twice):
    pass
'''
UNPOINTED_TEST = '''

def test_without_points():
    pass
'''


def edit(path, old, new):
    path.write_text(mutate(path.read_text(), old, new))


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """ch03's hidden suite with an author's mistake of every kind (and one honest new probe, used
    by a plain test and by a parametrized one: two cases, each worth its point)."""
    suite = tmp_path_factory.mktemp("copy") / "tests" / "ch03"
    shutil.copytree(ROOT / "tests" / "ch03", suite, ignore=shutil.ignore_patterns("__pycache__"))
    edit(suite / "test_causal.py", '@pytest.mark.probe("forward", seed=123, args=[3, 2, 6, 0.0]',
         '@pytest.mark.probe("froward", seed=123, args=[3, 2, 6, 0.0]')
    edit(suite / "test_causal.py", '@pytest.mark.probe("forward", seed=7,', '@pytest.mark.probe("forward", sed=7,')
    edit(suite / "probes" / "causal.py", "    return probing.gradients(module)\n", "    return probing.gradiants(module)\n")
    with (suite / "probes" / "simple_attention.py").open("a") as probes:
        probes.write(SHAPE_PROBE)
    with (suite / "test_simple_attention.py").open("a") as tests:
        tests.write(SHAPE_TEST)
    with (suite / "test_self_attention_v1.py").open("a") as tests:
        tests.write(UNPOINTED_TEST + FIXTURE_CASES_TEST)
    return suite


@pytest.fixture(scope="module")
def graded(suite, tmp_path_factory):
    """The solutions, and the solutions whose attention_scores returns a list, graded with ``suite``."""
    base = tmp_path_factory.mktemp("graded")
    listed = mutate(solution_sources("ch03")["simple_attention"], "    return inputs @ query\n",
                    "    return (inputs @ query).tolist()\n")
    graded = {name: grade_cli(make_submission(base / name, "ch03", overrides), "ch03", "--suite", str(suite))
              for name, overrides in (("solutions", {}), ("listed", {"simple_attention": listed}))}
    return {**graded, "suite": suite}


def result(report, stem, test):
    return next(t for t in exercise(report, stem)["tests"] if t["name"] == test)


def test_each_mistake_of_the_suite_is_a_grader_error_naming_test_file_and_problem(graded):
    proc, report = graded["solutions"]
    assert proc.returncode == 3, proc.stderr[-2000:]
    errors = "\n".join(report["grader_errors"])
    assert len(report["grader_errors"]) == 7, report["grader_errors"]
    assert ("test_causal.py::test_causal_attention_textbook: the probe file tests/ch03/probes/causal.py "
            "has no function 'froward' (did you mean 'forward'?)") in errors
    assert ("test_causal.py::test_causal_attention_other_seeds_sizes: probe 'forward' in tests/ch03/probes/causal.py "
            "takes no argument 'sed' and needs 'seed', which the marker does not give") in errors
    for test, stem in (("test_causal.py::test_causal_attention_gradients", "causal"), ("test_mha.py::test_mha_gradients", "mha")):
        assert (f"{test}: probe 'gradients' of probes/{stem}.py failed in its own code (at probes/causal.py, line "
                in errors)  # mha's probe is causal's
    assert "AttributeError: module 'grader.sandbox.probing' has no attribute 'gradiants'" in errors
    assert "test_self_attention_v1.py::test_without_points: this test has no points: give it @pytest.mark.points(N)" in errors
    for stem, test in (("causal", "test_causal_attention_textbook"), ("causal", "test_causal_attention_other_seeds_sizes"),
                       ("causal", "test_causal_attention_gradients"), ("mha", "test_mha_gradients")):
        found = result(report, stem, test)
        assert found["status"] == "error" and found["message"].startswith("the grader could not run this check"), found
    for case in ("1", "2"):  # a case the rubric did not count scores nothing: the totals stay the rubric's
        assert (f"test_self_attention_v1.py::test_cases_from_a_fixture[{case}]: test_cases_from_a_fixture runs 2 cases, "
                "but the rubric counted 1 from its @pytest.mark.parametrize") in errors
    assert result(report, "simple_attention", "test_scores_shape")["status"] == "passed"
    assert [(t["name"], t["status"], t["max_score"]) for t in exercise(report, "simple_attention")["tests"][-2:]] == [
        ("test_scores_shape_cases[6]", "passed", 1), ("test_scores_shape_cases[3]", "passed", 1)]
    rubric = Assignment.resolve("ch03", Settings(suite_dir=graded["suite"])).rubric
    assert report["max_score"] == rubric.max_score == 79 and report["score"] == 79 - 2 - 1 - 1 - 1 - 1
    assert failed(rubric).max_score == 79  # a grading process that died reports the same total


def test_a_probe_failing_on_what_the_student_gave_is_the_students_error(graded):
    proc, report = graded["listed"]
    found = result(report, "simple_attention", "test_scores_shape")
    assert found["status"] == "error"
    assert found["message"] == ("the check could not use what your code gave "
                                "(AttributeError: 'list' object has no attribute 'shape')"), found
    assert len(report["grader_errors"]) == 7 and not any("scores_shape" in e for e in report["grader_errors"])
    cases = [t for t in exercise(report, "simple_attention")["tests"] if t["name"].startswith("test_scores_shape_cases")]
    assert [t["status"] for t in cases] == ["error", "error"], cases


def test_probe_markers_are_checked_against_the_signature(tmp_path):
    probes = tmp_path / "probes.py"
    probes.write_text("def p(student, a, b=1, *, c, d=2):\n    pass\n\n\ndef none():\n    pass\n")

    def problem(*args, **kwargs):
        return probe_specs.problem(*args[:1], args[1:], kwargs, probes, BUILTIN_PROBES)

    assert problem("p", a=1, c=3) == "" and problem("p", a=1, b=2, c=3, d=4) == ""
    assert problem("p", a=1) == f"probe 'p' in {probes} needs 'c', which the marker does not give"
    assert problem("p", a=1, c=3, e=5) == f"probe 'p' in {probes} takes no argument 'e'"
    assert "takes its arguments by keyword only" in problem("p", 1, a=1, c=3)
    assert "must take the student's module as its first positional parameter" in problem("none")
    assert problem("call", function="f", args=[]) == ""  # the built-in probe of @calls
    assert "needs 'args'" in problem("call", function="f")
    probes.write_text("def p(student:\n")
    assert "cannot be read: SyntaxError" in problem("p")


def test_whose_fault_an_exception_is(tmp_path):
    student_dir = tmp_path / "submission"
    student_dir.mkdir()
    (student_dir / "mine.py").write_text("def boom():\n    raise ValueError('mine')\n")
    namespace = {}
    exec(compile((student_dir / "mine.py").read_text(), str(student_dir / "mine.py"), "exec"), namespace)

    def account(function):
        try:
            function()
        except Exception as exc:  # noqa: BLE001
            return fault.describe_exception(exc, str(student_dir))

    students = account(namespace["boom"])
    assert students["where"] == "mine.py, line 2, in boom" and "grader_fault" not in students
    probes = account(lambda: {}.missing)
    assert probes["grader_fault"] and probes["type"] == "AttributeError"
    assert probes["where"].startswith("project_tests/test_probing.py, line ")
    called = account(lambda: probing.call(int, "not a number"))  # raised in C, called from student_code
    assert "grader_fault" not in called and called["type"] == "ValueError"
    refused = account(lambda: probing.tensor([1], "the result"))
    assert refused["probe_error"] and "grader_fault" not in refused



def test_a_module_built_uninitialized_keeps_its_shapes_draws_no_random_number_and_restores_nn_linear():
    import torch
    from torch import nn

    class Student:  # a student's module: two layers, one with a bias
        @staticmethod
        def build():
            return nn.Sequential(nn.Linear(6, 4, bias=False), nn.Linear(4, 2))

        @staticmethod
        def broken():
            nn.Linear(2, 2)
            raise ValueError("the student's error")

    initialize = nn.Linear.reset_parameters
    built = probing.build(Student, "build", kind="function", seed=5, initialize=False)
    assert [list(p.shape) for p in built.parameters()] == [[4, 6], [2, 4], [2]]
    drawn = torch.rand(3)
    torch.manual_seed(5)
    assert torch.equal(drawn, torch.rand(3))  # the seeded stream is untouched: no weight was drawn
    with pytest.raises(ValueError, match="the student's error"):
        probing.build(Student, "broken", kind="function", initialize=False)
    assert nn.Linear.reset_parameters is initialize


def solutions_module(stem: str):
    """A ch03 solution module, loaded under a name of its own; the solutions it imports (mha's
    ``causal``) are taken out of ``sys.modules`` again."""
    import importlib.util
    import sys

    folder = ROOT / "solutions" / "ch03"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(f"_solution_{stem}", folder / f"{stem}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
        for name, loaded in list(sys.modules.items()):
            if str(getattr(loaded, "__file__", "") or "").startswith(str(folder)):
                del sys.modules[name]
    return module


def test_fixed_layers_take_the_same_numbers_in_the_order_they_are_built_and_tell_a_gpt2_configuration_from_near_misses(
        monkeypatch):
    """Exercise 3.3's output check: the student's GPT-2-size module built with its nn.Linear layers
    given fixed numbers (no random weights drawn at every run), against the reference built so."""
    import torch
    from torch import nn

    class Student:  # the reference's layers, and the same built in the same order but registered otherwise
        @staticmethod
        def gpt2(**changed):
            return reference.MultiHeadAttention(**{**GPT2, **changed})

        @staticmethod
        def registered_otherwise():
            class Attention(reference.MultiHeadAttention):
                def __init__(self):  # the layers built in the book's order, registered in another
                    nn.Module.__init__(self)
                    layers = [nn.Linear(768, 768, bias=False) for _ in range(3)]
                    out_proj = nn.Linear(768, 768)
                    self.scale = nn.Parameter(torch.tensor(1.0), requires_grad=False)  # a frozen number first
                    self.out_proj = out_proj
                    self.W_query, self.W_key, self.W_value = layers
                    self.d_out, self.num_heads, self.head_dim = 768, 12, 64
                    self.dropout = nn.Dropout(0.0)
                    self.register_buffer("mask", torch.triu(torch.ones(1024, 1024), diagonal=1))

            return Attention()

        @staticmethod
        def huge():
            return nn.Sequential(nn.Linear(2048, 2048), nn.Linear(4, 4))  # 4,196,352 numbers, then 20

    reference = solutions_module("mha")
    GPT2 = {"d_in": 768, "d_out": 768, "context_length": 1024, "dropout": 0.0, "num_heads": 12}
    x = torch.linspace(-1, 1, 3 * 768).view(1, 3, 768)

    def output(name="gpt2", **changed):
        module = probing.build(Student, name, kind="function", train=False, fixed=True,
                               kwargs=changed)
        return module, module(x).detach()

    initialize = nn.Linear.reset_parameters
    monkeypatch.setattr(linear_layers, "_fixed", None)  # as in a process that has not drawn them yet
    torch.manual_seed(5)
    before = torch.rand(3)
    torch.manual_seed(5)
    module, expected = output()
    assert torch.equal(before, torch.rand(3))  # drawn from a generator of their own: the global stream is untouched
    values, offset = linear_layers.fixed_values(), 0
    for layer in (module.W_query, module.W_key, module.W_value, module.out_proj):  # in the order they are built
        for parameter in (layer.weight, layer.bias) if layer.bias is not None else (layer.weight,):
            assert torch.equal(parameter.detach().flatten(), values[offset:offset + parameter.numel()])
            offset += parameter.numel()
    assert offset == 2_360_064 and linear_layers.fixed_values() is values  # drawn once per process
    assert torch.equal(output()[1], expected)  # the same at every build
    assert torch.equal(output("registered_otherwise")[1], expected)  # registered in another order: the same
    # What the output tells apart, with the reference's number of parameters or a near one: other
    # numbers of heads, biases on the queries, keys and values.
    assert not torch.allclose(output(num_heads=6)[1], expected, atol=1e-4)
    assert not torch.allclose(output(num_heads=24)[1], expected, atol=1e-4)
    assert not torch.allclose(output(qkv_bias=True)[1], expected, atol=1e-4)
    large, small = probing.build(Student, "huge", kind="function", fixed=True)  # more numbers than there are
    assert torch.equal(large.weight.detach().flatten(), values[:2048 * 2048]) and not large.bias.detach().any()
    assert not small.weight.detach().any()  # once they are used up, zeros: nothing left to chance
    assert nn.Linear.reset_parameters is initialize  # restored after each build


def test_a_result_that_cannot_be_graded_is_named_part_by_part():
    import torch

    from grader.sandbox import wire, worker

    class Sub(torch.Tensor):
        pass

    plain = worker.to_plain({"out": [1.5, torch.ones(2)], "k": (None, "x")})
    assert plain["out"][0] == 1.5 and plain["out"][1]["$tensor"]["shape"] == [2] and plain["k"] == [None, "x"]
    negative_view = torch._neg_view(torch.arange(3.0))  # shares memory, values negated by a flag
    assert wire.decode(worker.to_plain(negative_view)).tolist() == [-0.0, -1.0, -2.0]
    with pytest.raises(fault.ProbeError, match=r"^the result\['out'\]\[1\] is a object, which cannot be graded$"):
        worker.to_plain({"out": [1, object()]})
    with pytest.raises(fault.ProbeError, match=r"^the result\[0\]\[2\] is a Sub, a subclass of torch.Tensor"):
        worker.to_plain([[0, 1, torch.ones(1).as_subclass(Sub)]])
    nested = [1]
    for _ in range(9):
        nested = [nested]
    with pytest.raises(fault.ProbeError, match=r"^the result(\[0\]){9} is nested too deeply$"):
        worker.to_plain(nested)


def test_a_forged_number_of_outputs_fails_the_forward_checks(monkeypatch):
    """What comes back is not trusted to hold one output per input: an empty list, a dict or fewer
    outputs than inputs fail the check (they would otherwise compare nothing)."""
    import torch

    from grader.suite.comparisons import Mismatch

    monkeypatch.syspath_prepend(str(ROOT / "tests" / "ch03"))
    from behaviour import check_outputs

    xs, expected = [torch.ones(2, 3), torch.ones(4, 3)], [torch.ones(2, 2), torch.ones(4, 2)]
    check_outputs([torch.ones(2, 2), torch.ones(4, 2)], expected, xs, what=lambda x: "f(x)")
    for forged in ([], {}, [torch.ones(2, 2)]):
        with pytest.raises(Mismatch, match="2 output"):
            check_outputs(forged, expected, xs, what=lambda x: "f(x)")


def test_the_line_tracer_runs_only_where_a_diagnosis_asks_for_the_numbers_of_plain_data():
    """The numbers a student's lines assign are traced (``sys.settrace``, which slows every Python
    call several times over) only in a diagnosis's re-run of a call on plain data (BLEU's), never in
    the graded run nor where the arguments are tensors."""
    import sys
    import types

    import torch

    seen = []
    student = types.SimpleNamespace(
        f=lambda *args: seen.append(sys.gettrace() is not None) or 1.0)
    with probing.sending_steps(False):
        probing.call_function(student, "f", ["a b", "a b", 1])
    with probing.sending_steps(True):
        probing.call_function(student, "f", [torch.ones(2)])
        probing.call_function(student, "f", ["a b", "a b", 1])
    assert seen == [False, False, True] and sys.gettrace() is None
