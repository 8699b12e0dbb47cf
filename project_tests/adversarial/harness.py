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
import hashlib
import json
import os
import resource
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

import pytest

from grader.stubs import make_stub
from project_tests.adversarial.payloads import TARGET, Hostile

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
ASSIGNMENT = "ch03"
SITE = Path(sysconfig.get_paths()["purelib"])
STDLIB = Path(sysconfig.get_paths()["stdlib"])
NOBODY = 65534


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


# -- what must not change -----------------------------------------------------------------------


def hash_tree(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (symbolic links by their target), and every folder."""
    hashes = {}
    if not folder.exists():
        return hashes
    for path in walk(folder)[1:]:
        relative = str(path.relative_to(folder))
        if path.is_symlink():
            hashes[relative] = "link:" + os.readlink(path)
        elif path.is_dir():
            hashes[relative] = "dir"
        elif path.is_fifo():
            hashes[relative] = "fifo"
        elif path.is_file():
            hashes[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def listing(folder: Path, depth: int = 2) -> dict[str, tuple]:
    """Names, sizes and modification times under ``folder``, ``depth`` levels down."""
    entries = {}
    stack = [(folder, 0)]
    while stack:
        current, level = stack.pop()
        for entry in os.scandir(current):
            info = entry.stat(follow_symlinks=False)
            entries[os.path.relpath(entry.path, folder)] = (info.st_size, info.st_mtime_ns, info.st_uid)
            if entry.is_dir(follow_symlinks=False) and level + 1 < depth:
                stack.append((Path(entry.path), level + 1))
    return entries


def snapshot(stage: Stage, folders: dict[str, Path]) -> dict[str, object]:
    """Everything hostile code must not be able to change."""
    shot: dict[str, object] = {name: hash_tree(path) for name, path in folders.items()}
    shot["repo"] = hash_tree(stage.repo)
    shot["gh"] = hash_tree(stage.gh)
    shot["site-packages"] = listing(SITE)
    shot["stdlib"] = listing(STDLIB, depth=1)
    return shot


def changes(before: dict, after: dict) -> list[str]:
    """What differs between two snapshots, one line each."""
    lines = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, {}), after.get(name, {})
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                lines.append(f"{name}: {key}: {old.get(key)!r} -> {new.get(key)!r}")
    return lines


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


# -- running the grader -------------------------------------------------------------------------------


def skip_without_isolation(reason: str) -> None:
    """Skip, or fail when the run asks for full isolation (``GRADER_REQUIRE_ISOLATION=1``, set
    by the project's CI and ``.ci/run``): there the hostile suite must run, not skip."""
    if os.environ.get("GRADER_REQUIRE_ISOLATION") == "1":
        pytest.fail(f"GRADER_REQUIRE_ISOLATION=1, but {reason}", pytrace=False)
    pytest.skip(reason)


def require_isolation() -> None:
    """Skip unless student code run by this user would get namespaces and the system-call
    filter (``confine.probe``).

    In the fallback, student code runs as this very user without namespaces: a hostile
    submission could kill the test run (``kill(-1)``) or overwrite the checkout. Where that
    is so (a runner whose user namespaces are restricted), run the tests as root, or lift the
    restriction first (``sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0``).
    """
    from grader.sandbox import confine

    found = confine.probe()
    if found != confine.NAMESPACES:
        skip_without_isolation(f"hostile submissions need the namespaced, filtered sandbox; this user gets less ({found})")


@dataclass
class Run:
    """One finished command: its output, and the CPU time it and the processes it waited for used."""

    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float


def children_cpu() -> float:
    """CPU seconds (user and system) of this process's waited-for children so far.

    Tests bound CPU time, never wall-clock time: a busy machine stretches the one, not the other.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_grader(stage: Stage, *args: str, env: dict[str, str] | None = None, timeout: float = 900) -> Run:
    """``python -m grader ARGS`` from the repository copy, with the stage's secrets."""
    start = children_cpu()
    proc = subprocess.run(
        [PYTHON, "-m", "grader", *args], cwd=stage.repo, capture_output=True, text=True,
        timeout=timeout, env={**stage.env, **(env or {})},
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, children_cpu() - start)


UNPRIVILEGED = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
allow, args = sys.argv[1] == "1", sys.argv[2:]
ready, go = os.pipe(), os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:
        os._exit(90)
    os.write(ready[1], b"x")
    os.read(go[0], 1)
    if not allow:  # no user namespace below this one: the grader must fall back
        with open("/proc/sys/user/max_user_namespaces", "w") as handle:
            handle.write("0")
    os.setgroups([])
    os.setresgid(1001, 1001, 1001)
    os.setresuid(1001, 1001, 1001)
    os.execv(args[0], args)
os.read(ready[0], 1)
for name in ("uid_map", "gid_map"):
    with open(f"/proc/{pid}/{name}", "w") as handle:
        handle.write("0 100000 1\n1001 0 1\n")
os.write(go[1], b"x")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
'''


def run_unprivileged(stage: Stage, *args: str, user_namespaces: bool, env: dict[str, str] | None = None,
                     timeout: float = 600) -> Run:
    """``python -m grader ARGS`` as a user that is not root (uid 1001 of a user namespace).

    That user is the files' owner (the real root outside), so the venv and the repository stay
    readable as on a runner where the grader runs as the checkout's owner; it has no capability.
    With ``user_namespaces=False`` it may not create user namespaces, as on a runner where they
    are disabled, and the grader must fall back.
    """
    start = children_cpu()
    proc = subprocess.run(
        [PYTHON, "-c", UNPRIVILEGED, "1" if user_namespaces else "0", PYTHON, "-m", "grader", *args],
        cwd=stage.repo, capture_output=True, text=True, timeout=timeout, env={**stage.env, **(env or {})},
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, children_cpu() - start)


def hidden_lines(stage: Stage) -> list[str]:
    """Lines of the hidden suite and of the solutions that no stub and no report carries."""
    public = set()
    for path in (stage.repo / "exercises").rglob("*.py"):
        public |= {line.strip() for line in path.read_text().splitlines()}
    lines = set()
    sources = list((stage.repo / "tests" / ASSIGNMENT).rglob("*.py")) + list((stage.repo / "solutions").rglob("*.py"))
    for path in sources:
        for line in path.read_text().splitlines():
            line = line.strip()
            if len(line) >= 30 and any(c.isalpha() for c in line) and line not in public and not line.startswith(("#", '"', "'")):
                lines.add(line)
    return sorted(lines)


def leaks(stage: Stage, text: str, hidden: list[str]) -> list[str]:
    """Secrets and hidden source lines that appear in ``text``."""
    found = [s for s in stage.secrets if s in text]
    found += [f"hidden line: {line}" for line in hidden if line in text]
    return found


def load_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
