"""scripts/torch_index.py: the Makefile's extra index for torch, left out when it cannot be reached."""

from __future__ import annotations

import importlib.util

from grader import environment
from project_tests.helpers import ROOT

spec = importlib.util.spec_from_file_location("torch_index", ROOT / "scripts" / "torch_index.py")
torch_index = importlib.util.module_from_spec(spec)
spec.loader.exec_module(torch_index)

UNREACHABLE = "https://index.invalid/whl/cpu"  # .invalid never resolves (RFC 2606)


def given(url: str, capsys) -> tuple[str, str]:
    assert torch_index.main(["torch_index.py", url]) == 0
    out, err = capsys.readouterr()
    return out.strip(), err


def test_an_unreachable_index_is_left_out_at_once_and_said(monkeypatch, capsys):
    for name in (*torch_index.PROXIES, "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    out, err = given(UNREACHABLE, capsys)
    assert out == "" and f"{UNREACHABLE} cannot be reached" in err


def test_a_local_index_a_proxy_and_none(monkeypatch, capsys):
    for name in (*torch_index.PROXIES, "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    assert given("file:///opt/wheels-index", capsys) == ("--extra-index-url file:///opt/wheels-index", "")
    assert given("", capsys) == ("", "")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")  # pip goes through it: not ours to judge
    assert given(UNREACHABLE, capsys) == (f"--extra-index-url {UNREACHABLE}", "")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", UNREACHABLE)  # pip has it already (CI): not twice
    assert given(UNREACHABLE, capsys) == ("", "")


def test_the_makefile_installs_with_the_cpu_index_through_it():
    makefile = (ROOT / "Makefile").read_text()
    assert f"TORCH_INDEX ?= {environment.CPU_INDEX}\n" in makefile
    assert "$$($(PY) scripts/torch_index.py '$(TORCH_INDEX)') -r requirements.txt" in makefile
