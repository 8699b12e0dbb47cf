"""The stage for hostile submissions: a private copy of the instructor's repository, a class
folder, secrets in the grader's environment, a listener for stolen data, and the checks that
nothing outside the sandbox changed and that no process outlived grading.

Everything lives under one world-traversable folder in /tmp, with the class, report and
GitHub folders world-writable: the careless set-up in which only the sandbox stands between
student code and the instructor's files. The repository copy keeps the real one (and other
developers' edits to it) out of reach and makes every path an attack uses known in advance.
"""

from __future__ import annotations

import compileall
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path


from grader.release.stubs import make_stub
from project_tests.adversarial.payloads import TARGET, Hostile

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
ASSIGNMENT = "ch03"
SITE = Path(sysconfig.get_paths()["purelib"])
STDLIB = Path(sysconfig.get_paths()["stdlib"])


@dataclass
class Stage:
    """One run's folders, secrets and values for the payloads' placeholders."""

    base: Path
    repo: Path
    token: str
    env: dict[str, str]
    gh: Path
    port: int
    received: list[bytes] = field(default_factory=list)

    @property
    def secrets(self) -> list[str]:
        return [self.env["GITHUB_TOKEN"], self.env["GRADER_TOKEN"]]

    def values(self, **extra: str) -> dict[str, str]:
        return {
            "REPO": str(self.repo), "SITE": str(SITE), "STDLIB": str(STDLIB), "TOKEN": self.token,
            "GH": str(self.gh), "PORT": str(self.port), "MARK": str(self.base / "unpickled"), **extra,
        }

    def close(self) -> None:
        kill_leftovers(self)
        subprocess.run(["rm", "-rf", str(self.base)], check=False)  # shutil.rmtree recurses: too deep here


def fill(text: str, values: dict[str, str]) -> str:
    """``text`` with every ``@NAME@`` placeholder replaced."""
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    return text


def new_stage() -> Stage:
    """Set the stage: repository copy, GitHub files, secrets, a listening socket."""
    base = Path(tempfile.mkdtemp(prefix="grader-adversarial-"))
    base.chmod(0o755)
    repo = base / "repo"
    for part in ("grader", "tests", "public_tests", "solutions", "exercises"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(repo, quiet=1)  # as a used checkout: the grader finds its bytecode
    for path in walk(repo):
        path.chmod(0o755 if path.is_dir() else 0o644)  # a checkout: readable by everyone
    gh = base / "gh"
    gh.mkdir(mode=0o777)
    gh.chmod(0o777)
    for name in ("output", "summary", "env", "path"):
        (gh / name).write_text("")
        (gh / name).chmod(0o666)
    token = "tok" + secrets.token_hex(8)
    env = {
        **os.environ,
        "GITHUB_TOKEN": f"secret-XYZ-{token}", "GRADER_TOKEN": f"grader-secret-{token}",
        "GITHUB_OUTPUT": str(gh / "output"), "GITHUB_STEP_SUMMARY": str(gh / "summary"),
        "GITHUB_ENV": str(gh / "env"), "GITHUB_PATH": str(gh / "path"),
    }
    env.pop("GITHUB_ACTIONS", None)
    stage = Stage(base, repo, token, env, gh, port=0)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stage.port = listener.getsockname()[1]

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                stage.received.append(conn.recv(1 << 16))
            except OSError:
                pass
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return stage


def stub(stem: str) -> str:
    return make_stub((ROOT / "solutions" / ASSIGNMENT / f"{stem}.py").read_text())


def write_submission(folder: Path, stage: Stage, hostile: Hostile | None, *, target: str | None = None, **values) -> Path:
    """A submission: reference solutions, with the target replaced by ``hostile`` (or ``target``)."""
    exercises = folder / "exercises" / ASSIGNMENT
    exercises.mkdir(parents=True)
    filled = stage.values(SELF=str(folder), STUB=stub(TARGET), **values)
    for source in sorted((stage.repo / "solutions" / ASSIGNMENT).glob("*.py")):
        (exercises / source.name).write_text(source.read_text())
    target = fill(target, filled) if target is not None else None
    if hostile is not None:
        target = fill(hostile.code, filled) if hostile.code else None
        for relative, text in hostile.files.items():
            _makedirs((folder / relative).parent)
            (folder / relative).write_text(fill(text, filled))
        for relative in hostile.fifos:
            (folder / relative).unlink()
            os.mkfifo(folder / relative)
        for relative, link in hostile.links.items():
            path = folder / relative
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
            path.symlink_to(fill(link, filled))
    if target is not None:
        assert not (exercises / f"{TARGET}.py").is_symlink()
        (exercises / f"{TARGET}.py").write_text(target)
    elif hostile is not None and not hostile.links and not hostile.fifos:
        (exercises / f"{TARGET}.py").unlink()
    for path in walk(folder):  # symbolic links are not followed
        if not path.is_symlink():
            path.chmod(0o777 if path.is_dir() else 0o666)  # careless: writable by everyone
    return folder


def _makedirs(path: Path) -> None:
    """``mkdir -p`` without recursion (submissions may nest folders deeper than Python recurses)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir()


def walk(folder: Path) -> list[Path]:
    """``folder`` and everything under it, without following symbolic links or recursing."""
    found, pending = [], [folder]
    while pending:
        current = pending.pop()
        found.append(current)
        if current.is_dir() and not current.is_symlink():
            pending += sorted(current.iterdir(), reverse=True)
    return found


# -- processes --------------------------------------------------------------------------------------


def leftovers(stage: Stage) -> list[tuple[int, int, str]]:
    """Processes started by grading that are still alive: ``(pid, uid, command line)``.

    Sandbox processes carry the repository copy's path (the zygote's command line) or the
    run's token (what a payload executes); any process of the sandbox user does too.
    """
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            status = Path(f"/proc/{name}/status").read_text()
        except OSError:
            continue
        if "State:\tZ" in status:
            continue
        uid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:")))
        if str(stage.base) in cmdline or stage.token in cmdline:
            found.append((int(name), uid, cmdline.strip()))
    return found


def wait_until_gone(stage: Stage, deadline: float = 60) -> list[tuple[int, int, str]]:
    """Wait for the event "no process of the run is left"; return what is left then (``[]``),
    or at the deadline (a generous one: reaching it is the failure a test reports).

    A detached process can only change a file while it lives, so once this returns ``[]`` any
    later look at the files is final: no sleep of a guessed length is needed.
    """
    end = time.monotonic() + deadline
    while (alive := leftovers(stage)) and time.monotonic() < end:
        time.sleep(0.05)
    return alive


def kill_leftovers(stage: Stage) -> None:
    for pid, _, _ in leftovers(stage):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def load_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
