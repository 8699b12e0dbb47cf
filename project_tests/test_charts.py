"""The class report's pictures, written as SVG by ``grader.batch.charts``: the same bins as numpy's
(and matplotlib's) histogram, bars as long as their numbers, valid XML whatever the text."""

from __future__ import annotations

import math
import random
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from grader.batch import charts

SVG = "{http://www.w3.org/2000/svg}"


def test_histogram_bins_are_numpys():
    rng = random.Random(1)
    for _ in range(2000):
        top, bins = rng.choice([1.0, 7.0, 10.0, 14.0, 33.3, 75.0, 0.6]), rng.randint(5, 20)
        edges = np.linspace(0, top, bins + 1)
        values = [float(rng.choice(edges)) if rng.random() < 0.5 else rng.uniform(-1, top + 1)
                  for _ in range(rng.randint(0, 30))]  # half on an edge, some outside the range
        assert charts.histogram_counts(values, top, bins) == np.histogram(values, bins=bins, range=(0, top))[0].tolist()


@pytest.mark.parametrize("largest", [0, 1, 3, 5, 6, 7, 12, 40, 99, 1000, 12345])
def test_integer_ticks_reach_the_largest_count_in_few_round_steps(largest):
    ticks = charts.integer_ticks(largest)
    step = ticks[1]
    assert ticks[0] == 0 and ticks[-2] < max(largest, 1) <= ticks[-1] and len(ticks) <= 6
    assert ticks == [step * k for k in range(len(ticks))] and str(step).strip("0") in ("1", "2", "5")
    smaller = step // 2 if str(step)[0] in "12" else step * 2 // 5  # the step before it in 1, 2, 5, 10, ...
    assert smaller == 0 or math.ceil(max(largest, 1) / smaller) + 1 > 6  # ... would need too many ticks


@pytest.mark.parametrize("top", [0.6, 1, 5, 7, 10, 14, 33.3, 60, 75, 100, 1000])
def test_axis_ticks_stay_within_the_top_in_round_steps(top):
    ticks = charts.ticks_within(top)
    step = ticks[1]
    assert ticks[0] == 0 and ticks[-1] <= top < ticks[-1] + step and 2 <= len(ticks) <= 8
    assert f"{step:g}".replace("0.", "").strip("0") in ("1", "2", "5")
    smaller = step / 2 if f"{step:g}".replace("0.", "").strip("0") in ("1", "2") else step * 2 / 5
    assert math.floor(top / smaller + 1e-9) + 1 > 8  # the step before it in 1, 2, 5, 10, ... would need too many


def bars_of(svg: str) -> list[ET.Element]:
    """The bars of a picture, each checked to lie within it."""
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg" and root.find(f"{SVG}title") is not None
    width, height = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    bars = [rect for rect in root.iter(f"{SVG}rect") if rect.get("class") == "bar"]
    for bar in bars:
        x, y, w, h = (float(bar.get(k)) for k in ("x", "y", "width", "height"))
        assert 0 <= x and x + w <= width and 0 <= y and y + h <= height, bar.attrib
    return bars


def texts(svg: str) -> dict[str, ET.Element]:
    return {t.text: t for t in ET.fromstring(svg).iter(f"{SVG}text")}


def test_a_histograms_bars_are_as_tall_as_their_counts():
    scores = [75, 75, 74.5, 70, 70, 70, 12, 0]
    counts = charts.histogram_counts(scores, 75, 8)
    bars = bars_of(charts.histogram(scores, 75, title="Score distribution", xlabel="total"))
    assert len(bars) == sum(1 for c in counts if c)  # an empty bin draws nothing
    heights = [float(bar.get("height")) for bar in bars]
    unit = heights[0] / [c for c in counts if c][0]
    assert [h / unit for h in heights] == pytest.approx([c for c in counts if c], rel=0.01)  # to a tenth of a pixel
    xs = [float(bar.get("x")) for bar in bars]
    assert xs == sorted(xs)  # in the order of the bins


