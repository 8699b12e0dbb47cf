"""The data that crosses the sandbox's border, typed: what the trusted process asks, and what comes back.

The standard library only: the zygote imports this before torch, the local runner's interpreters
on any OS, and a released template ships it. On the wire it is JSON (:mod:`grader.sandbox.wire`),
as before; each type here says how it is written (``to_wire``) and read (``from_wire``).

* Asked: a :class:`Plan` (one submission's folder, the :class:`Limits`, and a :class:`ModulePlan`
  per module, each a list of :class:`ProbeCall`), built by the grading plugin and by the
  environment's self-test, run by ``client.Sandbox`` (the zygote) or ``local.LocalRunner``.
* Answered: per probe an outcome (``ok`` with a value, or one of :data:`OUTCOMES` with an
  :class:`ErrorAccount`). What a worker sends is student-controlled: :meth:`ErrorAccount.from_wire`
  keeps only fields of the right type (the client has cleaned their text before).
* A traced probe's value is an envelope, ``{"$traced": value, "steps": [...]}``, and a probe that
  raised is compared as ``{"$error": type, "message": ...}``: :func:`traced`, :func:`is_traced`,
  :func:`unwrap`, :func:`is_failure`. A recorded step is a :class:`Step`; the shapes sent with an
  error are :class:`ShapeStep`\\ s, written as a line of text (:func:`shapes_text`, read back by
  :func:`parse_shapes`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

OUTCOMES = frozenset({"ok", "error", "timeout", "crash", "module_error"})
TIMEOUT = "Timeout"  # the type of every timeout's error: a probe's, an import's, a spent budget's
CRASH = "Crash"  # the type of every error of a worker that died or broke its channel


@dataclass(frozen=True)
class Limits:
    """What every sandboxed process may use (``Settings.sandbox_limits``: each field is the
    setting of the same name, documented there)."""

    probe_timeout: float
    module_budget: float
    memory_mb: int
    cpu_seconds: int
    file_mb: int
    workers: int
    output_chars: int
    sandbox_user: str

    def to_wire(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, raw: dict) -> Limits:
        return cls(**raw)


@dataclass(frozen=True)
class ProbeCall:
    """One probe to run: the test's id, the probe function's name, its arguments as plain data
    (tensors encoded, :func:`grader.sandbox.wire.encode_args`)."""

    id: str
    probe: str
    kwargs: dict

    def to_wire(self) -> dict:
        return {"id": self.id, "probe": self.probe, "kwargs": self.kwargs}

    @classmethod
    def from_wire(cls, raw: dict) -> ProbeCall:
        return cls(raw["id"], raw["probe"], raw.get("kwargs", {}))


@dataclass(frozen=True)
class ModulePlan:
    """One module's part of a plan: its probe file, the reference modules it builds on (stem:
    path; none where references are private), its phase (:meth:`grader.rubric.Rubric.phase`), its
    probes, and, for a second plan of the same submission (the diagnosis's re-run), the seconds
    left of its time budget (None: the whole budget)."""

    probes_file: str
    uses: dict[str, str]
    phase: int
    probes: list[ProbeCall]
    budget: float | None = None

    def budget_within(self, limits: Limits) -> float:
        """Seconds this module's probes may take together."""
        return limits.module_budget if self.budget is None else min(float(self.budget), limits.module_budget)

    def to_wire(self) -> dict:
        raw = {"probes_file": self.probes_file, "uses": self.uses, "phase": self.phase,
               "probes": [probe.to_wire() for probe in self.probes]}
        return raw if self.budget is None else {**raw, "budget": self.budget}

    @classmethod
    def from_wire(cls, raw: dict) -> ModulePlan:
        return cls(raw["probes_file"], raw["uses"], raw["phase"], [ProbeCall.from_wire(p) for p in raw["probes"]],
                   raw.get("budget"))


@dataclass(frozen=True)
class Plan:
    """What one run of the sandbox does: every probe of ``modules`` on the submission copied to
    ``sandbox_dir``, under ``limits``; ``steps``: traced probes send their recorded steps (only a
    diagnosis reads them)."""

    sandbox_dir: str
    modules: dict[str, ModulePlan]
    limits: Limits
    steps: bool = True

    def to_wire(self) -> dict:
        return {"sandbox_dir": self.sandbox_dir, "modules": {stem: m.to_wire() for stem, m in self.modules.items()},
                "limits": self.limits.to_wire(), "steps": self.steps}

    @classmethod
    def from_wire(cls, raw: dict) -> Plan:
        return cls(raw["sandbox_dir"], {stem: ModulePlan.from_wire(m) for stem, m in raw["modules"].items()},
                   Limits.from_wire(raw["limits"]), raw["steps"])


@dataclass(frozen=True)
class ErrorAccount:
    """Why a probe gave no value (what ``grader.sandbox.fault.describe_exception`` writes in the
    worker, or what the runner saw: a timeout, a crash). Every field but ``type`` and ``message``
    is absent for most errors."""

    type: str = ""  # the exception's class name, TIMEOUT or CRASH
    message: str = ""
    where: str = ""  # "causal.py, line 42, in forward" (the student's), or the probe's own line
    not_attempted: bool = False  # the student's stub still raises NotImplementedError
    probe_error: bool = False  # a probing.ProbeError: the probe's message for a result it cannot grade
    grader_fault: bool = False  # raised in the probe's own code (the sandbox's word: checked on the reference)
    entered: str = ""  # where the probe entered the student's files, when it raised in another of them
    called_from: str = ""  # the outermost line of the same file that led to where it raised
    shapes: str = ""  # the shapes of the steps it was computed from (:func:`shapes_text`)

    def to_wire(self) -> dict:
        """The fields that are set, as the worker writes them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}

    @classmethod
    def from_wire(cls, raw: dict) -> ErrorAccount:
        """The fields of ``raw`` that have their type (``raw`` is student-controlled: anything else is left out)."""
        kept = {}
        for f in dataclasses.fields(cls):
            value = raw.get(f.name)
            if type(value) is type(f.default):
                kept[f.name] = value
        return cls(**kept)


# -- the envelopes of a probe's value ----------------------------------------------------------------------
TRACED, FAILED = "$traced", "$error"


def traced(value, steps: list | None = None, numbers: list | None = None) -> dict:
    """A traced probe's value (what the test sees), with the steps it took (and, for a
    computation without tensors, the numbers its lines assigned) where they are sent."""
    envelope: dict = {TRACED: value}
    if steps is not None:
        envelope["steps"] = steps
    if numbers is not None:
        envelope["numbers"] = numbers
    return envelope


def is_traced(value) -> bool:
    """Whether ``value`` is a traced probe's envelope."""
    return isinstance(value, dict) and TRACED in value


