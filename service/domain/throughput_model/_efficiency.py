"""Per-GPU efficiency relative to the model: board power, stack, architecture, workload and
GPU terms, partially pooled from the fit's residuals.

Design decisions (figures on the shipped corpus where measured):

- Efficiency. ``log e_gw = power + stack[kind] + arch + arch_w + gpu[kind]`` with ``kind``
  the workload's phase: each GPU's residuals over every workload where it is measured, partially
  pooled (empirical Bayes, one-way random effects per level, method of moments for the prior
  variance): a group's mean is shrunk towards its parent by tau^2 / (tau^2 + within / n). The
  architecture term is hardware and is shared by every kind of work; the stack and per-GPU terms
  are kept per kind, because a framework's training step, llama.cpp's prompt processing and its
  token generation are different code: a Radeon card's efficiency learned from llama.cpp
  decode, applied to PyTorch training, put an RX 7900 XTX above an RTX 4080 on ResNet-50 with no
  ROCm training result behind it (held-out errors barely moved: median MdAPE 9.9% either way,
  median p90 22.8% -> 23.7%). Kinds are kept within a suite too (below); a stack without data
  of a kind in any suite gets the mean of the measured stacks' terms at that phase (Bands). The
  per-GPU term applies only to the GPU itself (it has data); GPUs without data get their
  stack's and architecture's terms, shared by every GPU of the group, so within an architecture
  and stack the estimate is monotone in the rates. In the architecture term each (GPU, kind)
  has one vote, whatever its number of workloads: a card's 18 Lambda workloads are one lab's
  runs of one card, not 18 views of its architecture, and weighted per workload they outvoted
  the same card's llama-bench kinds and its siblings' in the term every kind shares. Weighted
  per workload before, same corpus and run (leave-one-GPU-out, 47 workloads with 6+ GPUs):
  26 -> 25 meeting all targets, median MdAPE 9.1% -> 8.9%, p90 21.4% -> 21.2%, coverage 80.0%
  either way (Llama-3-70B pp512 went over the p90 line, 20.1% -> 25.4%, nine GPUs);
  bench/heldout.py, a known GPU 11.3% -> 11.1% (p90 25.7% -> 22.1%, coverage 83.3% -> 87.5%),
  a cold one 11.1% -> 11.2% (p90 25.4% -> 22.3%), 0 -> 1 of 7 tables meeting all targets.
- Architecture x workload. Below the architecture term, each ((stack, architecture), workload)
  cell gets the mean of its GPUs' residuals beyond their other terms, shrunk to 0 by a one-way
  random-effects fit per efficiency kind (`pool_workload_terms`): what the cards of one
  architecture share on one workload and not on the others (a kernel it runs badly, or one
  lab's older software on it: Lambda's first table was run in NGC PyTorch 20.01 for pre-Ampere
  cards and 20.10 for Ampere (lambdal/deeplearning-benchmark pytorch/README.md at 51354c24), its
  later rows 22.09 and newer; on Transformer-XL Base fp16 the four Turing cards measured only
  in 20.01 sit 0.28-0.41 below the model in log, the Quadro RTX 8000, also run in 22.09, 0.10
  above). A card nobody measured gets its
  architecture's term on the workload, and monotonicity within an architecture and stack holds
  (the term is shared). The variance components come from the cells with two or more GPUs: a
  one-GPU cell says nothing about how far groups sit apart, and counted in they set tau^2 to 0
  (in Lambda's suite tau^2 = 0.005 against a within-cell variance of 0.020, so a five-card
  cell keeps about half of its mean). Same corpus and run, leave-one-GPU-out: 25 -> 26 of 47
  workloads meeting all targets, median MdAPE 8.9% -> 8.4%, p90 21.2% -> 21.0%, coverage 80.0%
  -> 81.8%; Transformer-XL Base fp16 30.0% -> 20.5% (p90 66.5% -> 47.6%) and `llm-train`, the
  default workload, 15.0% -> 11.0% (p90 30.5% -> 24.7%). bench/heldout.py: a known GPU 11.1%
  -> 10.8% (p90 22.1% -> 26.6%, coverage 87.5% -> 83.3%), a cold one 11.2% -> 11.0% (p90 22.3%
  -> 26.4%), 1 of 7 tables either way; the p90 rise is one table's tail (ResNet-50 v2 fp16,
  22.1% -> 32.4%: the V100S PCIe, the table's only Volta card and in no corpus row, +0.17 ->
  +0.30 in log through the refitted work splits).
- Board power. ``power = b (log TDP - c)``, one slope for every GPU (``c`` the results-weighted
  mean log TDP; a GPU without a stated TDP gets 0), fitted by weighted least squares on the GPUs'
  mean residuals before the groups are pooled, and kept >= 0: a datasheet rate assumes the boost
  clock, and a card with a small power budget cannot hold it under a long training run, while a
  450 W consumer card holds it or better. Held-out cold GPUs on the shipped corpus showed it:
  mean log error +0.33 for the 140 W RTX A4000 and +0.29 for the 130 W RTX 4000 Ada, -0.38 for the
  450 W RTX 4090 and -0.25 for the 700 W H100 SXM; log TDP alone explained about a third of the
  variance of those per-GPU errors (the A4000's mean then included a failed WaveGlow fp16 run,
  log error +2.7, that the gate refuses since). Fitted on the shipped corpus the slope is about
  0.15 (twice the power, 11% more of the datasheet rate; 0.17 with the failed run); when it was
  introduced, leave-one-GPU-out median MdAPE 11.9% -> 10.9%,
  median p90 34.4% -> 28.4% (same data, same run), and 11.3% -> 10.2%, p90 23.7% -> 22.9% once
  GGUF rows were costed at the int8 rate. One slope, not one per architecture or card:
  it is learned from the database's results on every fit, like the groups, and it keeps the
  estimate monotone in the rates with board power counted as one of them. Per-resource
  versions (the slope on the compute rates only) fitted an implausible 0.9 and did worse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from service.domain.throughput_model._constants import MAX_LOG_MULTIPLIER
from service.domain.throughput_model._shrinkage import (
    _anova_components,
    _shrink,
    _variance_components,
    _weighted_mean,
)
from service.domain.throughput_model._specs import GpuSpec, base_kind
from service.domain.throughput_model._suites import (
    _between_stacks,
    _carried,
    _terms_by_kind,
    across_suites,
    stack_centre,
)


@dataclass(frozen=True)
class Efficiencies:
    """Log multipliers on throughput: a slope on log board power shared by every GPU, shared
    terms per (stack, efficiency kind) where that suite has data of the stack, else per (stack,
    phase) pooled over every suite, and per (stack, architecture), and per (GPU, efficiency
    kind) for GPUs with data of that kind. Kinds here are efficiency kinds (a phase within a
    suite, WorkloadSpec.efficiency_kind; no suite named counts as one)."""

    stack: Mapping[tuple[str, str], float]  # (stack, efficiency kind)
    group: Mapping[tuple[str, str], float]  # (stack, architecture)
    gpu: Mapping[tuple[str, str], float]  # (slug, efficiency kind)
    power_slope: float = 0.0
    power_center: float = 0.0
    # (slug, kind) -> stack + architecture terms pooled without that GPU's residuals: what a
    # cold prediction of a GPU with data would get (see held_out_log_multiplier)
    without: Mapping[tuple[str, str], float] = field(default_factory=dict)
    # (stack, phase) pooled over every suite: for a suite without data of the stack
    stack_pooled: Mapping[tuple[str, str], float] = field(default_factory=dict)
    # phase -> tau^2 of the (stack, phase) terms around their mean: how far a stack never
    # measured at that phase may sit from the mean it is given (stack_centre)
    between_stacks: Mapping[str, float] = field(default_factory=dict)
    # phase -> mean of the measured stacks' pooled terms at that phase: a new stack's best guess
    stack_centre: Mapping[str, float] = field(default_factory=dict)
    # (stack, efficiency kind) for a suite without data of the stack, from the suites of the
    # phase that have it and share other stacks with this one (across_suites)
    stack_across: Mapping[tuple[str, str], float] = field(default_factory=dict)
    # ((stack, architecture), workload) -> what the GPUs of an architecture share on one
    # workload beyond their terms above (pool_workload_terms); none for a workload not measured
    workload_group: Mapping[tuple[tuple[str, str], str], float] = field(default_factory=dict)
    # (slug, workload) -> that term pooled from the group's other GPUs only
    workload_group_without: Mapping[tuple[str, str], float] = field(default_factory=dict)

    def power(self, spec: GpuSpec) -> float:
        return _power_term(spec, self.power_slope, self.power_center)

    def held_out_log_multiplier(self, spec: GpuSpec, kind: str, workload: str = "") -> float:
        """log_multiplier as if the GPU had no data: its stack and architecture terms pooled
        from the other GPUs only. A GPU alone in its (stack, architecture) group, or the only
        one of its stack with data of a kind, otherwise carries its own residuals into its
        leave-one-out errors through those terms, and the bands made from them are too narrow
        for a card nobody measured (held out cold, the group has no data at all)."""
        shared = self.without.get((spec.slug, kind))
        if shared is None:
            return self.log_multiplier(spec, kind, own=False, workload=workload)
        out = self.power(spec) + shared
        out += self.workload_group_without.get((spec.slug, workload), 0.0)
        return min(max(out, -MAX_LOG_MULTIPLIER), MAX_LOG_MULTIPLIER) if math.isfinite(out) else 0.0

    def stack_measured(self, stack: str, kind: str) -> bool:
        """Whether any GPU of `stack` has data of the kind's phase, in any suite."""
        return (stack, base_kind(kind)) in self.stack_pooled

    def unmeasured_stack_half_width(self, kind: str, z: float) -> float:
        """Log half-width a band widens by (in quadrature) for a stack without data of the
        kind's phase (stack_measured False): z x the spread of the measured stacks' terms
        around their mean, the term it gets (between_stacks, stack_centre)."""
        return z * math.sqrt(max(self.between_stacks.get(base_kind(kind), 0.0), 0.0))

    def stack_term(self, stack: str, kind: str) -> float:
        """The stack's term within the kind's suite where that has data, else carried from the
        suites of its phase that share stacks with this one (across_suites), else pooled over
        every suite of its phase, else (a stack nobody measured at that phase) the mean of the
        measured stacks' terms at that phase (0, the model, with none measured)."""
        within_suite = self.stack.get((stack, kind))
        if within_suite is not None:
            return within_suite
        across = self.stack_across.get((stack, kind))
        if across is not None:
            return across
        phase = base_kind(kind)
        return self.stack_pooled.get((stack, phase), self.stack_centre.get(phase, 0.0))

    def log_multiplier(
        self, spec: GpuSpec, kind: str, own: bool = True, workload: str = ""
    ) -> float:
        out = self.power(spec) + self.stack_term(spec.stack, kind)
        out += self.group.get(spec.group, 0.0)
        out += self.workload_group.get((spec.group, workload), 0.0)
        out += self.gpu.get((spec.slug, kind), 0.0) if own else 0.0
        return min(max(out, -MAX_LOG_MULTIPLIER), MAX_LOG_MULTIPLIER) if math.isfinite(out) else 0.0


