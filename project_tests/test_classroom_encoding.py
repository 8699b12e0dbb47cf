"""The Classroom payloads, the job summary and the terminal on synthetic reports (no grading):
reporter totals equal to our score whatever the points, messages cut to fit, escaping, one
diagnosis per module.
"""

from __future__ import annotations

import base64
import json
import re

import jsonschema
import pytest

from grader import model
from grader.reports import classroom, summary
from project_tests.classroom_reporter import PAYLOAD_SCHEMA, Reporter

def exercise_with(points: list[float], passed: list[bool], name="mixed") -> model.ExerciseResult:
    tests = [
        model.TestResult(f"test_{i}", "passed" if ok else "failed", p if ok else 0.0, p, "" if ok else f"wrong {i}")
        for i, (p, ok) in enumerate(zip(points, passed))
    ]
    return model.ExerciseResult(name, sum(t.score for t in tests), sum(t.max_score for t in tests), tests)


def reporter_for(*exercises: model.ExerciseResult) -> Reporter:
    report = model.Report("ch03", 0, 0, list(exercises))
    outputs = classroom.outputs(report)
    return Reporter.run(",".join(outputs), {f"{k.upper()}_RESULTS": v for k, v in outputs.items()})


@pytest.mark.parametrize(
    "points, passed",
    [
        ([1, 2, 3], [True, False, True]),
        ([0.5, 1.5, 2], [False, True, True]),
        ([2, 2, 2, 2], [True, False, False, True]),
        ([1, 0.25], [False, True]),
        ([3], [False]),
    ],
)
def test_unequal_points_keep_both_reporter_totals_equal_to_our_score(points, passed):
    exercise = exercise_with(points, passed)
    reporter = reporter_for(exercise)
    assert reporter.posted_total == pytest.approx(exercise.score, abs=1e-9)
    assert reporter.printed_total == pytest.approx(exercise.score, abs=1e-9)
    assert reporter.posted_max == pytest.approx(exercise.max_score)


def test_points_too_fine_for_units_post_exactly_and_print_nearly():
    exercise = exercise_with([100, 0.01], [True, False])  # 10001 units: the aggregate encoding
    data = classroom.payload(exercise)
    assert len(data["tests"]) <= classroom.AGGREGATE_TESTS
    reporter = reporter_for(exercise)
    assert reporter.posted_total == pytest.approx(exercise.score, abs=1e-9)  # what Classroom records
    assert reporter.printed_total == pytest.approx(exercise.score, abs=exercise.max_score / classroom.AGGREGATE_TESTS)


def test_one_reporter_test_per_hidden_test_when_points_are_equal():
    exercise = exercise_with([1, 1, 1], [True, False, True])
    data = classroom.payload(exercise)
    assert [t["name"] for t in data["tests"]] == ["test_0", "test_1", "test_2"]
    assert [t["status"] for t in data["tests"]] == ["pass", "fail", "pass"]
    assert data["tests"][1]["message"] == "wrong 1"


def test_huge_messages_are_cut_to_fit():
    tests = [model.TestResult(f"test_{i}", "error", 0.0, 1.0, "x" * 50_000) for i in range(250)]
    exercise = model.ExerciseResult("big", 0.0, 250.0, tests)
    encoded = classroom.outputs(model.Report("ch03", 0, 250, [exercise]))["big"]
    assert len(encoded) < 96 * 1024
    jsonschema.validate(json.loads(base64.b64decode(encoded)), PAYLOAD_SCHEMA)


def test_runner_names():
    assert classroom.runner_name("self_attention_v1") == "selfattentionv1"
    assert classroom.runner_name("Masked-Softmax") == "maskedsoftmax"
    with pytest.raises(ValueError):
        classroom.runner_name("___")


def test_summary_escapes_feedback_and_flags():
    feedback = model.Feedback(checked="f(x)", hint="*hint*", expected="[1, 2]", actual="<script>alert(1)</script>",
                        expected_grid=None, actual_grid=None)
    test = model.TestResult("test_x", "failed", 0.0, 1.0, "| broken | `code` [link](http://e.vil)", feedback)
    report = model.Report("ch03", 0.0, 1.0, [model.ExerciseResult("m", 0.0, 1.0, [test], output="</pre><b>x</b>")],
                    flags=["<b>evil</b>.pth tries to configure pytest or Python (ignored by the grader)"])
    text = summary.markdown(report)
    assert "<script>" not in text and "<b>" not in text
    assert "[link](" not in text and "\\| broken \\|" in text
    assert text.count("<pre>") == text.count("</pre>")


