"""Hostile classmates: submissions that attack *other* modules, students, runs and the
instructor's tools, rather than their own score. Each is a whole submission (the reference
solutions, with the modules named in ``modules`` replaced), graded in one class by
``python -m grader batch`` next to honest students, and some of them alone as well.

Families (docs/threat-model.md): kernel keyrings as a channel; student text at the output
boundaries; unbounded sizes; degenerate but legal values; printing; channels between workers
that run at the same time (concurrency).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from project_tests.adversarial.payloads import PRELUDE

# Kernel keyrings through raw system calls (Python has no wrapper): add a key, find one,
# read one; -3 is the session keyring, -4 the user keyring (of ``nobody`` for every worker).
KEYRINGS = PRELUDE + '''
import ctypes, platform
_libc = ctypes.CDLL(None, use_errno=True)
_ADD_KEY, _KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
_L = ctypes.c_long
def _add_key(name, data, keyring):
    """A key in the session keyring (so we possess it), readable by the whole user, linked into ``keyring``."""
    key = _libc.syscall(_L(_ADD_KEY), b"user", name.encode(), data, _L(len(data)), _L(-3))
    _keyctl(5, key, 0x3f3f0000)  # KEYCTL_SETPERM
    _keyctl(8, key, keyring)  # KEYCTL_LINK
    return key
def _keyctl(*args):
    return _libc.syscall(_L(_KEYCTL), *[_L(a) if isinstance(a, int) else a for a in args])
def _read(key):
    buf = ctypes.create_string_buffer(1 << 20)
    size = _keyctl(11, key, buf, 1 << 20)  # KEYCTL_READ
    return buf.raw[:size] if size >= 0 else b""
def _find(name):
    for keyring in (-4, -3, -5):  # user, session, user session
        key = _keyctl(10, keyring, b"user", name.encode(), 0)  # KEYCTL_SEARCH
        if key > 0:
            return _read(key)
    return b""
'''

# mha's worker has the reference ``causal`` loaded (mha builds on it): its code, kept in a key,
# would let any later worker of nobody's rebuild a perfect CausalAttention.
STORE_REFERENCE = KEYRINGS + '''
import marshal, sys, zlib
reference = sys.modules.get("causal")
if reference is not None:
    functions = {(owner, name): (f.__code__, f.__defaults__)
                 for owner, space in (("", vars(reference)), ("CausalAttention", vars(reference.CausalAttention)))
                 for name, f in space.items() if hasattr(f, "__code__") and getattr(f, "__module__", "") == "causal"}
    _add_key("causal-@TOKEN@", zlib.compress(marshal.dumps(functions)), -4)  # nobody's user keyring
'''

# A stub that waits for the key (classmates are graded two at a time) and rebuilds the class.
LOAD_REFERENCE = KEYRINGS + '''
import marshal, types, zlib
import torch
import torch.nn as nn
_blob = b""
for _ in range(40):
    _blob = _find("causal-@TOKEN@")
    if _blob:
        break
    time.sleep(0.03)
if _blob:
    class CausalAttention(nn.Module):
        pass
    _cell = types.CellType(CausalAttention)
    for (_owner, _name), (_code, _defaults) in marshal.loads(zlib.decompress(_blob)).items():
        _closure = tuple(_cell for _ in _code.co_freevars)
        _function = types.FunctionType(_code, globals(), _name, _defaults, _closure)
        if _owner:
            setattr(CausalAttention, _name, _function)
        else:
            globals()[_name] = _function
'''

# What the instructor's shell keeps in its session keyring (login, su -l, services, containers).
READ_SESSION = KEYRINGS + '''
import struct
ids = _read(-3)
loot = [_read(key) for key in struct.unpack(f"{len(ids) // 4}i", ids)]
print("session keyring:", loot)
_try(lambda: open("/tmp/loot", "wb").write(b"".join(loot)))
'''

FORBIDDEN_CALLS = PRELUDE + '''
import ctypes, platform
_libc = ctypes.CDLL(None, use_errno=True)
_calls = {"x86_64": {"ptrace": 101, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
                     "mount": 165},
          "aarch64": {"ptrace": 117, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425,
                      "mount": 40}}[platform.machine()]
for number in _calls.values():
    print("call", number, _libc.syscall(ctypes.c_long(number), 0, 0, 0, 0, 0))
'''

# Escape sequences an instructor's terminal would obey: clipboard write (OSC 52), window title,
# a disguised link (OSC 8), clear screen, cursor moves, a bell, bidi overrides, a lone surrogate.
HOSTILE_TEXT = ("\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b]8;;https://evil.example\x07grade: 75/75\x1b]8;;\x07"
                "\x1b[2J\x1b[H\r\x08\u202e\u2066ok\u2069\x9b31m\ud800")
NASTY_NAMES = PRELUDE + '''
TEXT = @TEXT@
NAME = TEXT.replace("\\ud800", "")  # a class name must be valid UTF-8
Nasty = type(NAME, (), {"__repr__": lambda self: TEXT})
def attention_scores(inputs, query): raise ValueError(TEXT)
def normalize_naive(scores): return Nasty()
def softmax_naive(x): raise type(NAME, (Exception,), {})(TEXT)
print(NAME)
os.write(1, b"not UTF-8: \\xff\\xfe \\x1b[31m red\\n")
'''

# Python's own JSON parser recurses per level: a line this deep, relayed as it is, would
# exhaust the stack of the process that scores (deeper in its own calls than the zygote).
DEEP_CHANNEL = PRELUDE + '''
_deep = b"[" * 960 + b"]" * 960
os.write(3, b'{"event":"ready"}\\n' + (b'{"event":"result","value":' + _deep + b'}\\n') * 10)
'''

# Class names and lists as large as the border allows, where the checks quote them.
HUGE_MESSAGES = '''
def exercise_3_2_wrapper(d_in, context_length, dropout=0.0):
    module = type("W" * 99_000, (nn.Module,), {"forward": lambda self, x: x})()
    module.heads = nn.ModuleList(nn.Identity() for _ in range(20_000))
    return module
def exercise_3_3_gpt2_attention():
    module = type("M" * 99_000, (nn.Module,), {"forward": lambda self, x: x})()
    for i in range(3000):
        module.register_parameter("p" * 90 + str(i), nn.Parameter(torch.zeros(1)))
    return module
'''

EMPTY = '''
def attention_scores(inputs, query): return torch.empty(0)
def normalize_naive(scores): return torch.empty(0)
def softmax_naive(x): return torch.empty(0, 0)
def context_vector(inputs, attn_weights): return torch.empty(0)
def all_attention_scores(inputs): return torch.empty(0, 0)
def all_attention_weights(inputs): return torch.empty(0, 6)
def all_context_vectors(inputs): return torch.empty(6, 0)
'''

EMPTY_CAUSAL = '''
class CausalAttention(CausalAttention):
    def forward(self, x):
        return torch.empty(x.shape[0], 0, 0)
'''

LOUD = '''
import os as _os
_chunk = b"loud " * 200_000 + b"\\n"
for _ in range(200):  # 200 MB
    _os.write(1, _chunk)
print("\\x1b[2J printed at import", flush=True)
'''


# Channels between workers that run at the same time, through kernel objects attached to a file
# every sandbox can read (a standard-library module nobody else touches): a flock, an fcntl lock
# seen with F_GETLK, an inotify watch, a futex on a private mapping of the file (its page is the
# page cache's, so a shared futex keys on the file). Each is tried in a child of its own (a
# refused call ends only that child); each side prints the interval it ran in (CLOCK_MONOTONIC is
# the machine's), so the test sees which workers overlapped: timing needs no kernel object.
CHANNELS = PRELUDE + r'''
import ctypes, fcntl, mmap, select, struct
_LIBC = ctypes.CDLL(None, use_errno=True)
_SHARED = os.path.join(os.path.dirname(os.__file__), "antigravity.py")
_FUTEX = {"x86_64": 202, "aarch64": 98}[__import__("platform").machine()]
_SECONDS = 3.5
def _in_child(function):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            answer = function()
        except BaseException as exc:
            answer = "failed: " + type(exc).__name__
        os.write(write_end, str(answer).encode()[:200])
        os._exit(0)
    os.close(write_end)
    return pid, read_end
def _gather(children):
    answers = {}
    for name, (pid, read_end) in children.items():
        with os.fdopen(read_end, "rb") as pipe:
            answers[name] = pipe.read().decode() or "stopped"
        os.waitpid(pid, 0)
    return answers
def _mapped_word():
    """The address of the first word of a private, read-only mapping of _SHARED (a page-cache page)."""
    fd = os.open(_SHARED, os.O_RDONLY)
    address = _LIBC.mmap(None, ctypes.c_size_t(4096), 1, 2, fd, ctypes.c_long(0))  # PROT_READ, MAP_PRIVATE
    return ctypes.c_void_p(address)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def _futex(address, op, value, seconds=None):
    timeout = struct.pack("ll", int(seconds), int((seconds % 1) * 1e9)) if seconds is not None else None
    return _LIBC.syscall(ctypes.c_long(_FUTEX), address, ctypes.c_int(op), ctypes.c_int(value),
                         ctypes.c_char_p(timeout) if timeout else None, None, ctypes.c_int(0))
'''

CHANNEL_SEND = CHANNELS + r'''
_start = time.monotonic()
def _until_done(action):
    def run():
        end = _start + _SECONDS
        while time.monotonic() < end:
            action()
        return "sent"
    return run
def _flock():
    fd = os.open(_SHARED, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    time.sleep(max(0.0, _start + _SECONDS - time.monotonic()))
    return "sent"
def _lockf():
    fd = os.open(_SHARED, os.O_RDONLY)
    fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0))
    time.sleep(max(0.0, _start + _SECONDS - time.monotonic()))
    return "sent"
def _inotify():
    return _until_done(lambda: (os.close(os.open(_SHARED, os.O_RDONLY)), time.sleep(0.01)))()
def _wake():
    address = _mapped_word()
    return _until_done(lambda: (_futex(address, 1, 1 << 30), time.sleep(0.005)))()  # FUTEX_WAKE, shared
def _spin():
    end = _start + _SECONDS
    while time.monotonic() < end:  # bursts of CPU a neighbour could time
        pass
    return "sent"
# Only a worker that holds the reference causal has something worth sending: whether the
# reference scales the scores (the receiver's two candidates differ only there).
_reference = sys.modules.get("causal")
if _reference is not None and getattr(_reference, "__file__", "") != __file__:
    _children = {name: _in_child(f) for name, f in
                 (("flock", _flock), ("lockf", _lockf), ("inotify", _inotify), ("futex", _wake), ("timing", _spin))}
    print("sender", _gather(_children))
    print(f"interval send {_start:.3f} {time.monotonic():.3f}")
'''

CHANNEL_RECEIVE = CHANNELS + r'''
_start = time.monotonic()
def _poll(test):
    def run():
        end = _start + _SECONDS + 0.5
        while time.monotonic() < end:
            if test():
                return "received"
            time.sleep(0.005)
        return "nothing"
    return run
def _flock():
    fd = os.open(_SHARED, os.O_RDONLY)
    def held():
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    return _poll(held)()
def _lockf():
    fd = os.open(_SHARED, os.O_RDONLY)
    def held():
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
        return struct.unpack("hhqqi", answer)[0] != fcntl.F_UNLCK
    return _poll(held)()
def _inotify():
    fd = _LIBC.inotify_init1(os.O_NONBLOCK)
    if fd < 0 or _LIBC.inotify_add_watch(fd, _SHARED.encode(), 0x20 | 0x01) < 0:  # IN_OPEN, IN_ACCESS
        return "no watch"
    return _poll(lambda: bool(select.select([fd], [], [], 0)[0]))()
def _wait():
    address = _mapped_word()
    word = ctypes.c_int.from_address(address.value).value
    end = _start + _SECONDS + 0.5
    while time.monotonic() < end:
        if _futex(address, 0, word, 0.1) == 0:  # FUTEX_WAIT, shared: 0 when woken
            return "received"
    return "nothing"
_children = {name: _in_child(f) for name, f in
             (("flock", _flock), ("lockf", _lockf), ("inotify", _inotify), ("futex", _wait))}
_heard = _gather(_children)
print("receiver", _heard)
print(f"interval receive {_start:.3f} {time.monotonic():.3f}")
# Two candidates: without a word from a worker that holds the reference, the wrong one (no scaling).
_right = CausalAttention.forward
def _unscaled(self, x):
    n = x.shape[1]
    scores = (self.W_query(x) @ self.W_key(x).transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
    return self.dropout(torch.softmax(scores, dim=-1)) @ self.W_value(x)
CausalAttention.forward = _right if "received" in _heard.values() else _unscaled
'''

# A classmate's causal.py that knows its own answer and sends it to whoever listens.
COLLUDE_SEND = CHANNEL_SEND.replace('if _reference is not None and getattr(_reference, "__file__", "") != __file__:',
                                    "if True:  # it holds a right answer of its own")
assert COLLUDE_SEND != CHANNEL_SEND


# The page cache outlives a turn (docs/threat-model.md, *Concurrency*): a classmate's causal.py that
# knows its answer leaves a pattern in the residency of standard-library files nobody imports (the
# even ones read, so resident; the odd ones evicted with posix_fadvise), and a later classmate's
# causal.py reads the pattern back (preadv2 with RWF_NOWAIT fails on a page that is not resident;
# a timed read is slow on one) and picks the right of its two candidates only when it sees it.
CACHE = PRELUDE + r"""
_FILES = [os.path.join(os.path.dirname(os.__file__), name + ".py")
          for name in ("aifc", "cgitb", "chunk", "sunau", "mailcap", "nntplib", "sndhdr", "xdrlib")]
