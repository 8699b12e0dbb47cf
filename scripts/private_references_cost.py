"""What ``references = "private"`` would cost the books' assignments (they keep "published").

    .venv/bin/python scripts/private_references_cost.py [--catalog]

Each mistake made in a module that others build on (ch03: causal, self_attention_v1/v2; d2l:
masked_softmax, scoring) is one submission: the reference solutions with that one text change.
By default the mistakes are those of project_tests/unseen_mistakes.toml (written without the
catalog: mostly unknown to it); with ``--catalog``, the catalog's own (every one the diagnosis can
confirm). All of an assignment's submissions are graded in one run (one sandbox, as the bulk
regrade does) in two copies of the repository, one with the assignment's rubric as it is and one
with ``references = "private"`` added, and the script prints the points the modules built on
those lose in each, and how many submissions lose more under "private". Figures:
docs/threat-model.md, *What is not built*.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from project_tests.helpers import copy_repository, solution_sources  # noqa: E402

# A module others build on -> the modules built on it (directly or not), by assignment.
BUILT_ON = {
    "ch03": {"causal": ["mha"], "self_attention_v1": ["weight_transfer"], "self_attention_v2": ["weight_transfer"]},
    "d2l_attention": {"masked_softmax": ["scoring", "multihead", "seq2seq_attention"],
                      "scoring": ["multihead", "seq2seq_attention"]},
}
GRADE = (
    "import json, sys; from pathlib import Path; from grader.batch.pool import grade_many; "
    "from grader.assignment import Assignment; from grader.cli import build_parser, settings_from; "
    "args = build_parser().parse_args(['grade', '.', '--assignment', sys.argv[1]]); settings = settings_from(args); "
    "roots = [Path(p) for p in json.loads(sys.argv[2])]; "
    "print(json.dumps({str(r): rep.to_dict() for r, rep in grade_many(roots, Assignment.resolve(sys.argv[1], settings), settings)}))"
)


def mistakes(catalog: bool) -> list[dict]:
    """``{id, assignment, module, old, new}`` of every mistake in a module others build on."""
    if catalog:
        found = [{"id": f"{path.stem}:{index}", "assignment": path.parent.parent.name, "module": path.stem, **entry}
                 for path in sorted((ROOT / "tests").glob("*/catalog/*.toml"))
                 for index, entry in enumerate(tomllib.loads(path.read_text())["mistake"]) if entry.get("concept")]
    else:
        found = tomllib.loads((ROOT / "project_tests" / "unseen_mistakes.toml").read_text())["mistake"]
    return [m for m in found if m["module"] in BUILT_ON.get(m["assignment"], {})]


def grade(repo: Path, assignment: str, roots: list[Path]) -> tuple[dict, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", GRADE, assignment, json.dumps([str(r) for r in roots])], cwd=repo,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""}, check=True)
    return json.loads(proc.stdout.splitlines()[-1]), time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", action="store_true", help="the catalog's mistakes, not the unseen ones")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repos = {"published": copy_repository(base / "published"), "private": copy_repository(base / "private")}
        for assignment in BUILT_ON:
            rubric = repos["private"] / "tests" / assignment / "rubric.toml"
            text = rubric.read_text()
            rubric.write_text(text.replace("\n", '\nreferences = "private"\n', 1))
            chosen = [m for m in mistakes(args.catalog) if m["assignment"] == assignment]
            roots = {}
            for mistake in chosen:
                sources = solution_sources(assignment)
                sources[mistake["module"]] = sources[mistake["module"]].replace(mistake["old"], mistake["new"], 1)
                root = base / "class" / assignment / mistake["id"].replace(":", "-")
                (root / "exercises" / assignment).mkdir(parents=True)
                for stem, text in sources.items():
                    (root / "exercises" / assignment / f"{stem}.py").write_text(text)
                roots[root] = mistake
            lost, more, seconds = {}, 0, {}
            for mode, repo in repos.items():
                reports, seconds[mode] = grade(repo, assignment, list(roots))
                for root, mistake in roots.items():
                    exercises = {e["name"]: e["max_score"] - e["score"] for e in reports[str(root)]["exercises"]}
                    lost.setdefault(root, {})[mode] = sum(exercises[m] for m in BUILT_ON[assignment][mistake["module"]])
            more = [root.name for root, by_mode in lost.items() if by_mode["private"] > by_mode["published"]]
            print(f"{assignment}: {len(roots)} mistakes; points the modules built on them lose: "
                  f"published {sum(v['published'] for v in lost.values()):g}, private {sum(v['private'] for v in lost.values()):g}; "
                  f"more under private for {len(more)} ({', '.join(more) or 'none'}); "
                  f"graded in {seconds['published']:.1f} s and {seconds['private']:.1f} s")


if __name__ == "__main__":
    main()
