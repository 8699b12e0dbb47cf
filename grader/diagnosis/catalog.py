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

Everything here depends on the suite only (never on a submission), so results are cached
per process. ``Reference`` runs probes on the reference and on mistakes live (instructor's
side); ``Table`` reads the same results precomputed for the public probes (a student's
template has no solutions), see :mod:`grader.diagnosis.public_catalog`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import math
import re
import sys
import tomllib
import types
from dataclasses import dataclass, field
from pathlib import Path

import torch

from grader.diagnosis.tolerance import ATOL
from grader.sandbox import fault, probing, trace, wire

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
    return {"$error": kind, "message": _WHERE.sub("", str(message))[:300]}


def unwrap(value):
    """A traced probe value without its steps (what the test sees)."""
    return value["$traced"] if isinstance(value, dict) and "$traced" in value else value


def probe_key(probe: str, kwargs) -> str:
    """A stable name for one probe call: its function and its plain-data arguments."""
    text = json.dumps([probe, kwargs], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def is_random(kwargs: dict) -> bool:
    """A probe whose result depends on dropout's random draws (training mode)."""
    return kwargs.get("train") is True or kwargs.get("forward_seed") is not None


# -- running probes in this (trusted) process ----------------------------------------------------------
def as_sent(value):
    """A probe's result as the sandbox would send it: exact tensors, lists, string keys."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().as_subclass(torch.Tensor)
    if isinstance(value, dict):
        return {str(k): as_sent(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_sent(v) for v in value]
    return value


def run_probe(function, module, kwargs: dict, steps: bool = True):
    """``function(module, **kwargs)`` with torch's random state kept as it was; a traced probe's
    value with its recorded steps only if ``steps`` (the reference's: a mistake's are never read)."""
    kwargs = _copy(kwargs)  # a probe may change its inputs in place (sequence_mask does)
    folder = str(Path(getattr(module, "__file__", "") or ".").parent)
    with torch.random.fork_rng(devices=[]), trace.student_files(folder), probing.sending_steps(steps):
        try:
            return as_sent(function(module, **kwargs))
        except Exception as exc:  # noqa: BLE001 - a mistake may raise, as student code may
            account = fault.describe_exception(exc, str(Path(getattr(module, "__file__", "") or ".").parent))
            found = failure(type(exc).__name__, str(exc))
            if account.get("grader_fault"):  # the probe's own code failed, not the module it probes
                found["grader_fault"] = account["where"]
            return found


def _copy(value):
    """A deep copy of probe arguments (tensors cloned)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(v) for v in value]
    return value


def load_source(stem: str, source: str, path: Path) -> types.ModuleType:
    """Execute ``source`` as a fresh module called ``stem`` (never put in ``sys.modules``)."""
    module = types.ModuleType(stem)
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the project's own reference
    return module


class Reference:
    """Results of the reference and of each catalog mistake on a suite's probes, run live."""

    def __init__(self, suite: Path, solutions: Path, catalog_suite: Path | None = None):
        """Probes from ``suite/probes``, the catalog of ``catalog_suite`` (default ``suite``)."""
        self.suite, self.solutions = suite, solutions
        self.catalog_suite = catalog_suite or suite
        self.mistakes = load(self.catalog_suite)

    def concepts(self, stem: str) -> list[tuple[str, Mistake]]:
        """``(name, mistake)`` for the mistakes of ``stem`` that name a concept."""
        return [(f"{stem}:{i}", m) for i, m in enumerate(self.mistakes) if m.stem == stem and m.concept]

    def result(self, stem: str, mistake: str | None, probe: str, kwargs: dict):
        """What the reference (``mistake`` None) or a named mistake gives on one probe."""
        return _live_result(str(self.suite), str(self.catalog_suite), str(self.solutions), stem, mistake, probe,
                            _Call(probe_key(probe, _jsonable(kwargs)), kwargs))

    def numbers(self, stem: str, mistake: str | None, probe: str, kwargs: dict) -> list[float]:
        """The Python numbers the reference's (or a mistake's) lines assign on one probe, in the order
        they run (a computation without tensors: see ``trace.Numbers``); [] for any other."""
        return _live_numbers(str(self.suite), str(self.catalog_suite), str(self.solutions), stem, mistake, probe,
                             _Call(probe_key(probe, _jsonable(kwargs)), kwargs))

    def result_built_on(self, stem: str, uses: tuple[str, ...], mistaken: tuple[tuple[str, tuple[str, ...]], ...],
                        probe: str, kwargs: dict):
        """What the reference ``stem`` gives on one probe when the reference modules it builds on
        (``uses``, in the order they load) carry known mistakes: ``mistaken`` is ``((module,
        (mistake name, ...)), ...)``. So: what a right ``stem`` gives on a student's dependency
        that makes those mistakes (``references = "private"``; the plugin's ``excuse``)."""
        return _built_on_result(str(self.suite), str(self.catalog_suite), str(self.solutions), stem, tuple(uses),
                                tuple(mistaken), probe, _Call(probe_key(probe, _jsonable(kwargs)), kwargs))


