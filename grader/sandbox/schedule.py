"""Which of a plan's modules run together: phases one after the other, in each at most ``workers``
slots side by side (the zygote's handler forks one supervisor per slot, :mod:`grader.sandbox.supervisor`)."""

from __future__ import annotations

from grader.sandbox.protocol import ModulePlan, Plan

Group = list[tuple[str, ModulePlan]]  # modules run one after the other in one slot's box


def slot_schedule(plan: Plan) -> list[list[Group]]:
    """The plan's modules by slot, then by phase: slot ``i`` runs group ``i`` of every phase's
    :func:`module_groups` (an empty list where a phase has fewer groups). One supervisor and one
    box serve a slot across every phase, instead of one per group and phase."""
    by_phase = [module_groups(phase, plan.limits.workers) for phase in phases(plan)]
    count = max((len(groups) for groups in by_phase), default=0)
    return [[groups[i] if i < len(groups) else [] for groups in by_phase] for i in range(count)]


def phases(plan: Plan) -> list[Group]:
    """The plan's modules in phases, run one after the other: a module's phase (``phase``, from the
    rubric: :meth:`grader.rubric.Rubric.phase`) comes after the phase of every module it uses, so
    the modules that hold no reference come first.

    Workers of one phase may run side by side; no two workers of different phases ever do. So a
    worker that holds a reference (mha's, with the reference causal) never runs beside, nor before,
    the worker of the module it answers (causal), nor beside any worker of an earlier phase
    (self_attention_v2, which a masked-off causal attention would answer). It may run beside a
    worker of its own phase that holds other references (ch03: weight_transfer's, with the two
    self-attention classes): each could learn the other's, whose own modules have run already in
    this plan (docs/threat-model.md, *Phases*).
    """
    by_phase: dict[int, Group] = {}
    for stem, module in plan.modules.items():
        by_phase.setdefault(module.phase, []).append((stem, module))
    return [by_phase[key] for key in sorted(by_phase)]


def module_groups(phase: Group, workers: int) -> list[Group]:
    """A phase's modules in at most ``workers`` groups, each run in turn in one slot's Box (the
    namespaces and root are built once per slot, not once per module, :func:`slot_schedule`). No
    supervisor loads a reference: a worker loads its own module's alone
    (:func:`grader.sandbox.supervisor.load_references`)."""
    count = max(1, min(workers, len(phase)))
    return [phase[start::count] for start in range(count)]