def diagnosed_report(failing: int = 6) -> model.Report:
    """One exercise with a diagnosis (a concept, a step, grids, student code) and many failing checks."""
    diagnosis = model.Diagnosis(
        concepts=["Divide the scores by sqrt(d_k)."], stage="attention weights (the softmax output)", checked="f(x)",
        expected="shape (2, 2)", actual="shape (2, 2)", expected_grid=[[1.0, 0.0], [0.14, 0.86]],
        actual_grid=[[0.5, 0.5], [0.0, 1.0]], where="causal.py, line 3, in forward", code="<script>x</script> ::warning::")
    tests = [model.TestResult(f"test_{i}", "failed", 0.0, 1.0, f"wrong {i}") for i in range(failing)]
    tests.append(model.TestResult("test_ok", "passed", 1.0, 1.0))
    return model.Report("ch03", 1.0, failing + 1.0, [model.ExerciseResult("causal", 1.0, failing + 1.0, tests,
                                                                          diagnosis=diagnosis)])


def test_the_summary_gives_one_diagnosis_per_module_on_top_then_the_checks():
    text = summary.markdown(diagnosed_report())
    assert text.count("Divide the scores by") == 1 and "<script>" not in text
    # The diagnosis first, then every failing check with its message, one a line.
    assert text.index("Divide the scores by") < text.index("- test_0 (❌ failed): wrong 0") < text.index("- test_5 (❌ failed): wrong 5")
    assert "░ 0.14" in text and "   ·  " in text and "█ 1.00" in text  # shades without colour; 0 is a dot
    assert "test_ok" not in text.split("### What to fix")[1]


def test_the_classroom_message_carries_the_diagnosis_once():
    data = json.loads(base64.b64decode(classroom.outputs(diagnosed_report())["causal"]))
    messages = [t["message"] for t in data["tests"]]
    assert sum("sqrt(d_k)" in m for m in messages) == 1 and "sqrt(d_k)" in messages[0]
    assert all("::warning::" not in m or not m.lstrip().startswith("::") for m in messages)


def test_the_terminal_draws_the_diagnosis_once_with_shades(monkeypatch):
    import io

    from rich.console import Console

    from grader.reports import terminal

    out = io.StringIO()
    terminal.show(diagnosed_report(), console=Console(file=out, width=120, color_system="standard", force_terminal=True))
    text = out.getvalue()
    assert text.count("sqrt(d_k)") == 1 and "░ 0.14" in text and "5 other" not in text
    assert "1 other check passed" in text


LONG_MESSAGE = ("torch.manual_seed(5); SelfAttention_v1(4, 3)(x), x of shape (5, 4): 15 of 15 values differ by more "
                "than 0.0001; first at [0, 0]: expected 1.7046, got 1.8869")


def test_the_summary_keeps_a_checks_whole_message_with_expected_and_got():
    report = model.Report("ch03", 0.0, 1.0, [model.ExerciseResult("m", 0.0, 1.0, [
        model.TestResult("test_forward_other_sizes", "failed", 0.0, 1.0, LONG_MESSAGE)])])
    text = summary.markdown(report)
    line = next(line for line in text.splitlines() if line.startswith("- test")).replace("\\", "")
    assert line.endswith("expected 1.7046, got 1.8869") and "…" not in line


@pytest.mark.parametrize("limit", [25, 40, 77, 100, 120])
def test_text_cut_to_a_limit_ends_after_a_whole_word(limit):
    from grader.hygiene import clean, shortened

    words = LONG_MESSAGE.split()
    for cut in (shortened(LONG_MESSAGE, limit), clean(LONG_MESSAGE, limit), classroom.log_safe(LONG_MESSAGE, limit),
                summary.md(LONG_MESSAGE, limit).replace("\\", "")):
        assert len(cut) <= limit and cut.endswith("…")
        kept = cut[:-1].split()
        assert kept and kept[:-1] == words[:len(kept) - 1] and kept[-1] == words[len(kept) - 1], (limit, cut)
    assert shortened("x" * 50, 10) == "x" * 9 + "…"  # one long word: cut where the limit falls
    assert shortened(LONG_MESSAGE, len(LONG_MESSAGE)) == LONG_MESSAGE


