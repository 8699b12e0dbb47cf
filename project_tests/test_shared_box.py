"""One Box for several modules of a submission (``--workers 1``, as in ``batch``): the
namespaces and root are built once per group of modules, and what isolates one module from
the next must still hold (grader/sandbox/zygote.py: module_groups, rootfs.renew_scratch)."""

from __future__ import annotations

from grader.sandbox.zygote import module_groups
from project_tests.adversarial.grader_runs import require_isolation
from project_tests.helpers import exercise, grade_cli, make_submission, solution_sources


def plan(modules: dict[str, list[str]], workers: int) -> dict:
    return {"limits": {"workers": workers},
            "modules": {stem: {"uses": {dep: f"/solutions/{dep}.py" for dep in uses}} for stem, uses in modules.items()}}


CH03 = {"simple_attention": [], "self_attention_v1": [], "self_attention_v2": [],
        "weight_transfer": ["self_attention_v1", "self_attention_v2"], "causal": [], "mha": ["causal"]}


def test_one_worker_at_a_time_groups_modules_but_never_with_their_own_reference():
    groups = [[stem for stem, _ in group] for group in module_groups(plan(CH03, workers=1))]
    assert groups == [["simple_attention", "self_attention_v1", "self_attention_v2", "causal"], ["weight_transfer", "mha"]]
    for group in module_groups(plan(CH03, workers=1)):
        loaded = {dep for _, spec in group for dep in spec["uses"]}
        assert not loaded & {stem for stem, _ in group}


def test_several_workers_keep_a_supervisor_per_module():
    assert [[stem for stem, _ in group] for group in module_groups(plan(CH03, workers=2))] == [[s] for s in CH03]


PROBING = '''
import gc, os, types
print("scratch:", sorted(os.listdir("/tmp")) + sorted(os.listdir("/dev/shm")))
print("reference causal loaded:", any(isinstance(m, types.ModuleType) and m.__name__ == "causal"
                                      and getattr(m, "__file__", None) != __file__ for m in gc.get_objects()))
for folder in ("/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, f"left-by-{__name__}"), "w") as handle:
            handle.write("x")
    except OSError:  # read-only: /tmp is no scratch folder when the grader itself lies under /tmp
        pass
'''


def test_a_module_sees_neither_what_an_earlier_module_left_in_scratch_nor_its_own_reference(tmp_path):
    require_isolation()
    sources = solution_sources("ch03")
    probing = ["causal", "self_attention_v1", "self_attention_v2", "simple_attention", "mha"]  # one group, then mha's
    root = make_submission(tmp_path / "student", "ch03", {stem: PROBING + sources[stem] for stem in probing})
    proc, report = grade_cli(root, "ch03", "--workers", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report["score"] == report["max_score"]
    for stem in probing:
        output = exercise(report, stem)["output"]
        # The submission's own folder is bound again under a new /tmp when it lies there; nothing else is.
        assert "scratch:" in output and "left-by" not in output, (stem, output)
        assert f"reference causal loaded: {stem == 'mha'}" in output, (stem, output)  # mha builds on it, by design
