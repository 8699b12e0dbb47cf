"""The grading process's ``torch.manual_seed`` (``grader/sandbox/seeding.py``) draws what torch's does."""

from __future__ import annotations

import torch

from grader.sandbox import seeding

SEEDS = (0, 123, -7, 2**40 + 5)


def draws() -> list[tuple[int, list[float]]]:
    """For each seed: the generator's initial seed, and four numbers drawn after seeding."""
    return [(torch.manual_seed(seed).initial_seed(), torch.rand(4).tolist()) for seed in SEEDS]


def test_cpu_only_seeding_draws_what_torch_manual_seed_draws(monkeypatch):
    monkeypatch.setattr(torch, "manual_seed", torch.manual_seed)  # restored after the test
    monkeypatch.setattr(torch.random, "manual_seed", torch.random.manual_seed)
    expected = draws()
    assert seeding.seed_cpu_only()  # this machine has no accelerator
    assert torch.manual_seed is seeding.manual_seed and torch.random.manual_seed is seeding.manual_seed
    assert draws() == expected