def test_a_histograms_scale_is_its_axis_and_its_bins_are_one_per_value_from_five():
    scores = [7.5, 22.5, 37.5, 52.5, 67.5, 67.5, 67.5]  # the middles of five of seven bins over 0-75 ...
    svg = charts.histogram(scores[:5], 75, title="t", xlabel="x")
    bars = bars_of(svg)  # ... five values: five bins, one value each, side by side
    xs, widths = [float(b.get("x")) for b in bars], [float(b.get("width")) for b in bars]
    assert len(bars) == 5 and all(abs(b - a - (w + 1)) < 0.11 for a, b, w in zip(xs, xs[1:], widths))
    scores = [7.5, 22.5, 37.5] + [67.5] * 7  # ten values, ten bins: 1, 1, 1 and 7 (the last bin), ticks 0 to 8
    svg = charts.histogram(scores, 75, title="t", xlabel="x")
    labels = {t.text: t for t in ET.fromstring(svg).iter(f"{SVG}text") if t.get("text-anchor") == "end"}  # the y axis'
    zero, eight = float(labels["0"].get("y")) - 4, float(labels["8"].get("y")) - 4  # its ticks' lines
    per_student = (zero - eight) / 8
    bars = bars_of(svg)
    assert [round(float(b.get("height")) / per_student, 2) for b in bars] == [1, 1, 1, 7]
    assert all(float(b.get("y")) + float(b.get("height")) == pytest.approx(zero, abs=0.1) for b in bars)  # on the axis


def test_an_exercises_bar_is_as_long_as_its_percent_and_every_text_is_escaped():
    hostile = '<script>alert(1)</script> & "quoted" \'x\''
    rows = [("causal", 50.0, "mean 7.5/15, 0 at zero"), (hostile, 100.0, hostile), ("mha", 0.0, "none"), ("v2", 140.0, "over")]
    svg = charts.bars(rows, title=hostile, xlabel="mean")
    root = ET.fromstring(svg)
    assert not list(root.iter("script")) and not list(root.iter(f"{SVG}script"))  # text, never markup
    assert [t.text for t in root.iter(f"{SVG}text")].count(hostile) == 3  # the title, the name and the note
    bars = bars_of(svg)
    lengths = {bar.find(f"{SVG}title").text: float(bar.get("width")) for bar in bars}
    assert len(bars) == 3 and lengths["100 %"] == pytest.approx(2 * lengths["50 %"], abs=0.2)  # mha's 0 draws none
    assert lengths["140 %"] == lengths["100 %"]  # capped at the axis' end
    hundred = float(texts(svg)["100"].get("x"))  # the x axis' 100 %, left of the notes
    full = next(bar for bar in bars if bar.find(f"{SVG}title").text == "100 %")
    assert float(full.get("x")) + float(full.get("width")) == pytest.approx(hundred, abs=0.1)
    assert all(float(texts(svg)[note].get("x")) > hundred for note in ("mean 7.5/15, 0 at zero", "none"))
    width = float(ET.fromstring(svg).get("width"))
    for text in ET.fromstring(svg).iter(f"{SVG}text"):  # the notes end inside the picture (11 px: ~6 px a character)
        if text.get("text-anchor") == "start":
            assert float(text.get("x")) + 6 * len(text.text) <= width, text.text
    names = [t for t in ET.fromstring(svg).iter(f"{SVG}text") if t.get("text-anchor") == "end" and t.text in
             ("causal", hostile, "mha", "v2")]
    assert [t.text for t in sorted(names, key=lambda t: float(t.get("y")))] == ["causal", hostile, "mha", "v2"]  # in order


def test_text_xml_forbids_and_names_too_long_for_the_margin_are_made_safe():
    odd = "a\x01b\x0bc\ufffed\ud800e"  # a control character, a line break, a noncharacter, a lone surrogate
    svg = charts.bars([(odd, 50.0, odd), ("x" * 63, 10.0, "n")], title=odd, xlabel=odd)
    svg.encode("utf-8")  # writable, as every picture is
    bars_of(svg)  # and valid XML, whatever the text
    shown = texts(svg)
    assert "ab c\ufffdd\ufffde" in shown
    long_name = next(text for text in shown if text.startswith("xxx"))
    assert len(long_name) == charts.NAME_CHARACTERS and long_name.endswith("…")
    # The margin holds the names: each starts right of the picture's edge (at about 7 px a character).
    for name in ("ab c\ufffdd\ufffde", long_name):
        assert float(shown[name].get("x")) >= charts.CHARACTER_WIDTH * len(name)


def test_a_class_with_nobody_graded_still_gets_its_pictures():
    assert bars_of(charts.histogram([], 75, title="Score distribution (0 graded)", xlabel="total")) == []
    assert bars_of(charts.bars([], title="Per exercise", xlabel="mean")) == []
