"""The trusted side of the border: start the zygote, send a plan, decode what comes back."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import accelerators
from grader.hygiene import clean
from grader.sandbox import wire
from grader.sandbox.protocol import CRASH, OUTCOMES, ErrorAccount, Plan

ZYGOTE = Path(__file__).with_name("zygote.py")
MAX_MESSAGE = 1000  # characters of one error message from the sandbox
MAX_SHAPES = 4000  # characters of the steps' shapes sent with an error (failure_shapes.shapes_text)
MAX_PLAN_BYTES = 256 * 1024 * 1024  # results of one plan kept in this process; beyond, errors
MAX_OUTPUT = 20_000  # characters of one module's captured output (the zygote keeps fewer)


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the student's code)."""


_UNDECODED = object()


class ProbeOutcome:
    """What one probe produced: ``ok`` with a value, or why not (``outcome``: ok, error, timeout,
    crash, module_error or missing).

    An ok value arrives as plain data (``raw``) and is decoded, and so checked, the first time
    the outcome is read: a value that proves unusable makes it an ``error``. A batch's grading
    process never reads the values of the checks it records as passed (:mod:`grader.batch.passes`),
    which it finds by ``digest`` alone.
    """

    def __init__(self, outcome: str, error: ErrorAccount | None = None, *, raw: object = _UNDECODED, digest: str = ""):
        self._outcome, self._error, self._raw = outcome, error or ErrorAccount(), raw
        self.digest = digest if raw is not _UNDECODED else ""  # of the line that brought an ok value; "" for none
        self._value = None
        self._decoded = raw is _UNDECODED

    def _decode(self) -> None:
        if self._decoded:
            return
        self._decoded = True
        try:
            self._value = wire.decode(self._raw)
        except wire.WireError as exc:
            self._outcome, self._error = "error", ErrorAccount("WireError", f"unusable result: {exc}")
        except Exception as exc:  # noqa: BLE001 - whatever the data, it costs only this probe
            self._outcome, self._error = "error", ErrorAccount("WireError", f"unusable result ({type(exc).__name__})")

    @property
    def outcome(self) -> str:
        self._decode()
        return self._outcome

    @property
    def value(self) -> object:
        self._decode()
        return self._value

    @property
    def error(self) -> ErrorAccount:
        self._decode()
        return self._error

    def sent_ok(self) -> bool:
        """Whether the sandbox sent a value (not decoded yet: it may still prove unusable)."""
        return self._outcome == "ok"


@dataclass
class PlanResult:
    """All outcomes of one plan, by probe id, and each module's captured output."""

    outcomes: dict[str, ProbeOutcome] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)
    # How each module's workers were isolated: ``confine.NAMESPACES`` or why not.
    isolation: dict[str, str] = field(default_factory=dict)
    # Seconds of its time budget each module used (measured by its supervisor, not by student code).
    spent: dict[str, float] = field(default_factory=dict)


