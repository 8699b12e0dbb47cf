"""Where a batch's CPU goes, by process role: the sandbox's handlers, supervisors, workers and
namespace inits, the trusted collector and grading processes, and the batch's own process (the
CSV, the reports, the class report). Linux, as root, with ``perf``.

    .venv/bin/python scripts/cpu_by_role.py [--class /tmp/class40] [--jobs 2] [--code DIR]

Runs ``batch`` (the checkout ``--code``, default this one) on the class under ``perf record -a``,
then reads the process tree from perf's fork events: the zygote (an exec'd interpreter) and its
descendants are the sandbox (handler, supervisor, worker; ``sleep`` for a namespace's init, the
page cache's answering process counted with the handlers); the batch's forked collector and its
children are the trusted side. Prints CPU seconds per role and per submission, and process counts.
CPU is counted by sampling (1 kHz), so it holds on a busy machine where wall times do not.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SANDBOX = {1: "zygote", 2: "handler", 3: "supervisor", 4: "worker"}
TRUSTED = {1: "collector", 2: "grading process"}


def record(code: Path, folder: Path, jobs: int, out: Path) -> tuple[int, int]:
    """Run the batch under perf; return (the root pid, how many submissions)."""
    csv = out.parent / "grades.csv"
    command = (f"echo $$ > {out.parent}/root; cd {code} && {sys.executable} -m grader batch {folder} "
               f"--assignment ch03 --csv {csv} --jobs {jobs}")
    subprocess.run(["perf", "record", "-a", "-F", "1000", "-o", str(out), "--", "sh", "-c", command],
                   check=True, capture_output=True)
    return int((out.parent / "root").read_text()), sum(1 for p in folder.iterdir() if p.is_dir())


def tree(data: Path) -> tuple[dict[int, int], dict[int, str], collections.Counter]:
    """Parents, command names and sample counts by pid, from perf's task events and samples."""
    text = subprocess.run(["perf", "script", "-i", str(data), "--show-task-events", "-F", "comm,pid,tid,event"],
                          capture_output=True, text=True, check=True).stdout
    parent, comm, samples = {}, {}, collections.Counter()
    for line in text.splitlines():
        if fork := re.search(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)", line):
            pid, tid, ppid, _ = map(int, fork.groups())
            if pid == tid and pid != ppid:
                parent[pid] = ppid
        elif named := re.search(r"PERF_RECORD_COMM.*?: (.*):(\d+)/(\d+)", line):
            comm[int(named.group(2))] = named.group(1)
        elif "PERF_RECORD" not in line and (sample := re.match(r"\s*(.*?)\s+(\d+)/(\d+)\s", line)):
            samples[int(sample.group(2))] += 1
    return parent, comm, samples


def batch_process(root: int, parent: dict[int, int], comm: dict[int, str]) -> int:
    """The batch's own process: the shell perf started, once it has become Python, or its Python child."""
    if comm.get(root) == "python":
        return root
    return next(pid for pid, ppid in parent.items() if ppid == root and comm.get(pid) == "python")


def role(pid: int, batch: int, parent: dict[int, int], comm: dict[int, str]) -> str | None:
    chain = []
    while pid in parent and pid != batch:
        chain.append(pid)
        pid = parent[pid]
    if pid != batch:
        return None  # outside the batch
    if not chain:
        return "batch (its own process)"  # the CSV, the reports, the class report
    top, depth = chain[-1], len(chain)  # the batch's child: the zygote (exec'd) or the collector (forked)
    names = SANDBOX if comm.get(top) == "python" else TRUSTED
    name = names.get(depth, f"depth {depth}")
    return f"{name} (sleep: a namespace's init)" if comm.get(chain[0]) == "sleep" else name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class", dest="folder", type=Path, default=Path("/tmp/class40"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--code", type=Path, default=ROOT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "perf.data"
        root, students = record(args.code.resolve(), args.folder.resolve(), args.jobs, data)
        parent, comm, samples = tree(data)
    batch = batch_process(root, parent, comm)
    cpu, count = collections.Counter(), collections.Counter()
    for pid, n in samples.items():
        if (name := role(pid, batch, parent, comm)) is not None:
            cpu[name] += n
    for pid in {*parent, batch}:
        if (name := role(pid, batch, parent, comm)) is not None:
            count[name] += 1
    print(f"batch --jobs {args.jobs} on {students} submissions ({args.code}): CPU by role")
    for name, n in cpu.most_common():
        print(f"  {name:38s} {n / 1000:6.2f} s  {n / students:6.1f} ms per submission  "
              f"({count[name] / students:.1f} processes each)")


if __name__ == "__main__":
    main()
