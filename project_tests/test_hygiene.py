"""The one text-hygiene function every writer uses, and the bounded parser of the border."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from grader import submission
from grader.hygiene import BLOCK, MESSAGE, clean, clean_report
from grader.model import Diagnosis, ExerciseResult, Feedback, Report
from grader.model import TestResult as Result  # not collected as a test class
from grader.sandbox import wire

HOSTILE = "a\x1b]52;c;ZXZpbA==\x07b\x1b[2J\rc\u202ed\u2066e\x9bf\ud800g\x00h\ufeffi"
UNSAFE = "\x1b\x07\r\u202e\u2066\x9b\ud800\x00\ufeff"  # what HOSTILE holds that no report may


def test_clean_leaves_valid_utf8_without_control_or_bidi_characters():
    text = clean(HOSTILE)
    text.encode("utf-8")  # a lone surrogate would raise here
    assert text == "a]52;c;ZXZpbA==b[2J cdef\ufffdghi"


def test_clean_takes_bytes_that_are_not_utf8():
    assert clean(b"caf\xe9 \x1b[31mred\n", one_line=False) == "caf\ufffd [31mred\n"


def test_clean_keeps_line_breaks_only_in_blocks_and_caps_everything():
    assert clean("one\r\ntwo\u2028three\tfour", one_line=False) == "one\ntwo\nthree    four"
    assert clean("one\r\ntwo") == "one two"
    capped = clean("x" * 10 * MESSAGE)
    assert len(capped) == MESSAGE and capped.endswith("…")
    assert len(clean("y\n" * BLOCK, BLOCK, one_line=False)) == BLOCK


def test_clean_report_cleans_every_string_and_keeps_the_scores():
    feedback = Feedback(checked=HOSTILE, hint=HOSTILE, expected=HOSTILE, actual=HOSTILE,
                        expected_grid=[[0.5, HOSTILE]], actual_grid=None)
    test = Result(HOSTILE, "failed", 0.0, 1.0, HOSTILE * 1000, feedback)
    diagnosis = Diagnosis(concepts=[HOSTILE], stage=HOSTILE, checked=HOSTILE, expected=HOSTILE, actual=HOSTILE,
                          expected_grid=[[HOSTILE]], error=HOSTILE, where=HOSTILE, code=HOSTILE * 1000)
    report = Report(HOSTILE, 1.0, 2.0, [ExerciseResult(HOSTILE, 1.0, 2.0, [test], HOSTILE, HOSTILE * 10_000, diagnosis)],
                    flags=[HOSTILE], grader_errors=[HOSTILE])
    cleaned = clean_report(report)
    text = json.dumps(cleaned.to_dict(), ensure_ascii=False)
    assert "\x1b" not in text and "\u202e" not in text and "\\ud800" not in text and "\ud800" not in text
    message = cleaned.exercises[0].tests[0].message
    assert MESSAGE - 30 < len(message) <= MESSAGE and message.endswith("…")  # cut after a whole word
    assert BLOCK - 30 < len(cleaned.exercises[0].output) <= BLOCK
    assert (cleaned.score, cleaned.max_score, cleaned.exercises[0].tests[0].max_score) == (1.0, 2.0, 1.0)
    assert cleaned.exercises[0].tests[0].feedback.expected_grid[0][0] == 0.5
    assert MESSAGE - 30 < len(cleaned.exercises[0].diagnosis.code) <= MESSAGE  # the student's own line, shown in the diagnosis
    assert report.flags == [HOSTILE]  # a copy: the original is untouched


def _strings(value) -> list[str]:
    """Every string in a field's value (a text, a list of texts, a grid of rows)."""
    if isinstance(value, str):
        return [value]
    return [text for item in value for text in _strings(item)] if isinstance(value, list) else []


def test_clean_report_cleans_every_field_of_a_diagnosis():
    # Each field hostile (a list field: one hostile line; a grid: one hostile cell); each comes back
    # kept and safe, so that a field added to Diagnosis without its cleaning fails here by name.
    fields = dataclasses.fields(Diagnosis)
    given = {f.name: [[HOSTILE]] if f.name.endswith("_grid") else [HOSTILE] if f.default_factory is list else HOSTILE
             for f in fields}
    report = Report("a", 0.0, 1.0, [ExerciseResult("e", 0.0, 1.0, [], "", "", Diagnosis(**given))])
    cleaned = clean_report(report).exercises[0].diagnosis
    for f in fields:
        texts = _strings(getattr(cleaned, f.name))
        assert texts, f"{f.name} was dropped"
        assert not any(set(text) & set(UNSAFE) for text in texts), f"{f.name} escaped hygiene: {texts!r}"


@pytest.mark.parametrize("line", [b"[" * 33 + b"]" * 33, b'{"a":' * 33 + b"1" + b"}" * 33, b"[" * 100_000,
                                  b'{"a":"' + b"[" * 40 + b'","b":' + b"[" * 33 + b"]" * 33 + b"}"])
def test_parse_line_refuses_deep_nesting_before_parsing(line):
    with pytest.raises(wire.WireError, match="nested too deeply"):
        wire.parse_line(line)


def test_parse_line_ignores_brackets_inside_strings_and_bounds_size():
    deep_text = json.dumps({"event": "result", "value": ["[" * 1000, '\\"]]]]']}).encode()
    assert wire.parse_line(deep_text)["value"][0] == "[" * 1000
    assert wire.parse_line(b"[" * 32 + b"]" * 32) is not None
    with pytest.raises(wire.WireError, match="too long"):
        wire.parse_line(b'"' + b"x" * wire.MAX_LINE + b'"')
    with pytest.raises(wire.WireError, match="not JSON"):
        wire.parse_line(b"{nope}")


@pytest.mark.parametrize("invisible", ["\u200b", "\u200d", "\u2060", "\ufeff", "\u202e", "\x1b", "\xad", "\u206a",
                                       "\ufff9", "\U000e0041"])
def test_a_file_name_with_an_invisible_character_is_flagged_and_shown_with_it_escaped(tmp_path, invisible):
    """clean() drops such a character wherever text is shown: unescaped, ``causal\\u200b.py`` would
    read as the module ``causal.py`` in the instructor's report."""
    (tmp_path / "exercises" / "ch03").mkdir(parents=True)
    (tmp_path / "exercises" / "ch03" / f"causal{invisible}.txt").write_text("x")
    (tmp_path / "notes.txt").write_text("an ordinary name: never flagged")
    flags = submission.scan_flags(tmp_path, Path("exercises/ch03"), {"causal.py"}, frozenset())
    escaped = invisible.encode("unicode_escape").decode()
    assert flags == [f"exercises/ch03/causal{escaped}.txt has control or invisible characters, line breaks or bytes "
                     "that are not UTF-8 in its name"]
    assert clean(flags[0]) == flags[0]