_PATTERN = [i % 2 == 0 for i in range(len(_FILES))]  # True: resident
"""

# A receiver's last step: the right CausalAttention if it heard the sender, else one without the scaling.
CHOOSE = r"""
_right = CausalAttention.forward
def _unscaled(self, x):
    n = x.shape[1]
    scores = (self.W_query(x) @ self.W_key(x).transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
    return self.dropout(torch.softmax(scores, dim=-1)) @ self.W_value(x)
CausalAttention.forward = _right if _heard else _unscaled
"""

CACHE_SEND = CACHE + r"""
for _path, _resident in zip(_FILES, _PATTERN):
    _fd = os.open(_path, os.O_RDONLY)
    if _resident:
        while os.read(_fd, 1 << 16):
            pass
    else:
        os.posix_fadvise(_fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(_fd)
print("cache sent")
"""

CACHE_RECEIVE = CACHE + r"""
_nowait, _timed = [], []
for _path in _FILES:
    _fd = os.open(_path, os.O_RDONLY)
    _start = time.perf_counter()
    os.pread(_fd, 1, os.fstat(_fd).st_size - 1)  # the last page: slow when it must come from disk
    _timed.append(time.perf_counter() - _start < 30e-6)
    try:
        os.preadv(_fd, [bytearray(1)], 0, os.RWF_NOWAIT)  # the first page, never read from disk
        _nowait.append(True)
    except BlockingIOError:
        _nowait.append(False)
    os.close(_fd)
_heard = _PATTERN in (_nowait, _timed)
print("cache receiver", "received" if _heard else "nothing", _nowait, _timed)
""" + CHOOSE

CACHE_RECEIVE_OPEN = CACHE + r"""
_opened = []
for _path in _FILES:  # an open waits while the guard loads what is not resident: time the open itself
    _start = time.perf_counter()
    os.close(os.open(_path, os.O_RDONLY))
    _opened.append(time.perf_counter() - _start < 100e-6)
_heard = _opened == _PATTERN
print("open receiver", "received" if _heard else "nothing", _opened)
""" + CHOOSE


@dataclass(frozen=True)
class Classmate:
    """One submission of the hostile class: which modules it replaces, and with what.

    ``modules`` maps a stem to its source: ``stub`` (the honest stub), ``stub+CODE`` (the stub,
    then CODE at import), ``CODE+stub``, ``solution+CODE`` (the reference, then CODE). ``files``
    adds files (relative paths as bytes, which need not be UTF-8). ``bound`` maps a stem to the
    most it may score: ``0``, ``stub`` or ``full``; ``solo`` asks for the same grade when
    graded alone.
    """

    name: str
    family: str
    modules: dict[str, str] = field(default_factory=dict)
    files: dict[bytes, str] = field(default_factory=dict)
    bound: dict[str, str] = field(default_factory=dict)
    words: dict[str, str] = field(default_factory=dict)  # stem -> words one of its messages must carry
    solo: bool = False


CLASS = [
    Classmate("victim", "honest", solo=True),
    Classmate("victim_with_stubs", "honest", {"causal": "stub", "simple_attention": "stub"}, solo=True),
    Classmate("keyring_a_store", "keyrings", {"mha": "solution+" + STORE_REFERENCE, "causal": "stub+" + LOAD_REFERENCE},
              bound={"causal": "stub"}, words={"mha": "does not allow", "causal": "does not allow"}),
    Classmate("keyring_b_load", "keyrings", {"causal": "stub+" + LOAD_REFERENCE},
              bound={"causal": "stub"}, words={"causal": "does not allow"}, solo=True),
    Classmate("session_keyring_reader", "keyrings", {"simple_attention": READ_SESSION + "\n@STUB@"},
              bound={"simple_attention": "stub"}, words={"simple_attention": "does not allow"}),
    Classmate("forbidden_calls", "system calls", {"simple_attention": FORBIDDEN_CALLS + "\n@STUB@"},
              bound={"simple_attention": "stub"}, words={"simple_attention": "does not allow"}),
    Classmate("nasty_text", "output boundaries", {"simple_attention": "stub+" + NASTY_NAMES},
              files={b"exercises/ch03/\xff\xfe-\x1b]0;title\x07.py": "", b"notes/caf\xe9\xe2\x80\xae.txt": "",
                     b".github/workflows/\x1b]8;;https://evil.example\x07ci\x1b]8;;\x07.yml": "on: push\n"},
              bound={"simple_attention": "stub"}, solo=True),
    Classmate("deep_channel", "unbounded sizes", {"simple_attention": DEEP_CHANNEL + "\n@STUB@"},
              bound={"simple_attention": "stub"}, words={"simple_attention": "interfered with the grader's channel"}),
    Classmate("huge_messages", "unbounded sizes", {"mha": "solution+" + HUGE_MESSAGES}, bound={"mha": "full"}),
    Classmate("empty_tensors", "degenerate values", {"simple_attention": "stub+" + EMPTY, "causal": "solution+" + EMPTY_CAUSAL},
              bound={"simple_attention": "stub", "causal": "full"}),
    Classmate("loud", "printing", {"causal": "solution+" + LOUD}, solo=True),
    # Concurrency: the reference causal's holder (mha's worker) signals to a causal worker, the
    # student's own (grade runs modules side by side) or a classmate's (batch grades two at once),
    # and a classmate signals the answer of the same module. Each receiver scores what it scores alone.
    Classmate("channel_self", "concurrency", {"mha": "solution+" + CHANNEL_SEND, "causal": "solution+" + CHANNEL_RECEIVE},
              bound={"mha": "full"}, solo=True),
    Classmate("channel_sender", "concurrency", {"mha": "solution+" + CHANNEL_SEND}, bound={"mha": "full"}),
    Classmate("channel_receiver", "concurrency", {"causal": "solution+" + CHANNEL_RECEIVE}, solo=True),
    Classmate("collude_sender", "concurrency", {"causal": "solution+" + COLLUDE_SEND}, bound={"causal": "full"}),
    Classmate("collude_receiver", "concurrency", {"causal": "solution+" + CHANNEL_RECEIVE}, solo=True),
    # The page cache, across turns: the sender is graded before the receiver (folders in name order).
    Classmate("cache_sender", "concurrency", {"causal": "solution+" + CACHE_SEND}, bound={"causal": "full"}),
    Classmate("page_cache_receiver", "concurrency", {"causal": "solution+" + CACHE_RECEIVE}, solo=True),
    Classmate("page_open_receiver", "concurrency", {"causal": "solution+" + CACHE_RECEIVE_OPEN}, solo=True),
]
BY_NAME = {c.name: c for c in CLASS}