class Sandbox:
    """One zygote for a grading run; :meth:`run` may be called once per submission."""

    def __init__(self, *, many: bool = False):
        """``many``: many plans will follow (a batch); the zygote then makes its forks cheaper
        once, at start (:mod:`grader.sandbox.hugepages`), which a single plan would not repay."""
        # This process holds the secrets of the environment, the tests and the report's path:
        # no process of the same user may ptrace it or read its /proc files.
        from grader.sandbox import linux  # Linux only: imported here, so that other OSes can use this module's types

        linux.set_dumpable(False)
        self.isolation: set[str] = set()
        # Per thread (``grade`` checks the sandbox in a thread beside its own): (pid, connection, stream).
        self._local = threading.local()
        self._tmp = tempfile.TemporaryDirectory(prefix="grader-sandbox-")
        self.root = Path(self._tmp.name)
        self.root.chmod(0o711)  # workers may enter (to reach submissions), not list
        private = self.root / "zygote"
        private.mkdir(mode=0o700)
        self.socket_path = str(private / "socket")
        self.log = open(private / "log", "w+b")
        # Built afresh, so whatever the caller's shell set is dropped: the accelerators are hidden
        # here again (grader/accelerators.py), before the zygote's torch first looks for one.
        env = {"PATH": os.defpath, "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "HOME": str(private), **accelerators.HIDDEN}
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(ZYGOTE), self.socket_path, str(os.getpid()), *(["many"] if many else [])],
            env=env,
            cwd=private,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
        )

    def new_submission_dir(self) -> Path:
        """A fresh folder, readable by the sandbox user, to copy one submission into."""
        path = Path(tempfile.mkdtemp(prefix="submission-", dir=self.root))
        path.chmod(0o755)
        return path

    def _connect(self, wait: float = 60.0) -> socket.socket:
        end = time.monotonic() + wait
        while True:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                conn.connect(self.socket_path)
                return conn
            except (FileNotFoundError, ConnectionRefusedError):
                conn.close()
                if self.process.poll() is not None or time.monotonic() > end:
                    raise SandboxError(f"the sandbox did not start: {self.zygote_log()}") from None
                time.sleep(0.01)

    def zygote_log(self) -> str:
        """The zygote's own output (for grader errors)."""
        self.log.seek(0)
        return self.log.read()[-2000:].decode("utf-8", "replace")

    def run(self, plan: Plan, timeout: float) -> PlanResult:
        """Run ``plan`` (see ``zygote.run_plan``) and return every probe's outcome."""
        result = PlanResult()
        conn, stream = self._session()
        conn.settimeout(timeout)
        try:
            stream.write(json.dumps(plan.to_wire()).encode() + b"\n")
            stream.flush()
            received = 0
            for line in stream:
                received += len(line)
                try:
                    event = wire.parse_line(line)
                    if type(event) is dict and event.get("event") == "done":
                        return complete(plan, result)  # the connection is kept for this process's next plan
                    self._take(event, result, line, too_much=received > MAX_PLAN_BYTES, folder=plan.sandbox_dir)
                except (wire.WireError, KeyError, TypeError):
                    continue  # a malformed line: its probes get no outcome, which complete reports
        except socket.timeout:
            self._end_session()
            raise SandboxError(f"the sandbox did not answer within {timeout:g} s") from None
        except BaseException:
            self._end_session()
            raise
        self._end_session()
        raise SandboxError(f"the sandbox stopped before finishing: {self.zygote_log()}")

    def _session(self):
        """This thread's connection to the zygote and its stream: one handler serves a grading
        process's plans one after another. A forked process, and another thread, open their own:
        a shared one would hand a thread the other's answers."""
        session = getattr(self._local, "session", None)
        if session is None or session[0] != os.getpid():
            conn = self._connect()
            session = self._local.session = (os.getpid(), conn, conn.makefile("rwb"))
        return session[1], session[2]

    def _end_session(self) -> None:
        session = getattr(self._local, "session", None)
        if session is not None and session[0] == os.getpid():
            with contextlib.suppress(OSError):
                session[2].close()
            session[1].close()
        self._local.session = None

    def _take(self, event: dict, result: PlanResult, line: bytes, *, too_much: bool, folder: str = "") -> None:
        """Record one event of the plan (an outcome, a module's output or its isolation), which
        came as ``line``. The submission's copy, ``folder`` (a temporary path, another at each run),
        is left out of what the student's code printed: a warning reads ``causal.py:177: ...``."""
        if type(event) is not dict:
            raise TypeError("an event is an object")
        kind = event.get("event")
        if kind == "waiting":  # another plan's workers are running (zygote.turn): ours have not started
            return
        if kind == "spent":
            seconds = event["seconds"]
            if type(seconds) not in (int, float):
                raise TypeError("seconds are a number")
            result.spent[_text(event["module"])] = float(seconds)
        elif kind == "output":
            text = _text(event["text"])
            if folder:
                text = text.replace(folder.rstrip("/") + "/", "")
            result.output[_text(event["module"])] = clean(text, MAX_OUTPUT, one_line=False)
        elif kind == "isolation":
            mode = clean(_text(event["mode"]), MAX_MESSAGE)
            result.isolation[_text(event["module"])] = mode
            self.isolation.add(mode)
        else:
            if too_much and event.get("outcome") == "ok":
                event = {"id": event["id"], "outcome": "error", "error": {
                    "type": "WireError", "message": "your code sent more data than the grader accepts"}}
            result.outcomes[_text(event["id"])] = decode_outcome(event, hashlib.sha256(line).hexdigest())

    def close(self) -> None:
        """Stop the zygote and everything it started; remove the temporary files."""
        self._end_session()
        try:
            os.killpg(self.process.pid, 9)
        except ProcessLookupError:
            pass
        self.process.wait()
        self.log.close()
        self._tmp.cleanup()
        from grader.sandbox import confine

        weaker = sorted(mode for mode in self.isolation if mode != confine.NAMESPACES)
        if any(not mode.startswith(confine.NAMESPACES) for mode in weaker):
            # A grade made with less isolation: say so (the authoritative regrade runs as root).
            print(f"note: student code ran without Linux namespaces ({'; '.join(weaker)}), in the weaker "
                  "fallback sandbox (see docs/threat-model.md)", file=sys.stderr)
        elif weaker:
            print(f"note: student code ran in namespaces but {'; '.join(m.split('; ', 1)[-1] for m in weaker)} "
                  "(see docs/threat-model.md)", file=sys.stderr)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _text(value) -> str:
    if type(value) is not str:
        raise TypeError("expected a string")
    return value


def decode_outcome(event: dict, digest: str = "") -> ProbeOutcome:
    """One probe's outcome from its event; anything malformed costs only this probe. ``digest``:
    of the line the event came in. Equal lines carry equal values (a line names its test, and the
    sandbox writes a value the same way each time), so a batch finds the values a test already
    passed on by this digest (:mod:`grader.batch.passes`), without writing each value out again to
    hash it: that took about 2 ms a submission."""
    sent = event.get("error") if type(event.get("error")) is dict else {}
    error = ErrorAccount.from_wire({clean(k, 40): clean(v, MAX_SHAPES if k == "shapes" else MAX_MESSAGE) if type(v) is str else v
                                    for k, v in list(sent.items())[:10] if type(v) in (str, bool, int)})
    outcome = event.get("outcome")
    if outcome not in OUTCOMES:
        return ProbeOutcome("crash", error=ErrorAccount(CRASH, "the sandbox sent an unusable result"))
    if outcome != "ok":
        return ProbeOutcome(outcome, error=error)
    return ProbeOutcome("ok", raw=event.get("value"), digest=digest)


def complete(plan: Plan, result: PlanResult) -> PlanResult:
    """Give every probe of ``plan`` that got no usable outcome one that says so."""
    for module in plan.modules.values():
        for probe in module.probes:
            result.outcomes.setdefault(probe.id, ProbeOutcome("crash", error=ErrorAccount(
                CRASH, "the sandbox sent no usable result for this check")))
    return result
