"""The misconception catalog: known mistakes, each a small change of the reference, and when
one of them is what a student made.

``tests/<assignment>/catalog/<stem>.toml`` lists ``[[mistake]]`` tables: each :class:`Mistake` is a text
replacement on ``solutions/<assignment>/<stem>.py`` and the concept it teaches. The same
list is the project's kept mutants (every hidden test must fail on some mistake).

A concept is named only when its mistake is **confirmed**: run in this trusted process on
the same probes, with the same inputs and seeds, the mistaken reference gives exactly what the
student's code gave on every probe the mistake changes (its *footprint*). Probes in training
mode are left out of footprints (the order of random draws is a matter of style), except for
mistakes marked ``random`` (where dropout goes).

Here: the mistakes, how two probe results are compared, and which mistakes are confirmed. The
results they are compared with come from a ``source``: :class:`grader.diagnosis.live_reference.Reference`
runs probes on the reference and on mistakes live (instructor's side); ``Table`` reads the same
results precomputed for the public probes (a student's template has no solutions), see
:mod:`grader.diagnosis.public_catalog`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import torch

from grader.diagnosis.tolerance import ATOL
from grader.sandbox import wire
from grader.sandbox.protocol import FAILED, unwrap

MASKED = -1e4  # a score at or below this is masked (-inf, -1e9, finfo.min all mean "hidden")


@dataclass(frozen=True)
class Mistake:
    """One known mistake: ``old`` becomes ``new`` in the reference ``stem``.py."""

    stem: str
    # What was changed, for instructors and the project's tests.
    description: str
    old: str
    new: str
    # The concept shown to a student when this mistake is confirmed ("" = never named).
    concept: str = ""
    # Compare training-mode probes too (the mistake is about where dropout goes).
    random: bool = False

    def apply(self, source: str) -> str:
        """The reference source with this mistake made (``old`` must occur exactly once)."""
        if source.count(self.old) != 1:
            raise ValueError(f"{self.stem}: {self.description!r}: the text to change must occur exactly once")
        return source.replace(self.old, self.new)


class CatalogError(ValueError):
    """A catalog file that cannot be read as a list of mistakes (the message names the file)."""


def load(suite: Path) -> list[Mistake]:
    """The mistakes of every ``suite/catalog/<stem>.toml`` (``[[mistake]]`` tables with
    ``description``, ``old``, ``new``, ``concept`` and optionally ``random``), in order of file
    name; none when the suite has no catalog."""
    mistakes = []
    for path in sorted((suite / "catalog").glob("*.toml")):
        try:
            entries = tomllib.loads(path.read_text())["mistake"]
            mistakes += [Mistake(path.stem, **entry) for entry in entries]
        except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
            raise CatalogError(f"{path}: not a list of [[mistake]] tables with description, old, new, concept "
                               f"({type(exc).__name__}: {exc})") from None
    return mistakes


# -- comparing probe results ------------------------------------------------------------------------
def same_tensor(a: torch.Tensor, b: torch.Tensor, atol: float = ATOL) -> bool:
    """Equal shapes and values within ``atol``; every score <= -1e4 counts as masked (-inf)."""
    if tuple(a.shape) != tuple(b.shape) or a.is_floating_point() != b.is_floating_point():
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    if a.dtype == b.dtype and torch.equal(a, b):  # exactly equal (the common case): one cheap op
        return True
    if a.numel() and not _close(float(a.detach().reshape(-1)[0]), float(b.detach().reshape(-1)[0]), atol):
        return False  # the first values differ already (most comparisons with the catalog's mistakes): no tensor op
    a, b = a.detach().double(), b.detach().double()
    a = torch.where(a <= MASKED, torch.full_like(a, -torch.inf), a)
    b = torch.where(b <= MASKED, torch.full_like(b, -torch.inf), b)
    return bool(torch.isclose(a, b, atol=atol, rtol=0, equal_nan=True).all())


def _close(x: float, y: float, atol: float) -> bool:
    """:func:`same_tensor` for one pair of values."""
    x, y = (-math.inf if x <= MASKED else x), (-math.inf if y <= MASKED else y)
    return x == y or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= atol


_WHERE = re.compile(r"\s*\([^()]*, line \d+[^()]*\)")


def agree(a, b) -> bool:
    """Whether two probe results are the same (tensors within tolerance, errors by type and message)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and same_tensor(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        a, b = {k: v for k, v in a.items() if k != "steps"}, {k: v for k, v in b.items() if k != "steps"}
        return a.keys() == b.keys() and all(agree(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(agree(x, y) for x, y in zip(a, b))
    if isinstance(a, str) and isinstance(b, str):
        return _WHERE.sub("", a)[:300] == _WHERE.sub("", b)[:300]
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= ATOL
    return a == b


def failure(kind: str, message: str) -> dict:
    """A probe that raised, as a comparable result."""
    return {FAILED: kind, "message": _WHERE.sub("", str(message))[:300]}


def probe_key(probe: str, kwargs) -> str:
    """A stable name for one probe call: its function and its plain-data arguments."""
    text = json.dumps([probe, kwargs], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def is_random(kwargs: dict) -> bool:
    """A probe whose result depends on dropout's random draws (training mode)."""
    return kwargs.get("train") is True or kwargs.get("forward_seed") is not None


def warming(source, calls):
    """Compute (and keep in this process's cache) every result that diagnosing these probes may
    need, one result per step of the generator: the reference's and each concept mistake's, for
    ``(stem, probe, kwargs)`` calls. Yields the stem of each result computed.

    A batch steps it in its collecting process whenever that process has nothing else to do, so
    every grading process forked afterwards finds the results computed
    (:mod:`grader.batch.class_session`). Random state is kept as it was (:func:`grader.diagnosis.live_reference.run_probe`).
    """
    for stem, probe, kwargs in calls:
        source.result(stem, None, probe, kwargs)
        yield stem
        for name, _ in source.concepts(stem):
            changes(source, stem, name, probe, kwargs)
            yield stem


def changes(source, stem: str, mistake: str, probe: str, kwargs: dict, key: str | None = None) -> bool:
    """Whether ``mistake`` changes the reference's result on one probe. The same for every student, so
    it is kept on ``source`` (a batch's grading processes inherit what their collector computed)."""
    known = source.__dict__.setdefault("_changes", {})
    key = (stem, mistake, key or probe_key(probe, wire.encode_args(kwargs)))
    if key not in known:
        known[key] = not agree(unwrap(source.result(stem, mistake, probe, kwargs)),
                               unwrap(source.result(stem, None, probe, kwargs)))
    return known[key]


def confirm(source, stem: str, probes: list[tuple[str, dict, object]]) -> list[str]:
    """The concepts of ``stem``'s mistakes that reproduce the student's results.

    ``probes`` are ``(probe, kwargs, student result)`` of that module; ``source`` is a
    :class:`grader.diagnosis.live_reference.Reference` or a :class:`grader.diagnosis.public_catalog.Table`.
    A mistake is confirmed when it changes at least one probe and the student's result equals the
    mistake's on every probe it changes. The confirmed mistakes must together explain every probe where the student's
    result differs from the reference's; otherwise something unknown is there too and no
    concept is named. When one confirmed footprint lies inside another, only the larger is kept.
    When two mistakes with different concepts reproduce the very same results (few probes cannot
    tell them apart), there are two stories: none is named (the diagnosis shows the step and line).
    """
    kept = []
    for _, concept in confirmed(source, stem, probes):
        if concept not in kept:
            kept.append(concept)
    return kept


def confirmed(source, stem: str, probes: list[tuple[str, dict, object]]) -> list[tuple[str, str]]:
    """``(mistake name, concept)`` of the mistakes :func:`confirm` names: together they reproduce
    every result of ``stem`` that differs from the reference's. One mistake per footprint (two of
    one concept that give the same results are one story, told once)."""
    found: list[tuple[frozenset, str, str]] = []
    deviating = {index for index, (probe, kwargs, student) in enumerate(probes)
                 if not agree(unwrap(student), unwrap(source.result(stem, None, probe, kwargs)))}
    if not deviating:
        return []
    keys = [probe_key(probe, wire.encode_args(kwargs)) for probe, kwargs, _ in probes]
    deviating -= {index for index, (_, kwargs, _) in enumerate(probes) if is_random(kwargs)}  # style may explain these
    for name, mistake in source.concepts(stem):
        footprint, ok = set(), True
        for index, (probe, kwargs, student) in enumerate(probes):
            if is_random(kwargs) and not mistake.random:
                continue
            if not changes(source, stem, name, probe, kwargs, keys[index]):
                continue
            if not agree(unwrap(student), unwrap(source.result(stem, name, probe, kwargs))):
                ok = False
                break
            footprint.add(index)
        if ok and footprint:
            found.append((frozenset(footprint), name, mistake.concept))
    if not deviating <= set().union(*(footprint for footprint, _, _ in found)):
        return []
    kept, footprints = [], set()
    for footprint, name, concept in found:
        if any(footprint < other for other, _, _ in found):
            continue
        if any(footprint == other and concept != theirs for other, _, theirs in found):
            return []  # two stories for the same results
        if footprint not in footprints:
            footprints.add(footprint)
            kept.append((name, concept))
    return kept
