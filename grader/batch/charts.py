"""The class report's two pictures, written as SVG: the distribution of the totals (a histogram) and
each exercise's mean (a bar each, its mean and number of zeros beside it).

Two bar charts need no plotting library: drawn by matplotlib, they cost ``batch`` 0.4 s of CPU to
import it and 0.17 s to draw them after the last grade (docs/benchmarks.md); written here, a
millisecond. An SVG file is an image every browser shows (``<img>``), and Markdown viewers too.
Every text is made safe (:func:`grader.hygiene.clean`, and the two characters XML forbids that it
keeps), capped and escaped for XML; the numbers are formatted here.
"""

from __future__ import annotations

import bisect
import html
import math

from grader.hygiene import clean

FONT = "font-family:sans-serif;font-size:12px;fill:#222"
HISTOGRAM_COLOUR = "#4c72b0"
BAR_COLOUR = "#55a868"
AXIS = 'stroke="#444" stroke-width="1"'


def histogram_counts(values: list[float], top: float, bins: int) -> list[int]:
    """How many ``values`` fall in each of ``bins`` equal bins over ``[0, top]``: bin ``i`` holds
    ``edge[i] <= v < edge[i + 1]``, the last one ``top`` too; values outside are left out (as
    numpy's and matplotlib's histograms do)."""
    edges = [i * (top / bins) for i in range(bins)] + [top]  # as numpy.linspace makes them
    counts = [0] * bins
    for value in values:
        if 0 <= value <= top:
            counts[min(bisect.bisect_right(edges, value) - 1, bins - 1)] += 1
    return counts


def _steps(smallest: float):
    """1, 2, 5, 10, 20, 50, ... times a power of ten, from the last power of ten at or below ``smallest``."""
    magnitude = 10.0 ** math.floor(math.log10(smallest))
    while True:
        yield from (magnitude, 2 * magnitude, 5 * magnitude)
        magnitude *= 10


def integer_ticks(largest: int, most: int = 6) -> list[int]:
    """Ticks 0, step, 2 step, ... to the first at or above ``largest`` (at least 1), with the
    smallest step of 1, 2, 5, 10, 20, 50, ... that needs at most ``most`` of them."""
    largest = max(largest, 1)
    step = next(int(s) for s in _steps(1) if math.ceil(largest / s) + 1 <= most)
    return [step * k for k in range(math.ceil(largest / step) + 1)]


def ticks_within(top: float, most: int = 8) -> list[float]:
    """Ticks 0, step, 2 step, ... up to ``top`` (none beyond it), the step 1, 2 or 5 times a power of
    ten, the smallest that needs at most ``most`` of them."""
    step = next(s for s in _steps(top / most) if math.floor(top / s + 1e-9) + 1 <= most)
    return [round(step * k, 10) for k in range(math.floor(top / step + 1e-9) + 1)]


NAME_CHARACTERS = 40  # an exercise's name beside its bar, at most (a longer one is cut, "…")
CHARACTER_WIDTH = 7  # pixels a character of the names takes, about, at 12 px
NOTE_CHARACTERS = 60  # a note beside a bar, at most
NOTE_WIDTH = 6  # pixels a character of the notes takes, about, at 11 px


def escape(text: str, limit: int = 200) -> str:
    """``text`` as the content of an SVG element or attribute: one line, no control characters,
    every character one XML allows (a noncharacter becomes U+FFFD), at most ``limit`` characters."""
    return html.escape(clean(text, limit).replace("\ufffe", "\ufffd").replace("\uffff", "\ufffd"), quote=True)


def _document(width: int, height: int, title: str, body: list[str]) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" style="{FONT}">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
        *body,
        "</svg>",
        "",
    ])