def _power_term(spec: GpuSpec, slope: float, center: float) -> float:
    lp = spec.log_power
    return slope * (lp - center) if lp is not None else 0.0


def power_trend(
    mean: Mapping[str, float], count: Mapping[str, float], specs: Mapping[str, GpuSpec]
) -> tuple[float, float]:
    """(slope, centre) of GPU mean log residuals on log board power: least squares weighted by
    each GPU's number of workloads, slope kept >= 0 (more power never lowers the rate a card
    holds); (0, 0) with fewer than three GPUs that state a board power."""
    gs = [g for g in mean if specs[g].log_power is not None]
    if len(gs) < 3:
        return 0.0, 0.0
    x = np.array([specs[g].log_power for g in gs], dtype=float)
    y = np.array([mean[g] for g in gs])
    w = np.array([count[g] for g in gs])
    center = float(np.average(x, weights=w))
    xc = x - center
    den = float(np.sum(w * xc * xc))
    if not den > 0:
        return 0.0, center
    slope = float(np.sum(w * xc * (y - np.average(y, weights=w))) / den)
    return (max(slope, 0.0) if math.isfinite(slope) else 0.0), center


def pool_efficiencies(
    residuals: Mapping[tuple[str, str], float],
    specs: Mapping[str, GpuSpec],
    kinds: Mapping[str, str] | None = None,
) -> Efficiencies:
    """Board power slope, then (stack, kind), (stack, architecture) and (GPU, kind) log
    efficiencies from log residuals per (gpu, workload); `kinds` maps a workload to its kind
    (missing: "")."""
    kinds = kinds or {}
    by_gpu: dict[str, list[float]] = {}
    for (gpu, _w), r in residuals.items():
        by_gpu.setdefault(gpu, []).append(r)
    if not by_gpu:
        return Efficiencies({}, {}, {})
    slope, center = power_trend(
        {g: float(np.mean(v)) for g, v in by_gpu.items()},
        {g: float(len(v)) for g, v in by_gpu.items()},
        specs,
    )
    per_gpu: dict[tuple[str, str], list[float]] = {}
    for (gpu, w), r in residuals.items():
        per_gpu.setdefault((gpu, kinds.get(w, "")), []).append(
            r - _power_term(specs[gpu], slope, center)
        )
    count = {g: float(len(v)) for g, v in per_gpu.items()}
    mean = {g: float(np.mean(v)) for g, v in per_gpu.items()}
    stack_of = {g: (specs[g[0]].stack, g[1]) for g in mean}
    stack, stack_tau2, stack_within = _variance_components(mean, count, stack_of)
    pooled_of = {g: (specs[g[0]].stack, base_kind(g[1])) for g in mean}
    stack_pooled, pooled_tau2, pooled_within = _variance_components(mean, count, pooled_of)
    after_stack = {g: mean[g] - stack[stack_of[g]] for g in mean}
    group_of = {g: specs[g[0]].group for g in mean}
    # One vote per (GPU, kind) in the architecture term, which every kind shares: a card's 18
    # Lambda workloads are one lab's runs of one card, not 18 views of its architecture.
    votes = {g: 1.0 for g in mean}
    group, group_tau2, group_within = _variance_components(after_stack, votes, group_of)
    after_group = {g: after_stack[g] - group.get(group_of[g], 0.0) for g in mean}
    without = _pooled_without_each_gpu(
        mean,
        count,
        votes,
        (stack_of, pooled_of, group_of),
        ((stack_tau2, stack_within), (pooled_tau2, pooled_within), (group_tau2, group_within)),
        stack_pooled,
        stack,
    )
    # GPU level, per kind: the (GPU, kind)'s workloads are the items; noise = pooled variance
    # within (GPU, kind).
    own = {}
    dev = [r - mean[g] for g, v in per_gpu.items() for r in v]
    dof = sum(len(v) for v in per_gpu.values()) - len(per_gpu)
    within = float(np.sum(np.square(dev)) / dof) if dof > 0 else float(np.var(list(mean.values())))
    spread = np.array(list(after_group.values()))
    noise_mean = float(np.mean([within / count[g] for g in mean]))
    tau2 = max(0.0, float(np.mean(spread**2)) - noise_mean) if len(spread) > 1 else within
    for g in mean:
        own[g] = _shrink(after_group[g], count[g], tau2, within)
    beyond = {}
    for (gpu, w), r in residuals.items():
        item = (gpu, kinds.get(w, ""))
        shared = stack[stack_of[item]] + group.get(group_of[item], 0.0)
        beyond[(gpu, w)] = r - _power_term(specs[gpu], slope, center) - shared - own[item]
    workload_group, workload_group_without = pool_workload_terms(beyond, specs, kinds)
    return Efficiencies(
        stack,
        group,
        own,
        slope,
        center,
        without,
        stack_pooled,
        _between_stacks(mean, count, pooled_of),
        {phase: stack_centre(stack_pooled, phase) for _, phase in stack_pooled},
        across_suites(stack),
        workload_group,
        workload_group_without,
    )