def unwrap(value):
    """A traced probe's value without its steps (what the test sees); any other value as it is."""
    return value[TRACED] if is_traced(value) else value


def is_failure(value) -> bool:
    """Whether ``value`` is a probe that raised, as the catalog compares it."""
    return isinstance(value, dict) and FAILED in value


# -- recorded steps and their shapes -----------------------------------------------------------------------
class Step(NamedTuple):
    """One recorded step of a computation (``grader.sandbox.trace``), as the diagnosis reads it
    (its where and parents checked: :func:`checked_where`, :func:`checked_parents`)."""

    label: str  # "softmax", "x @ W_query", "W_query" (a submodule's output)
    value: object  # the tensor it computed
    where: list  # [file, line, calling line] (+ the diagnosed module's line, for a step made in another file)
    parents: list  # the earlier steps (indices) and the module's attributes (names) it was computed from


def checked_parents(value) -> list:
    """A step's parents (step indices and attribute names), checked; [] for anything else."""
    if not isinstance(value, list):
        return []
    return [p for p in value[:16] if (type(p) is int and p >= 0) or (type(p) is str and p.isidentifier() and len(p) <= 40)]


def checked_where(value) -> list:
    """``[file, line, calling line]`` of a step (checked; the calling line may be absent or 0),
    else ``["", 0, 0]``; with a fourth number when sent (a step made in another file of the
    student's: the line of the diagnosed module that called into it, 0 if none)."""
    if (isinstance(value, list) and len(value) in (2, 3, 4) and isinstance(value[0], str)
            and all(type(n) is int and n >= 0 for n in value[1:]) and value[1] > 0):
        return [value[0], value[1], value[2] if len(value) >= 3 else 0] + ([value[3]] if len(value) == 4 else [])
    return ["", 0, 0]


class ShapeStep(NamedTuple):
    """A step sent with an error, by its shape alone (its label, shape, where and parents)."""

    label: str
    shape: list[int]
    where: list
    parents: list[int]

    def token(self, index: int) -> str:
        """``"4:W_o|6x2@mha.py:30/0<3"``: index, label (spaces as ``~``), shape (``s``: a scalar),
        file, line and calling line, parents."""
        place = "/".join(str(n) for n in self.where[1:3])
        return (f"{index}:{self.label.replace(' ', '~')}|{'x'.join(map(str, self.shape)) or 's'}"
                f"@{self.where[0] or '-'}:{place}<{','.join(map(str, self.parents))}")


def shapes_text(steps: dict[int, ShapeStep], received: list, limit: int) -> str:
    """``steps`` (latest first) and what the call that raised ``received`` (step indices and
    attribute names: the first token, ``!<...``) as one line of at most ``limit`` characters
    (``client.MAX_SHAPES``): as many steps as fit."""
    tokens = ["!<" + ",".join(str(p) for p in received)] if received else []
    size = len(tokens[0]) if tokens else 0
    for index, step in steps.items():
        token = step.token(index)
        if size + len(token) + 1 > limit or " " in token:
            break
        tokens.append(token)
        size += len(token) + 1
    return " ".join(tokens)


def parse_shapes(text) -> tuple[dict[int, ShapeStep], list]:
    """:func:`shapes_text` read back (from across the border: checked), ``({}, [])`` for anything else."""
    if not isinstance(text, str):
        return {}, []
    found, received = {}, []
    try:
        for token in text.split()[:400]:
            if token.startswith("!<"):
                received = [int(n) if n.isdigit() else n for n in token[2:].split(",")
                            if n.isdigit() or (n.isidentifier() and len(n) <= 40)][:16]
                continue
            index, _, token = token.partition(":")
            token, _, parents = token.partition("<")
            label, _, rest = token.partition("|")
            shape, _, where = rest.partition("@")
            name, _, line = where.rpartition(":")
            dims = [] if shape == "s" else [int(n) for n in shape.split("x")]
            found[int(index)] = ShapeStep(label.replace("~", " "), dims, checked_where([name, *map(int, line.split("/"))]),
                                          [int(n) for n in parents.split(",") if n][:16])
    except ValueError:
        return {}, []
    return found, received

