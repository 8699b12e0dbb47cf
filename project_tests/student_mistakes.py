"""Mistakes written as students write them (other styles than the catalog's), and correct code
in unusual styles: the project's own catalog, kept apart from ``tests/<a>/catalog/``. The data
is ``student_mistakes.toml`` (its header says what each entry means).

``MISTAKES``: ``(assignment, stem, description, old, new, concept)``: a text replacement on
the solution and the concept it must get; ``NONE`` means no concept may be named (the
diagnosis must localize or explain instead). ``CORRECT``: ``(assignment, stem, description,
old, new)``, code that must keep full marks.
"""

import functools
import tomllib
from pathlib import Path

from grader.diagnosis import catalog

NONE = ""
ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _catalog(assignment: str) -> dict[tuple[str, str], str]:
    """The concepts of an assignment's catalog, by ``(stem, description)``."""
    return {(m.stem, m.description): m.concept for m in catalog.load(ROOT / "tests" / assignment)}


def concept(entry: dict) -> str:
    """The concept an entry must get: its catalog mistake's (so the texts are never copied),
    the one an exception explains, or none."""
    if "catalog" in entry:
        return _catalog(entry["assignment"])[entry["stem"], entry["catalog"]]
    return entry.get("concept", NONE)


_DATA = tomllib.loads(Path(__file__).with_suffix(".toml").read_text())
MISTAKES = [(e["assignment"], e["stem"], e["description"], e["old"], e["new"], concept(e)) for e in _DATA["mistake"]]
CORRECT = [(e["assignment"], e["stem"], e["description"], e["old"], e["new"]) for e in _DATA["correct"]]
