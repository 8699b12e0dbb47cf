"""The trusted side of the border: start the zygote, send a plan, decode what comes back."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.sandbox import wire

ZYGOTE = Path(__file__).with_name("zygote.py")
MAX_MESSAGE = 1000  # characters of one error message from the sandbox
MAX_PLAN_BYTES = 256 * 1024 * 1024  # results of one plan kept in this process; beyond, errors
# What student text may not carry into a report or a terminal: escape sequences and other
# control characters (they can rewrite what an instructor sees), bidirectional overrides.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile(r"\r\n?|[\x85\u2028\u2029]")


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the student's code)."""


@dataclass
class ProbeOutcome:
    """What one probe produced: ``ok`` with a value, or why not."""

    outcome: str  # ok | error | timeout | crash | module_error | missing
    value: object = None
    error: dict = field(default_factory=dict)


@dataclass
class PlanResult:
    """All outcomes of one plan, by probe id, and each module's captured output."""

    outcomes: dict[str, ProbeOutcome] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)
    # How each module's workers were isolated: ``confine.NAMESPACES`` or why not.
    isolation: dict[str, str] = field(default_factory=dict)


def clean(text: str, limit: int, *, one_line: bool) -> str:
    """Student-controlled ``text``, safe to show: no control characters, at most ``limit``."""
    text = _CONTROL.sub("", _LINE_BREAKS.sub("\n", str(text)[: limit * 2]))
    if one_line:
        text = " ".join(text.split("\n"))
    return text[:limit]


class Sandbox:
    """One zygote for a grading run; :meth:`run` may be called once per submission."""

    def __init__(self, workdir: Path | None = None):
        from grader.sandbox import confine  # Linux only: imported here, so that other OSes can use this module's types

        # This process holds the secrets of the environment, the tests and the report's path:
        # no process of the same user may ptrace it or read its /proc files.
        confine.libc.prctl(confine.PR_SET_DUMPABLE, 0, 0, 0, 0)
        self.isolation: set[str] = set()
        self._tmp = tempfile.TemporaryDirectory(prefix="grader-sandbox-")
        self.root = Path(self._tmp.name)
        self.root.chmod(0o711)  # workers may enter (to reach submissions), not list
        private = self.root / "zygote"
        private.mkdir(mode=0o700)
        self.socket_path = str(private / "socket")
        self.log = open(private / "log", "w+b")
        env = {"PATH": os.defpath, "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "HOME": str(private)}
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(ZYGOTE), self.socket_path],
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

    def run(self, plan: dict, timeout: float) -> PlanResult:
        """Run ``plan`` (see ``zygote.handle``) and return every probe's outcome."""
        result = PlanResult()
        conn = self._connect()
        conn.settimeout(timeout)
        with conn, conn.makefile("rwb") as stream:
            stream.write(json.dumps(plan).encode() + b"\n")
            stream.flush()
            received = 0
            try:
                for line in stream:
                    received += len(line)
                    event = json.loads(line)
                    if event.get("event") == "done":
                        return result
                    if event.get("event") == "output":
                        result.output[event["module"]] = clean(event["text"], len(event["text"]), one_line=False)
                        continue
                    if event.get("event") == "isolation":
                        result.isolation[event["module"]] = event["mode"]
                        self.isolation.add(event["mode"])
                        continue
                    if received > MAX_PLAN_BYTES and event.get("outcome") == "ok":
                        event = {"id": event["id"], "outcome": "error", "error": {
                            "type": "WireError", "message": "your code sent more data than the grader accepts"}}
                    result.outcomes[event["id"]] = self._outcome(event)
            except socket.timeout:
                raise SandboxError(f"the sandbox did not answer within {timeout:g} s") from None
        raise SandboxError(f"the sandbox stopped before finishing: {self.zygote_log()}")

    @staticmethod
    def _outcome(event: dict) -> ProbeOutcome:
        error = event.get("error") if type(event.get("error")) is dict else {}
        error = {str(k): clean(v, MAX_MESSAGE, one_line=True) if type(v) is str else v
                 for k, v in list(error.items())[:10] if type(v) in (str, bool, int)}
        if event["outcome"] != "ok":
            return ProbeOutcome(event["outcome"], error=error)
        try:
            return ProbeOutcome("ok", value=wire.decode(event.get("value")))
        except wire.WireError as exc:
            return ProbeOutcome("error", error={"type": "WireError", "message": f"unusable result: {exc}"})
        except Exception as exc:  # noqa: BLE001 - whatever the data, it costs only this probe
            return ProbeOutcome("error", error={"type": "WireError", "message": f"unusable result ({type(exc).__name__})"})

    def close(self) -> None:
        """Stop the zygote and everything it started; remove the temporary files."""
        try:
            os.killpg(self.process.pid, 9)
        except ProcessLookupError:
            pass
        self.process.wait()
        self.log.close()
        self._tmp.cleanup()
        from grader.sandbox import confine

        weaker = sorted(mode for mode in self.isolation if mode != confine.NAMESPACES)
        if weaker:  # a grade made with less isolation: say so (the authoritative regrade runs as root)
            print(f"note: student code ran without Linux namespaces ({'; '.join(weaker)}), in the weaker "
                  "fallback sandbox (see docs/threat-model.md)", file=sys.stderr)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
