"""The reference and the catalog's mistakes run live, in this trusted process, on a suite's probes.

The instructor's side has the reference solutions: :class:`Reference` answers what the reference
(or one mistake of the catalog) gives on one probe, by loading the solution (with the mistake's
text change made) as a fresh module and running the probe on it with torch's random state kept.
Everything here depends on the suite only, never on a submission, so every result is cached per
process (a batch's grading processes inherit what their collector computed). The student's side
reads the same results precomputed: :class:`grader.diagnosis.public_catalog.Table`.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import torch

from grader.diagnosis.catalog import Mistake, failure, load, probe_key
from grader.diagnosis.sent import numbers_of
from grader.sandbox import fault, probing, trace, wire


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
                            _Call(probe_key(probe, wire.encode_args(kwargs)), kwargs))

    def numbers(self, stem: str, mistake: str | None, probe: str, kwargs: dict) -> list[float]:
        """The Python numbers the reference's (or a mistake's) lines assign on one probe, in the order
        they run (a computation without tensors: see ``trace.Numbers``); [] for any other."""
        return _live_numbers(str(self.suite), str(self.catalog_suite), str(self.solutions), stem, mistake, probe,
                             _Call(probe_key(probe, wire.encode_args(kwargs)), kwargs))

    def result_built_on(self, stem: str, uses: tuple[str, ...], mistaken: tuple[tuple[str, tuple[str, ...]], ...],
                        probe: str, kwargs: dict):
        """What the reference ``stem`` gives on one probe when the reference modules it builds on
        (``uses``, in the order they load) carry known mistakes: ``mistaken`` is ``((module,
        (mistake name, ...)), ...)``. So: what a right ``stem`` gives on a student's dependency
        that makes those mistakes (``references = "private"``; the plugin's ``excuse``)."""
        return _built_on_result(str(self.suite), str(self.catalog_suite), str(self.solutions), stem, tuple(uses),
                                tuple(mistaken), probe, _Call(probe_key(probe, wire.encode_args(kwargs)), kwargs))


@dataclass(frozen=True)
class _Call:
    """One probe call as the caches' key: named by its probe key (:func:`probe_key`, the probe and
    its arguments as plain data); the arguments themselves (tensors: not hashable) ride along and
    take no part in its equality or hash."""

    key: str
    kwargs: dict = field(compare=False)


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