def pool_workload_terms(
    beyond: Mapping[tuple[str, str], float],
    specs: Mapping[str, GpuSpec],
    kinds: Mapping[str, str],
) -> tuple[dict[tuple[tuple[str, str], str], float], dict[tuple[str, str], float]]:
    """((stack, architecture), workload) -> the mean of the group's GPUs' residuals on the
    workload beyond their other terms, shrunk to 0, and (slug, workload) -> the same without
    that GPU. The variance components are per efficiency kind, from the cells with at least two
    GPUs (one-way ANOVA, unbalanced: tau^2 = (MSB - MSW) / n0); a cell of one GPU says nothing
    about how far its group's mean sits from the others', only how noisy it is."""
    cells: dict[tuple[tuple[str, str], str], list[tuple[str, float]]] = {}
    for (gpu, w), v in beyond.items():
        cells.setdefault((specs[gpu].group, w), []).append((gpu, v))
    by_kind: dict[str, list[list[float]]] = {}
    for (_, w), items in cells.items():
        by_kind.setdefault(kinds.get(w, ""), []).append([v for _, v in items])
    components = {k: _anova_components(values) for k, values in by_kind.items()}
    terms: dict[tuple[tuple[str, str], str], float] = {}
    without: dict[tuple[str, str], float] = {}
    for cell, items in cells.items():
        tau2, within = components[kinds.get(cell[1], "")]
        terms[cell] = _shrink(float(np.mean([v for _, v in items])), len(items), tau2, within)
        for gpu, _ in items:
            others = [v for other, v in items if other != gpu]
            without[(gpu, cell[1])] = (
                _shrink(float(np.mean(others)), len(others), tau2, within) if others else 0.0
            )
    return terms, without


