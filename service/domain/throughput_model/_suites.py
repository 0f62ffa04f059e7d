"""A stack's efficiency term in a suite that has no data of it, and for a stack nobody measured.

Design decisions (figures on the shipped corpus where measured):

- Suites. A workload names the lab or harness whose results measure it (``suite``: Lambda's
  PyTorch table, one llama-bench table, MLPerf; "" where none is named, which counts as one).
  The stack and per-GPU terms are kept per phase within a suite (the efficiency kind), and a
  suite's workload borrows its work split from the same suite first: a suite fixes scripts,
  batch sizes and software versions, and what a GPU's residuals learn there is largely that.
  Only the board-power slope and the architecture terms are shared by every suite; a stack
  without data in a suite keeps its difference from the stacks it shares with the suites of the
  phase that measure it (across_suites), else gets its term pooled over every suite of the
  phase. Pooled as an absolute level, ROCm's term took the level of the one suite that
  measures it, where CUDA sat 0.45 higher: in a suite of CUDA and Metal cards an RX 7900 XTX
  was put at 0.69 of an RTX 4090 on Llama-3-8B Q4_K_M prompt processing and an Arc B580 at
  0.41, where the suite measuring them has the 7900 XTX at 0.18 and the B580 at 0.12 of an RTX
  PRO 6000 Blackwell; carried as differences they are 0.19 and 0.11 of that card's estimate.
  Against each card's own measurement in the other suite this halves the prompt-processing
  error and worsens decode (across_suites has the figures); leave-one-GPU-out and
  bench/heldout.py figures are unchanged (no held-out GPU there is the only card of its stack
  in its suite). Measured with the
  GPU-Insights tables as a suite of their own (bench/heldout.py, 7 tables): a GPU known from the
  corpus went from median MdAPE 17.7% to 11.9%, p90 36.5% to 24.2%, coverage 66.7% to 83.3%
  (the RTX 4090, above its spec in Lambda's rows, had been estimated 43% high there); a cold GPU
  12.0% -> 10.7%, p90 33.1% -> 24.5%. On the shipped corpus, leave-one-GPU-out: median MdAPE
  10.1% -> 9.0%, p90 21.9% -> 21.2%, 21 -> 24 of 46 workloads meeting all targets; the MLPerf
  serving rows got worse (p90 43-53% -> 66-67%: within that suite the other GPUs' own terms
  absorb what the work split used to carry). Either half alone, per-suite terms without the
  same-suite borrowing or the borrowing without them, was worse than neither on the held-out
  tables (median MdAPE 21-22%); the suite's stack term as a deviation shrunk towards the pooled
  one was tried too (held-out p90 29%, corpus 22 of 46).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from service.domain.throughput_model._shrinkage import _variance_components
from service.domain.throughput_model._specs import base_kind


def across_suites(
    stack_terms: Mapping[tuple[str, str], float],
) -> dict[tuple[str, str], float]:
    """(stack, efficiency kind) -> the term of a stack in a suite without data of it: its term
    in each other suite of the phase that has it, less the mean term there of the stacks the two
    suites share, plus those stacks' mean term here; averaged over such suites. A difference in
    differences: each suite's work fit sets its own level, so a stack's term says something only
    against the other stacks of its suite. Pooled as absolute levels instead, ROCm took +0.04 on
    Llama-3-8B decode in a llama-bench suite of CUDA and Metal cards (CUDA +0.01 there), from a
    suite where it stood 0.42 below CUDA. No entry where no suite of the phase shares a stack
    with this one.

    Checked across the two llama-bench suites of Llama 2 7B Q4_0 and Llama 3 8B Q4_K_M: each card
    measured in one and estimated in the other, against its own measurement scaled by the models'
    layer bytes (decode, 3.68 / 4.21 GB) or parameters (prompt processing, 6.74 / 8.03 B); mean
    |log error| of the cards this rule moves. Prompt processing, 6 cards (Radeon, Instinct, Arc,
    Apple): 0.73 -> 0.31 (the Arc B580 +0.56 -> -0.46, the M3 Max -0.92 -> +0.11). Decode, 8 cards:
    0.17 -> 0.29 (the RX 7900 XTX +0.13 -> -0.33, the Arc B580 +0.39 -> -0.09, the M1 Max -0.01 ->
    +0.44). One CUDA card (an RTX PRO 6000 Blackwell) anchors the Llama 2 suite, so a difference
    taken there carries that card's own deviation (-0.33 in decode where it is estimated, in the
    other suite); decode is worse for it, prompt processing much better, 0.41 -> 0.30 over all
    14."""
    terms_of = _terms_by_kind(stack_terms)
    stacks = {stack for stack, _ in stack_terms}
    out: dict[tuple[str, str], float] = {}
    for target, here in terms_of.items():
        for stack in sorted(stacks - set(here)):
            own = {kind: there[stack] for kind, there in terms_of.items() if stack in there}
            carried = _carried(stack, target, terms_of, own)
            if carried is not None:
                out[(stack, target)] = carried
    return out


def _terms_by_kind(stack_terms: Mapping[tuple[str, str], float]) -> dict[str, dict[str, float]]:
    """(stack, kind) -> term, as kind -> stack -> term."""
    out: dict[str, dict[str, float]] = {}
    for (stack, kind), term in stack_terms.items():
        out.setdefault(kind, {})[stack] = term
    return out


def _carried(
    stack: str,
    target: str,
    terms_of: Mapping[str, Mapping[str, float]],
    own: Mapping[str, float],
) -> float | None:
    """`stack`'s term in suite `target` (across_suites): over the other suites of its phase,
    the mean of its term there (`own`, by kind) less the mean term there of the stacks both
    suites have, plus theirs here; None where no such suite shares a stack with `target`."""
    here = terms_of.get(target, {})
    found = []
    for kind, term in own.items():
        if kind == target or base_kind(kind) != base_kind(target):
            continue
        there = terms_of[kind]
        shared = (set(there) & set(here)) - {stack}
        if shared:
            found.append(
                term
                - float(np.mean([there[j] for j in shared]))
                + float(np.mean([here[j] for j in shared]))
            )
    return float(np.mean(found)) if found else None


def stack_centre(
    stack_pooled: Mapping[tuple[str, str], float], phase: str, leave_out: str | None = None
) -> float:
    """Mean of the (stack, phase) pooled terms at `phase`, one vote per stack (less
    `leave_out`'s); 0 with none. The term a stack nobody measured at that phase gets (see the
    module docstring, Bands)."""
    terms = [v for (stack, p), v in stack_pooled.items() if p == phase and stack != leave_out]
    return float(np.mean(terms)) if terms else 0.0


def _between_stacks(
    mean: Mapping[tuple[str, str], float],
    count: Mapping[tuple[str, str], float],
    pooled_of: Mapping[tuple[str, str], tuple[str, str]],
) -> dict[str, float]:
    """phase -> tau^2 of the (stack, phase) terms of that phase alone: the expected squared
    distance of a new stack's term from the measured stacks' mean, the term it gets
    (stack_centre). One stack measured: tau^2 = its within variance, as wide as the noise."""
    out = {}
    for phase in {p for _, p in pooled_of.values()}:
        items = {g: v for g, v in mean.items() if pooled_of[g][1] == phase}
        _, tau2, _ = _variance_components(items, count, {g: pooled_of[g] for g in items})
        out[phase] = tau2
    return out
