"""The border between the grader and student code.

Files here run in three different processes:

* ``client.py`` runs in the trusted grading process. It starts the zygote, sends it the
  plan of probes and turns the plain data that comes back into values (``wire.decode``).
* ``zygote.py`` runs in a fresh interpreter that has imported torch but has never seen an
  expected value, a test or the report's path. It forks a supervisor per slot of a plan
  (``schedule.py``: which modules run together; ``supervisor.py``), which forks one worker per
  exercise module and drives it with ``probe_loop.py`` (deadlines, budgets, restarts: the loop
  ``local.py`` drives on a student's own machine too, in interpreters that run
  ``local_interpreter.py``), each worker
  confined by ``confine.py`` (the Box policy) and ``lockdown.py`` (its own limits and
  privileges), with ``rootfs.py`` (the allow-listed root), ``syscall_filter.py`` (seccomp),
  ``capture.py`` (the worker's output and death) and ``linux.py`` (the raw system calls).
* ``worker.py`` runs *with student code*, unprivileged and resource-limited; everything it
  sends back is treated as hostile and validated by ``wire.decode``.

``wire.py`` is the only format that crosses the border: JSON with tensors as raw bytes;
``protocol.py`` types what it carries (the plan, the limits, a probe's error, the envelopes).
Nothing is ever pickled.
"""
