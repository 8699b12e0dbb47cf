"""The class report's pictures, written as SVG by ``grader.batch.charts``: the same bins as numpy's
(and matplotlib's) histogram, bars as long as their numbers, valid XML whatever the text."""

from __future__ import annotations

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


@pytest.mark.parametrize("top", [0.6, 1, 5, 7, 10, 14, 33.3, 60, 75, 100, 1000])
def test_axis_ticks_stay_within_the_top_in_round_steps(top):
    ticks = charts.ticks_within(top)
    step = ticks[1]
    assert ticks[0] == 0 and ticks[-1] <= top < ticks[-1] + step and 2 <= len(ticks) <= 8
    assert f"{step:g}".replace("0.", "").strip("0") in ("1", "2", "5")


def bars_of(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg" and root.find(f"{SVG}title") is not None
    return [rect for rect in root.iter(f"{SVG}rect") if rect.get("class") == "bar"]


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


def test_an_exercises_bar_is_as_long_as_its_percent_and_every_text_is_escaped():
    hostile = '<script>alert(1)</script> & "quoted" \'x\''
    rows = [("causal", 50.0, "mean 7.5/15, 0 at zero"), (hostile, 100.0, hostile), ("mha", 0.0, "none"), ("v2", 140.0, "over")]
    svg = charts.bars(rows, title=hostile, xlabel="mean")
    root = ET.fromstring(svg)
    assert not list(root.iter("script")) and not list(root.iter(f"{SVG}script"))  # text, never markup
    assert [t.text for t in root.iter(f"{SVG}text")].count(hostile) == 3  # the title, the name and the note
    bars = bars_of(svg)
    lengths = {bar.find(f"{SVG}title").text: float(bar.get("width")) for bar in bars}
    assert len(bars) == 3 and lengths["100 %"] == pytest.approx(2 * lengths["50 %"])  # mha's 0 draws none
    assert lengths["140 %"] == lengths["100 %"]  # capped at the axis' end


def test_a_class_with_nobody_graded_still_gets_its_pictures():
    assert bars_of(charts.histogram([], 75, title="Score distribution (0 graded)", xlabel="total")) == []
    assert bars_of(charts.bars([], title="Per exercise", xlabel="mean")) == []
