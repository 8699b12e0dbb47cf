"""Hostile submissions that attack the grading run: leaving early, refusing to finish, configuring the harness."""

from __future__ import annotations

from project_tests.adversarial.attack_kit import DAEMON, PRELUDE, Hostile, at_import, function, hostile

ON_THE_RUN: list[Hostile] = [
    # -- leaving early ---------------------------------------------------------------------------
    hostile("exit_at_import", "leaving early", at_import("sys.exit(0)"), words="sys.exit(0)"),
    hostile("os_exit_at_import", "leaving early", at_import("os._exit(0)"), words="exited early with status 0"),
    hostile("exit_in_function", "leaving early", function("attention_scores", "sys.exit(0)")),
    hostile("os_exit_in_function", "leaving early", function("attention_scores", "os._exit(0)"),
            words="exited early"),
    hostile("segfault", "leaving early", function("attention_scores", "import ctypes\nctypes.string_at(0)"),
            words="segmentation fault"),
    hostile("kill_parent", "leaving early", at_import('''
for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGSTOP):
    _try(os.kill, os.getppid(), sig)
    _try(os.killpg, os.getpgid(os.getppid()), sig)
_try(os.killpg, 0, signal.SIGCONT)
''')),
    hostile("kill_everything", "leaving early", at_import('''
end = time.time() + 3
while time.time() < end:  # every process this user may signal, while the others are graded
    _try(os.kill, -1, signal.SIGKILL)
    time.sleep(0.01)
''')),
    hostile("kill_grader_processes", "leaving early", at_import('''
for pid in _pids():
    line = _cmdline(pid)
    if pid != os.getpid() and ("grader" in line or "zygote" in line or "pytest" in line):
        _try(os.kill, pid, signal.SIGKILL)
''')),
    hostile("stop_self", "leaving early", function("attention_scores", "os.kill(os.getpid(), signal.SIGSTOP)"),
            status=("timeout", "error")),
    hostile("pytest_skip", "leaving early", at_import('import pytest\npytest.skip("nothing to grade", allow_module_level=True)')),
    hostile("pytest_xfail_exit", "leaving early", f'''@STUB@
{PRELUDE}
import pytest
def attention_scores(inputs, query): pytest.xfail("expected to fail")
def normalize_naive(scores): pytest.skip("skipped")
def softmax_naive(x): pytest.exit("bye", returncode=0)
def context_vector(inputs, attn_weights): pytest.fail("failed", pytrace=False)
'''),
    # -- refusing to finish -------------------------------------------------------------------------
    hostile("loop_in_function", "refusing to finish", function("attention_scores", "while True:\n    pass"),
            status=("timeout", "error"), words="did not finish"),
    hostile("loop_ignoring_signals", "refusing to finish", function("attention_scores", '''
for sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGUSR1):
    _try(signal.signal, sig, signal.SIG_IGN)
_try(signal.setitimer, signal.ITIMER_REAL, 0)
_try(signal.alarm, 0)
while True:
    pass'''), status=("timeout", "error"), words="did not finish"),
    hostile("sleep_at_import", "refusing to finish", at_import("time.sleep(3600)"), words="did not finish"),
    hostile("memory_hog", "refusing to finish", at_import('''
hoard = []
while True:
    try:
        hoard.append(bytearray(64 << 20))
    except MemoryError:
        break
''')),
    hostile("memory_hog_children", "refusing to finish", at_import(DAEMON + '''
def grab():
    hoard = []
    while True:
        try:
            hoard.append(bytearray(64 << 20))
        except MemoryError:
            time.sleep(60)
for _ in range(3):
    _daemon(grab)
''')),
    hostile("flood_stdout", "refusing to finish", at_import('''
line = "flood " * 1000 + "\\n"
for _ in range(20000):
    print(line, end="")
''')),
    hostile("flood_stderr", "refusing to finish", function("attention_scores", '''
chunk = b"E" * (1 << 20)
while True:
    os.write(2, chunk)'''), status=("error", "timeout")),
    hostile("non_daemon_thread", "refusing to finish", at_import('''
import threading
def spin():
    while True:
        time.sleep(0.01)
threading.Thread(target=spin, daemon=False).start()
''')),
    hostile("detached_children", "refusing to finish", at_import(DAEMON + '''
def linger():
    _try(os.execv, "/bin/sh", ["/bin/sh", "-c", "sleep 120 # @TOKEN@"])
    time.sleep(120)
_daemon(linger)
_daemon(lambda: time.sleep(120))
''')),
    hostile("fork_bomb", "refusing to finish", at_import('''
children = 0
for _ in range(500):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    children += 1
''')),
    # -- configuring the harness ---------------------------------------------------------------------
    hostile("conftest_and_ini_files", "configuring the harness", "@STUB@", files={
        "conftest.py": "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                       "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n",
        "exercises/ch03/conftest.py": "raise SystemExit('conftest ran')\n",
        "pytest.ini": "[pytest]\naddopts = -p no:grader --co\n",
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-x -p no:randomly'\n",
        "setup.cfg": "[tool:pytest]\naddopts = --collect-only\n",
        "tox.ini": "[pytest]\naddopts = --collect-only\n",
    }, flags=("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")),
    hostile("site_customization", "configuring the harness", "@STUB@", files={
        "sitecustomize.py": "import builtins; builtins.__import__ = None\n",
        "usercustomize.py": "raise SystemExit(0)\n",
        "exercises/ch03/sitecustomize.py": "import torch; torch.allclose = lambda *a, **k: True\n",
        "exercises/ch03/evil.pth": "import os; os.environ['HACKED'] = '1'\n",
    }, flags=("sitecustomize.py", "usercustomize.py", "evil.pth")),
    hostile("shadow_torch", "configuring the harness", "@STUB@", files={
        "exercises/ch03/torch.py": "class Tensor: __eq__ = lambda s, o: True\ndef allclose(*a, **k): return True\n",
        "torch.py": "raise ImportError('shadowed')\n",
        "exercises/ch03/numpy.py": "allclose = lambda *a, **k: True\n",
    }, flags=("torch.py", "numpy.py")),
    hostile("symlink_to_solution", "configuring the harness", "", links={
        "exercises/ch03/simple_attention.py": "@REPO@/solutions/ch03/simple_attention.py",
    }, words="symbolic link", flags=("symbolic link",)),
    hostile("symlinked_folder", "configuring the harness", "", links={"exercises/ch03": "@REPO@/solutions/ch03"},
            words="symbolic link", bound="refused", flags=("symbolic link",)),
    hostile("fifo_module", "configuring the harness", "", fifos=("exercises/ch03/simple_attention.py",),
            words="not a regular file", flags=("not a regular file",)),
    hostile("deep_folders", "configuring the harness", "@STUB@", files={"d/" * 1200 + "conftest.py": ""},
            flags=("conftest.py",)),
    hostile("pth_into_site_packages", "configuring the harness", at_import('''
hook = "import os; os.environ['GRADER_HACKED'] = '@TOKEN@'\\n"
_write("@SITE@/zzz_@TOKEN@.pth", hook)
_write("@SITE@/sitecustomize.py", hook)
_write("@STDLIB@/sitecustomize.py", hook)
_write("@SITE@/_pytest/__init__.py", hook, "a")
_write("@SITE@/torch/__init__.py", hook, "a")
''')),
    # -- signalling to a worker running beside it (see also classmates.py: channel_*) ----------------
    hostile("file_lock", "channels between workers", at_import('''
import fcntl
fcntl.flock(os.open(os.path.join("@STDLIB@", "antigravity.py"), os.O_RDONLY), fcntl.LOCK_EX)
'''), words="does not allow"),
    hostile("inotify_watch", "channels between workers", at_import('''
import ctypes
ctypes.CDLL(None).inotify_init1(0)
'''), words="does not allow"),
    hostile("shared_file_mapping", "channels between workers", at_import('''
import mmap
mmap.mmap(os.open(os.path.join("@STDLIB@", "antigravity.py"), os.O_RDONLY), 0, prot=mmap.PROT_READ)
'''), words="does not allow"),
    # Open files are few (RLIMIT_NOFILE): a module that opens all it can is stopped after a few dozen.
    hostile("open_every_file", "refusing to finish", at_import('''
opened = 0
try:
    while opened < 100_000:
        os.open("/dev/null", os.O_RDONLY)
        opened += 1
except OSError as exc:
    raise RuntimeError(f"open files capped after {opened}: {exc.strerror}" if opened < 200 else f"opened {opened} files")
raise RuntimeError(f"opened {opened} files")
'''), words="open files capped after"),
]