def _pooled_without_each_gpu(
    mean: Mapping[tuple[str, str], float],
    count: Mapping[tuple[str, str], float],
    votes: Mapping[tuple[str, str], float],
    levels: tuple[
        Mapping[tuple[str, str], tuple[str, str]],
        Mapping[tuple[str, str], tuple[str, str]],
        Mapping[tuple[str, str], tuple[str, str]],
    ],
    components: tuple[tuple[float, float], tuple[float, float], tuple[float, float]],
    stack_pooled: Mapping[tuple[str, str], float],
    stack_terms: Mapping[tuple[str, str], float],
) -> dict[tuple[str, str], float]:
    """(slug, kind) -> stack (within the kind's suite, else across_suites, else pooled over
    suites) + architecture
    terms with every (slug, *) item left out, for each GPU with data and each kind of work in
    the data. `levels`: item -> (stack, efficiency kind), (stack, phase), (stack,
    architecture). The variance components (tau^2, W) stay those of the whole fit: leaving one
    GPU out changes a group's mean and size, which is what a held-out GPU's prediction depends
    on. A GPU alone in its stack at a phase gets the other stacks' mean there (stack_centre),
    as a card of a stack nobody measured would. `votes` weighs the items in the architecture
    term as the fit does (one per item), `count` in the stack terms."""
    stack_of, _, group_of = levels
    stack_components, pooled_components, group_components = components
    kinds = {k for _, k in mean}
    members: list[dict[tuple[str, str], list[tuple[str, str]]]] = [{}, {}, {}]
    first_item: dict[str, tuple[str, str]] = {}
    for item in mean:
        for level, of in zip(members, levels, strict=True):
            if item in of:
                level.setdefault(of[item], []).append(item)
        first_item.setdefault(item[0], item)
    by_stack, by_pooled, by_group = members

    def pooled(
        items: list[tuple[str, str]],
        values: Mapping[tuple[str, str], float],
        components: tuple[float, float],
        weights: Mapping[tuple[str, str], float] = count,
    ) -> float:
        if not items:
            return 0.0
        return _shrink(_weighted_mean(items, values, weights), len(items), *components)

    terms_of = _terms_by_kind(stack_terms)
    out: dict[tuple[str, str], float] = {}
    for slug, mine in first_item.items():
        stack_name, group = stack_of[mine][0], group_of[mine]
        stack_term: dict[str, float] = {}
        for kind in kinds:
            in_suite = [i for i in by_stack.get((stack_name, kind), []) if i[0] != slug]
            if in_suite:
                stack_term[kind] = pooled(in_suite, mean, stack_components)
                continue
            own = {  # its term in each other suite of the phase, without this GPU's items
                other: pooled(held, mean, stack_components)
                for other in terms_of
                if other != kind
                and base_kind(other) == base_kind(kind)
                and (held := [i for i in by_stack.get((stack_name, other), []) if i[0] != slug])
            }
            carried = _carried(stack_name, kind, terms_of, own)
            if carried is not None:
                stack_term[kind] = carried
                continue
            same_stack = [
                i for i in by_pooled.get((stack_name, base_kind(kind)), []) if i[0] != slug
            ]
            stack_term[kind] = (
                pooled(same_stack, mean, pooled_components)
                if same_stack
                else stack_centre(stack_pooled, base_kind(kind), leave_out=stack_name)
            )
        others = [i for i in by_group.get(group, []) if i[0] != slug]
        after_stack = {i: mean[i] - stack_term[i[1]] for i in others}
        group_term = pooled(others, after_stack, group_components, votes)
        for kind in kinds:
            out[(slug, kind)] = stack_term[kind] + group_term
    return out