@dataclass(frozen=True)
class _Call:
    """One probe call as the caches' key: named by its probe key (:func:`probe_key`, the probe and
    its arguments as plain data); the arguments themselves (tensors: not hashable) ride along and
    take no part in its equality or hash."""

    key: str
    kwargs: dict = field(compare=False)


def _jsonable(value):
    return wire.encode_args(value)


@functools.lru_cache(maxsize=None)
def _loaded(catalog_suite: str) -> tuple:
    """The catalog of a suite, read once per process (:func:`load` reads every file each call)."""
    return tuple(load(Path(catalog_suite)))


@functools.lru_cache(maxsize=None)
def _module(catalog_suite: str, solutions: str, stem: str, mistake: str | None):
    path = Path(solutions) / f"{stem}.py"
    source = path.read_text()
    if mistake is not None:
        index = int(mistake.rsplit(":", 1)[1])
        source = _loaded(catalog_suite)[index].apply(source)
    return load_source(stem, source, path)


@functools.lru_cache(maxsize=None)
def _probes(suite: str, stem: str):
    path = Path(suite) / "probes" / f"{stem}.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"_trusted_probes_{Path(suite).parent.name}_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _probe_function(suite: str, stem: str, probe: str):
    """The probe function ``probe`` of ``stem`` (a built-in one, or from the suite's probes), or None."""
    from grader.sandbox import worker

    return worker.BUILTIN_PROBES.get(probe) or getattr(_probes(suite, stem), probe, None)


@functools.lru_cache(maxsize=4096)
def _live_result(suite, catalog_suite, solutions, stem, mistake, probe, call):
    try:
        module = _module(catalog_suite, solutions, stem, mistake)
    except Exception as exc:  # noqa: BLE001 - a mistake that breaks the import
        return failure(type(exc).__name__, str(exc))
    function = _probe_function(suite, stem, probe)
    if function is None:
        return failure("ProbeError", f"no probe {probe}")
    return run_probe(function, module, call.kwargs, steps=mistake is None)


@functools.lru_cache(maxsize=256)
def _live_numbers(suite, catalog_suite, solutions, stem, mistake, probe, call) -> list[float]:
    if mistake is None:
        value = _live_result(suite, catalog_suite, solutions, stem, None, probe, call)
    else:
        try:
            module = _module(catalog_suite, solutions, stem, mistake)
        except Exception:  # noqa: BLE001 - a mistake that breaks the import
            return []
        function = _probe_function(suite, stem, probe)
        value = run_probe(function, module, call.kwargs, steps=True) if function is not None else None
    return numbers_of(value)


def numbers_of(value) -> list[float]:
    """The values of the Python numbers a traced probe's value carries (``"numbers"``), else []."""
    found = value.get("numbers") if isinstance(value, dict) and "$traced" in value else None
    if not isinstance(found, list):
        return []
    return [float(n[1]) for n in found[:trace.MAX_NUMBERS]
            if isinstance(n, list) and len(n) >= 2 and type(n[1]) in (int, float)]


@functools.lru_cache(maxsize=1024)
def _built_on_result(suite, catalog_suite, solutions, stem, uses, mistaken, probe, call):
    changed = dict(mistaken)
    names = (*uses, stem)
    saved = {name: sys.modules.get(name) for name in names}
    try:  # each module fresh, under its stem while the next ones load and the probe runs (it may import them)
        for name in names:
            path = Path(solutions) / f"{name}.py"
            try:
                source = path.read_text()
                for mistake in changed.get(name, ()):
                    source = _loaded(catalog_suite)[int(mistake.rsplit(":", 1)[1])].apply(source)
                sys.modules[name] = load_source(name, source, path)
            except Exception as exc:  # noqa: BLE001 - a mistake that breaks the import
                return failure(type(exc).__name__, str(exc))
        function = _probe_function(suite, stem, probe)
        if function is None:
            return failure("ProbeError", f"no probe {probe}")
        return run_probe(function, sys.modules[stem], call.kwargs, steps=False)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def warming(source, calls):
    """Compute (and keep in this process's cache) every result that diagnosing these probes may
    need, one result per step of the generator: the reference's and each concept mistake's, for
    ``(stem, probe, kwargs)`` calls. Yields the stem of each result computed.

    A batch steps it in its collecting process whenever that process has nothing else to do, so
    every grading process forked afterwards finds the results computed
    (:mod:`grader.batch.class_session`). Random state is kept as it was (:func:`run_probe`).
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
    key = (stem, mistake, key or probe_key(probe, _jsonable(kwargs)))
    if key not in known:
        known[key] = not agree(unwrap(source.result(stem, mistake, probe, kwargs)),
                               unwrap(source.result(stem, None, probe, kwargs)))
    return known[key]


def confirm(source, stem: str, probes: list[tuple[str, dict, object]]) -> list[str]:
    """The concepts of ``stem``'s mistakes that reproduce the student's results.

    ``probes`` are ``(probe, kwargs, student result)`` of that module; ``source`` is a
    :class:`Reference` or a :class:`grader.diagnosis.public_catalog.Table`. A mistake is confirmed when
    it changes at least one probe and the student's result equals the mistake's on every probe
    it changes. The confirmed mistakes must together explain every probe where the student's
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
    keys = [probe_key(probe, _jsonable(kwargs)) for probe, kwargs, _ in probes]
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
