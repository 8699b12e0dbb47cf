"""The pieces of a diagnosis on their own: finding the first differing step, explaining an
exception, drawing grids, and the public catalog being up to date."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from grader.diagnosis import catalog
from grader.diagnosis.explain import classify, concept_for, explain
from grader.diagnosis.live_reference import load_source
from grader.diagnosis.localize import first_difference
from grader.diagnosis.sent import steps_of
from grader.diagnosis.stages import CONTEXT, SOFTMAX_INPUT, WEIGHTS
from grader.diagnosis.tolerance import ATOL
from grader.reports.common import cell, grid_rows
from grader.sandbox import wire
from grader.sandbox.trace import traced
from project_tests.helpers import ROOT, assignments, solution_sources

X = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(1))


def causal_module(source_change=None):
    """The reference CausalAttention (optionally with one text change), seeded, in eval mode."""
    source = solution_sources("ch03")["causal"]
    if source_change:
        source = source.replace(*source_change)
    module = load_source("causal", source, ROOT / "solutions" / "ch03" / "causal.py")
    torch.manual_seed(3)
    attention = module.CausalAttention(3, 4, 6, 0.0)
    return attention.eval()


def steps_and_output(module):
    result = traced(module, X, module=module)
    return steps_of(result), result["$traced"]


def test_a_missing_scale_is_first_seen_in_what_softmax_receives():
    reference = steps_and_output(causal_module())
    student = steps_and_output(causal_module(("attn_scores / keys.shape[-1] ** 0.5, dim=-1", "attn_scores, dim=-1")))
    found = first_difference(*reference, *student)
    assert found is not None and found.stage == SOFTMAX_INPUT
    assert found.actual is not None and found.actual.shape == found.expected.shape


def test_softmax_over_the_wrong_dimension_is_first_seen_in_the_weights():
    reference = steps_and_output(causal_module())
    student = steps_and_output(causal_module(("keys.shape[-1] ** 0.5, dim=-1)", "keys.shape[-1] ** 0.5, dim=1)")))
    assert first_difference(*reference, *student).stage == WEIGHTS


def test_other_correct_styles_differ_nowhere():
    reference = steps_and_output(causal_module())
    styles = [
        ("attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",  # hand-written, stable
         "s = attn_scores / keys.shape[-1] ** 0.5; e = torch.exp(s - s.max(dim=-1, keepdim=True).values); "
         "attn_weights = e / e.sum(dim=-1, keepdim=True)"),
        ("self.mask.bool()[:num_tokens, :num_tokens], -torch.inf", "self.mask.bool()[:num_tokens, :num_tokens], -1e9"),
        ("attn_scores = queries @ keys.transpose(1, 2)", "attn_scores = (queries / keys.shape[-1] ** 0.5) @ keys.mT * keys.shape[-1] ** 0.5"),
    ]
    for change in styles:
        assert first_difference(*reference, *steps_and_output(causal_module(change))) is None, change[1]


def test_values_taken_from_the_wrong_layer_are_seen_in_the_context():
    reference = steps_and_output(causal_module())
    student = steps_and_output(causal_module(("attn_weights @ values", "attn_weights @ keys")))
    assert first_difference(*reference, *student).stage == CONTEXT


def test_exceptions_are_sorted_and_named_only_when_unambiguous(tmp_path):
    view = "view size is not compatible with input tensor's size and stride (at least one dimension spans ...)"
    assert classify("RuntimeError", view)[0] == "view of a non-contiguous tensor"
    assert concept_for("view of a non-contiguous tensor", "x.view(b, n, d)")
    broadcast = "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    assert classify("RuntimeError", broadcast)[0] == "shapes that do not broadcast"
    assert classify("RuntimeError", broadcast, "s = q @ k.T")[0] == "matrix product of mismatched shapes"
    assert concept_for("matrix product of mismatched shapes", "s = q @ k.T")
    assert concept_for("matrix product of mismatched shapes", "s = q @ k.transpose(1, 2)") == ""
    assert classify("RuntimeError", "expected scalar type Float but found Double")[0] == "mixed dtypes"
    (tmp_path / "causal.py").write_text("a = 1\n        scores = q @ k.T  # mine\n")
    explained = explain("RuntimeError", broadcast, "causal.py, line 2, in forward", tmp_path)
    assert explained.code == "scores = q @ k.T  # mine" and explained.concept


def test_grids_separate_zero_from_small_weights_without_colour():
    assert cell(0.0).strip() == "·"
    assert cell(0.14) == "░ 0.14" and cell(0.6) == "▓ 0.60" and cell(1.0) == "█ 1.00"
    assert cell(0.001) == "░ <.01"
    assert cell(float("-inf")).strip() == "-inf" and cell(float("nan")).strip() == "nan"
    rows = grid_rows([[1.0, 0.0], [0.3, 0.7]])
    assert rows == [cell(1.0) + cell(0.0), cell(0.3) + cell(0.7)]


def catalog_differences(built, committed, where="catalog"):
    """Where two public catalogs differ: the structure and every text exactly, each tensor within the
    tolerance the diagnosis compares with (``catalog.same_tensor``). Computed floats may differ in
    the last bit from one CPU to another (AVX-512 does), so tensors are never compared byte for byte."""
    if isinstance(built, dict) and isinstance(committed, dict) and "$tensor" in built and "$tensor" in committed:
        if not catalog.same_tensor(wire.decode(built), wire.decode(committed)):
            yield where
    elif isinstance(built, dict) and isinstance(committed, dict):
        if built.keys() != committed.keys():
            yield f"{where}: keys {sorted(built.keys() ^ committed.keys())[:5]}"
        for key in built.keys() & committed.keys():
            yield from catalog_differences(built[key], committed[key], f"{where}[{key!r}]")
    elif isinstance(built, list) and isinstance(committed, list):
        if len(built) != len(committed):
            yield f"{where}: {len(built)} items, {len(committed)} committed"
        for i, (a, b) in enumerate(zip(built, committed)):
            yield from catalog_differences(a, b, f"{where}[{i}]")
    elif built != committed:
        yield where


def test_catalog_differences_tolerate_the_last_bit_but_not_a_value():
    x = torch.rand(3, 4, generator=torch.Generator().manual_seed(2))
    last_bit = torch.nextafter(x, torch.full_like(x, 2.0))
    committed = {"results": {"k": {"reference": wire.encode_tensor(x), "concept": "a"}}}
    assert list(catalog_differences({"results": {"k": {"reference": wire.encode_tensor(last_bit), "concept": "a"}}},
                                    committed)) == []
    assert list(catalog_differences({"results": {"k": {"reference": wire.encode_tensor(x + 1e-3), "concept": "a"}}},
                                    committed)) == ["catalog['results']['k']['reference']"]
    assert list(catalog_differences({"results": {"k": {"reference": wire.encode_tensor(x), "concept": "b"}}},
                                    committed)) == ["catalog['results']['k']['concept']"]
    assert list(catalog_differences({"results": {}}, committed)) == ["catalog['results']: keys ['k']"]


def test_same_tensor_says_what_comparing_every_value_says():
    """The first values are compared alone first (no tensor op): every answer is still the one
    comparing all values, masked scores, infinities and nan included, gives."""

    def every_value(a, b):
        a, b = a.double(), b.double()
        a = torch.where(a <= catalog.MASKED, torch.full_like(a, -torch.inf), a)
        b = torch.where(b <= catalog.MASKED, torch.full_like(b, -torch.inf), b)
        return bool(torch.isclose(a, b, atol=ATOL, rtol=0, equal_nan=True).all())

    x = torch.rand(2, 3, generator=torch.Generator().manual_seed(5))
    firsts = [0.0, 5e-5, 2e-4, -1e4, -1e9, -torch.inf, torch.inf, torch.nan]
    pairs = []
    for first in firsts:
        for other in firsts:
            a, b = x.clone(), x.clone()
            a[0, 0], b[0, 0] = first, other
            pairs += [(a, b), (a, b + 1e-3), (a, b.half().float())]
    pairs += [(torch.empty(0, 3), torch.empty(0, 3)), (x, x.double()), (x.half(), x)]
    for a, b in pairs:
        assert catalog.same_tensor(a, b) == every_value(a, b), (a, b)
    assert catalog.same_tensor(x, x + 5e-5) and not catalog.same_tensor(x, x + 2e-4)


@pytest.mark.end_to_end
@pytest.mark.parametrize("assignment", assignments())
def test_the_public_catalogs_are_up_to_date(assignment):
    script = ("import json, sys; from grader.diagnosis.public_catalog import build; from grader.settings import PROJECT_ROOT; "
              "print(json.dumps(build(PROJECT_ROOT, sys.argv[1]), sort_keys=True, separators=(',', ':')))")
    proc = subprocess.run([sys.executable, "-c", script, assignment], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    committed = json.loads((ROOT / "public_tests" / assignment / "catalog.json").read_text())
    stale = list(catalog_differences(json.loads(proc.stdout.splitlines()[-1]), committed))
    assert not stale, (f"public_tests/{assignment}/catalog.json is stale at {stale[:5]}: "
                       f"run .venv/bin/python -m grader.diagnosis.public_catalog {assignment}")
