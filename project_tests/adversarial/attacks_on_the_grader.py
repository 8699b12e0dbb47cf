"""Hostile submissions that attack the grader's output: forging the outcome, tampering, hard-coding the book's tensors."""

from __future__ import annotations

from project_tests.adversarial.attack_kit import DAEMON, PRELUDE, TEXTBOOK, ZEROS, Hostile, at_import, function, hostile

ON_THE_GRADER: list[Hostile] = [
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