def _text(x: float, y: float, text: str, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


def _frame(left: float, upper: float, base: float, plot_w: float, height: int, title: str,
           ticks: list[tuple[float, str]], xlabel: str) -> list[str]:
    """What both pictures draw around their bars: the title, the x axis with its ticks (``(x, label)``)
    and its label below, the y axis' line."""
    body = [_text(left + plot_w / 2, 22, title, "middle", ' style="font-size:14px"')]
    for x, label in ticks:
        body.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" {AXIS}/>')
        body.append(_text(x, base + 17, label, "middle"))
    return body + [f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" {AXIS}/>',
                   f'<line x1="{left}" y1="{upper}" x2="{left}" y2="{base}" {AXIS}/>',
                   _text(left + plot_w / 2, height - 10, xlabel, "middle")]


def histogram(values: list[float], top: float, *, title: str, xlabel: str, ylabel: str = "students",
              width: int = 700, height: int = 320) -> str:
    """A histogram of ``values`` over ``[0, top]`` (between 5 and 20 bins, one per value below 20)."""
    top = top if top > 0 else 1.0
    bins = min(20, max(5, len(values)))
    counts = histogram_counts(values, top, bins)
    ticks = integer_ticks(max(counts, default=0))
    left, right, upper, lower = 60, 20, 40, 50
    plot_w, plot_h = width - left - right, height - upper - lower
    base = upper + plot_h
    scale = plot_h / ticks[-1]
    body = []
    for tick in ticks:  # the y axis: a label and a faint line per tick
        y = base - tick * scale
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>')
        body.append(_text(left - 6, y + 4, str(tick), "end"))
    slot = plot_w / bins
    for i, count in enumerate(counts):
        if count:
            body.append(f'<rect class="bar" x="{left + i * slot + 0.5:.1f}" y="{base - count * scale:.1f}" '
                        f'width="{max(slot - 1, 0.5):.1f}" height="{count * scale:.1f}" fill="{HISTOGRAM_COLOUR}">'
                        f"<title>{count}</title></rect>")
    body += _frame(left, upper, base, plot_w, height, title,
                   [(left + plot_w * tick / top, f"{tick:g}") for tick in ticks_within(top)], xlabel)
    body.append(_text(16, upper + plot_h / 2, ylabel, "middle", f' transform="rotate(-90 16 {upper + plot_h / 2:.1f})"'))
    return _document(width, height, title, body)


def bars(rows: list[tuple[str, float, str]], *, title: str, xlabel: str, width: int = 800) -> str:
    """One horizontal bar per ``(name, percent, note)``, in order from the top: its length the
    percent (0 to 100), the note beside the 100 % mark. ``width`` at least: wider where the names
    and the notes need it."""
    rows = [(clean(name, NAME_CHARACTERS), percent, clean(note, NOTE_CHARACTERS)) for name, percent, note in rows]
    longest = max((len(name) for name, _, _ in rows), default=0)
    notes = max((len(note) for _, _, note in rows), default=0)
    left, right, upper, lower, row = 20 + CHARACTER_WIDTH * longest, 20, 40, 50, 50
    height = upper + lower + row * max(len(rows), 1)
    # The bars take two thirds of the axis, the notes the rest from 102 %: room for the longest.
    plot_w = max(width - left - right, math.ceil((NOTE_WIDTH * notes + 10) / (1 - 1.02 * 100 / 150)))
    width = left + plot_w + right
    hundred = plot_w * 100 / 150
    base = height - lower
    body = []
    for i, (name, percent, note) in enumerate(rows):
        middle = upper + row * i + row / 2
        length = hundred * min(max(percent, 0.0), 100.0) / 100
        body.append(_text(left - 6, middle + 4, name, "end"))
        if length > 0:
            body.append(f'<rect class="bar" x="{left}" y="{middle - row * 0.4:.1f}" width="{length:.1f}" '
                        f'height="{row * 0.8:.1f}" fill="{BAR_COLOUR}"><title>{percent:.3g} %</title></rect>')
        body.append(_text(left + hundred * 102 / 100, middle + 4, note, extra=' style="font-size:11px"'))
    body += _frame(left, upper, base, plot_w, height, title,
                   [(left + hundred * tick / 100, str(tick)) for tick in (0, 25, 50, 75, 100)], xlabel)
    return _document(width, height, title, body)