HOSTILE_TEXTS = [
    "<img src=x onerror=alert(1)>*_[x](y)|", "<script>alert(1)</script>", "</pre><b>x</b>", "<!-- x -->", "<http://e.vil>",
    "[link](http://e.vil)", "![i](http://e.vil/x.png)", "[a][b]", "[a]: http://e.vil", "see http://e.vil and www.e.vil",
    "mail a@e.vil", "*em* **strong** _em_ __strong__ ~~del~~ ~del~", "`code`", "$x^2$", "| a | b |", "a \\| b",
    "# heading", "> quote", "- item", "+ item", "1. item", "---", "===", "&lt;b&gt;", "&#60;b&#62;", "x\\", "\\*x\\*",
    "a *b* c", "f(x)*g(x)*h", "_a_b", "x_ y _z", "[x]\n(y)", "foo #", "<a href='x'>y</a>",
]
READABLE = [
    "2026-02-28T20:00:00+01:00", "self_attention_v1.py, line 79: attn_weights = torch.softmax(attn_scores, dim=-1)",
    "first at [0, 0]: expected 0.2996, got 0.3071", "keys.shape[-1] ** 0.5", "shape (6, 6)", "2 * 3 = 6", "a < b",
    "test_textbook[attention_scores]", "x @ W + b", "'x' \"y\" {z} (w) !", "0.5 - 1", "3.5 is not 3",
]


def renderers():
    mistune = pytest.importorskip("mistune")
    from markdown_it import MarkdownIt

    gfm = mistune.create_markdown(escape=False, plugins=["table", "strikethrough", "url", "footnotes", "math"])
    commonmark = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return [gfm, commonmark.render]


MARKUP = re.compile(r"<(?!/?(?:p|table|thead|tbody|tr|th|td|blockquote|ul|li)\b)[a-z!/]", re.I)


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_student_text_made_markdown_is_inert_in_a_sentence_a_quote_a_list_and_a_table(text):
    escaped = summary.md(text)
    documents = {
        "sentence": f"It says {escaped} here.\n",
        "line start": f"{escaped}\n",
        "quote": f"> {escaped}\n",
        "list": f"- x ({escaped}): {escaped}\n",
        "table": f"| a | b |\n|---|---|\n| {escaped} | {escaped} |\n",
    }
    for render in renderers():
        for where, document in documents.items():
            html_text = render(document)
            assert not MARKUP.search(html_text), (where, document, html_text)  # no tag but the structure's own
            assert "<blockquote" not in html_text or where == "quote"
            assert "<li" not in html_text or where == "list"
            if where == "table":
                assert html_text.count("<td") == 2, (document, html_text)
    assert "http://" not in escaped and "www.e" not in escaped and "a@e" not in escaped  # no bare autolink left whole


@pytest.mark.parametrize("text", READABLE)
def test_ordinary_text_made_markdown_reads_as_it_was_written(text):
    assert summary.md(text) == text


def test_the_feedback_page_renders_the_summary_and_only_its_own_tags():
    report = diagnosed_report()
    report.exercises[0].tests[0].message = "<img src=x onerror=alert(1)> [x](http://e.vil) | *b*"
    report.exercises[0].output = "</pre><script>alert(1)</script>"
    text = summary.markdown(report)
    page = summary.page(text, "Feedback for <b>x</b>")
    assert page.startswith("<!DOCTYPE html>") and "<title>Feedback for &lt;b&gt;x&lt;/b&gt;</title>" in page
    assert "<table>" in page and "<h4>" in page and "<pre>" in page and "<blockquote>" in page  # rendered, not raw text
    tags = {m.group(2).lower() for m in re.finditer(r"<(/?)([A-Za-z][A-Za-z0-9]*)", page.split("<body>", 1)[1])}
    assert tags <= summary.PAGE_TAGS | {"body", "html"}, tags
    assert "<img" not in page and "<script" not in page and "<a " not in page and "<em>" not in page
    rogue = summary.page("# x\n\n<img src=x onerror=alert(1)>\n", "t")  # not from summary.markdown: shown as text
    assert "<img" not in rogue and "&lt;img src=x onerror=alert(1)&gt;" in rogue and "<pre>" in rogue
