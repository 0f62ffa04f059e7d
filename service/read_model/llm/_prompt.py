"""How long a configuration of an inference ask in a GGUF file takes to read the asked prompt
before its first token: a llama-bench prompt workload (ppN) as measured on the configuration,
else the throughput model's estimate for one of its GPUs there, moved to the asked model,
format and length (service/domain/prefill.py), over the configuration's GPUs.

Design decisions:

- llama.cpp only. Every prompt result in the corpus is a llama-bench run (May 2024 builds,
  flash attention off, and a few later ROCm and SYCL ones), so an ask in a GGUF file gets a
  time and any other format none: moved to a serving engine's bf16 or fp8 prompt it had put
  one MI300X at 99 tokens/s on Llama 3.1 70B in bf16 (llama.cpp's 2024 ROCm prompt, 1,334
  tokens/s on a 7B model), and 2 x H100 at 29 s for a 32,768-token prompt that vLLM's
  flash-attention kernels read in about a third of that (an expert review, 2026-12-08). A
  mixture of experts gets none either: moved by its active parameters' FLOPs, Qwen3 30B-A3B
  read 2.2 times faster than a dense 8B, where llama.cpp's expert routing reads it slower, and
  no MoE prompt is measured to learn that from.
- The reference (`reference_for`): of the one-GPU GGUF prompt workloads, the asked model's own
  shape first, then the asked format, then one measured on at least MIN_REFERENCE_GPUS cards,
  then the nearest in dense FLOPs per token, then the nearest length. Llama 3.1 70B in Q4_K_M at
  32,768 tokens rests on Llama 3 70B Q4_K_M pp8192; Qwen3 32B in Q4_K_M on the same 70B
  workload (nearer in FLOPs than 8B); Mistral 7B in any GGUF format on Llama 3 8B Q4_K_M.
- A move to another model or a longer prompt multiplies by the ratio of the two token costs
  at the fitted attention weight, and its band widens in quadrature by the move's conformal
  half-width (prefill.move_half_width, over moves of model and length within one format). A
  shorter prompt than the reference's is read no faster per token. Another GGUF format is
  taken at the same rate (llama.cpp's prompt kernels are int8 for all of them), which the why
  says is not scored.
- Several GPUs split the file by layers, and llama.cpp pipelines a prompt's batches over them,
  gaining with the prompt's length and less for a large model (2 x RTX 3090 read Llama 3 8B at
  0.83 x one at 512 tokens and 1.36 x at 8,192; Llama 3 70B Q4_K_M pp8192 on 4 GPUs, 1.21-1.46
  x one on the cards measured alone, where 8B's reached about 2.8). A configuration measured on
  the reference answers as measured (2 x RTX 3090 on Llama 3 70B Q4_K_M pp8192, 338.8
  tokens/s); one of a GPU measured there at another count (alone included) as the nearest such
  count x the ratio of the two counts' learned N-GPU / 1-GPU ratios; else one GPU's rate x
  its count's. The ratios are the reference workload's own results' (split_speedup: the
  nearest measured count), else every prompt result's at the measured length nearest the
  reference's. A ratio pooled over every workload at the length had put 4 x RTX 3080 Ti at
  2.9 times the measured 4 x RTX 3090 on a 70B prompt, and 3 x RTX 3090 at 1.7 times its
  measured 2 and 4 (an expert review). Independent copies each read their own prompt, on
  count / copies GPUs.
- The why names the llama.cpp builds of the reference's results (the corpus's are mostly May
  2024, flash attention off; newer builds read long prompts faster), and for a batch of b
  prompts the b read in turn; generation after the prompt is the row's tokens/s.
"""

import math
from dataclasses import dataclass
from typing import Any, cast

from service.catalog import llm
from service.domain import llm_fit, memory, prefill
from service.domain.estimate import counted
from service.domain.vocabulary import Measurement
from service.read_model.llm._data import MAX_KEPT_OPTIONS, LlmData, LlmOption, PrefillWorkload
from service.read_model.memo import bounded


@dataclass(frozen=True)
class OneRate:
    """A prompt rate for the ask (tokens/s) on one GPU or a measured configuration, with its
    band's log widths and what it rests on."""

    rate: float
    faster: float  # log width towards a higher rate
    slower: float
    basis: str  # measured | estimated
    n: int  # results behind a measured value


@dataclass(frozen=True)
class PromptTime:
    seconds: float
    low: float  # seconds at the fast end of the band
    high: float
    reference: PrefillWorkload
    rests_on: OneRate
    moved: tuple[str, ...]  # what moved: model, format, length
    count: int  # GPUs that read the prompt together
    measured_on: int  # GPUs the measured value it rests on ran on (1: one GPU's rate)
    speedup: float  # over what it rests on
    scaling_basis: str  # single | measured | split:learned@<n> ... | split:assumed
    batch: int = 1
    shorter: bool = False  # the prompt is shorter than the reference's

    def words(self, context: int) -> str:
        """What `why` says: the time, its band and what it rests on."""
        workload = self.reference.workload
        results = f"median of {counted(self.rests_on.n, 'result')}"
        if self.rests_on.basis == "measured" and self.measured_on > 1:
            basis = f"{workload} as measured on {self.measured_on} of this GPU ({results})"
        elif self.rests_on.basis == "measured":
            basis = f"{workload} as measured on one of this GPU ({results})"
        else:
            basis = f"the throughput model's estimate of one such GPU on {workload}"
        by_cost = [m for m in self.moved if m != "format"]
        parts = []
        if by_cost:
            what = " and ".join(by_cost)
            parts.append(f"moved to this {what} by token cost")
            if self.shorter:
                parts[-1] += f" (no faster per token than at {self.reference.tokens:,})"
        if "format" in self.moved:
            parts.append(
                "taken at the same rate in this format (llama.cpp's prompt kernels are int8 "
                "for every GGUF format; not scored)"
            )
        moved = "".join(f", {p}" for p in parts)
        gpus = (
            f", x{self.speedup:.2f} to {self.count} GPUs ({self.scaling_basis})"
            if self.scaling_basis.startswith("split")
            else ""
        )
        value, low, high = _durations(self.seconds, self.low, self.high)
        batch = ""
        if self.batch > 1:
            (all_of_them,) = _durations(self.seconds * self.batch)
            batch = f"; the batch's {self.batch} prompts in turn ~{all_of_them}"
        return (
            f"Reading one {context:,}-token prompt takes ~{value} (likely {low}-{high}) before "
            f"the first token: {basis}{moved}{gpus}{batch}; {_builds(self.reference)}."
        )


def _builds(reference: PrefillWorkload) -> str:
    """The engine and builds a reference's results were run with: a long prompt's speed
    depends on them (flash attention, kernels)."""
    engine = " and ".join(reference.frameworks) or "llama.cpp"
    b = reference.builds
    if not b:
        return f"{engine} results (their build decides a long prompt's speed)"
    span = f"b{b[0]}" if len(b) == 1 else f"b{b[0]}-b{b[-1]}"
    return f"{engine} {span} (newer builds may read long prompts faster)"


def _durations(*seconds: float) -> list[str]:
    """Seconds in the unit the first of them reads best in (min from 2 minutes, else s with
    two significant digits), with it after each."""
    first = seconds[0]
    if first >= 120:
        return [f"{s / 60:.1f} min" for s in seconds]
    digits = max(0, 1 - math.floor(math.log10(first))) if first > 0 else 0
    return [f"{s:.{digits}f} s" for s in seconds]


# Another model's prompt workload measured on fewer GPUs alone is taken only where no other
# is: Llama 2 7B Q4_0 pp512, four cards of four stacks, had been Mistral 7B's reference in Q8_0
# (nearer in FLOPs than Llama 3 8B) while its Q4_K_M rested on Llama 3 8B Q4_K_M, measured on
# 19, and the larger format read 1.7 times faster
MIN_REFERENCE_GPUS = 5


def _reads_a_prompt(ask: llm_fit.Ask) -> bool:
    """An inference ask of a dense model in a GGUF file (module docstring)."""
    return ask.task == "inference" and ask.quant.kind == "gguf" and not ask.model.is_moe


def reference_for(ask: llm_fit.Ask, data: LlmData) -> PrefillWorkload | None:
    """The prompt workload the ask's reading time moves from (module docstring); None for a
    training ask, another format than a GGUF file, a mixture of experts, or where no GGUF
    prompt workload is measured."""
    if not _reads_a_prompt(ask):
        return None
    models = llm.models()
    formats = list(llm.quantizations())
    asked = prefill.token_cost(ask.model, 0, 0.0)
    candidates = []  # (workload, its format)
    for w in data.prefill.workloads:
        quant = memory.find_quantization(w.quant, formats)
        if w.model in models and quant is not None and quant.kind == "gguf":
            candidates.append((w, quant))

    def key(c: tuple[PrefillWorkload, memory.Quantization]) -> tuple[Any, ...]:
        w, quant = c
        spec = models[w.model]
        own = w.model == ask.model.slug or llm.same_shape(spec, ask.model)
        few = w.gpus < MIN_REFERENCE_GPUS
        flops = abs(math.log(prefill.token_cost(spec, 0, 0.0) / asked))
        tokens = abs(math.log(w.tokens / ask.context))
        return (not own, quant != ask.quant, few, round(flops, 2), tokens, w.workload)

    best = min(candidates, key=key, default=None)
    return None if best is None else best[0]


@dataclass(frozen=True)
class PromptMove:
    """What every configuration of one ask shares: the reference, the move to the ask, and the
    rates moved to it (computed once per ask shape and data, kept in data.prompt_moves)."""

    reference: PrefillWorkload
    moved: tuple[str, ...]
    one_gpu: dict[str, OneRate]  # slug -> one GPU's rate, measured or estimated
    measured: dict[tuple[str, int], OneRate]  # (slug, count) -> a measured configuration's
    measured_counts: dict[str, list[int]]  # slug -> the counts measured on the reference
    # count -> the learned layer-split (speedup, basis), filled as asked
    layer_splits: dict[int, tuple[float, str]]


def prompt_move(ask: llm_fit.Ask, data: LlmData) -> PromptMove | None:
    """The ask's move from its reference (data.prefill_reference: reference_for's, read for
    this ask), kept per (model, format, length); None where the ask has none."""
    if not _reads_a_prompt(ask) or data.prefill_reference is None:
        return None
    key = ("prompt", ask.model.slug, ask.quant.name, ask.context)
    found = bounded(data.prompt_moves, MAX_KEPT_OPTIONS, key, lambda: _prompt_move(ask, data))
    return cast(PromptMove | None, found)


def _prompt_move(ask: llm_fit.Ask, data: LlmData) -> PromptMove | None:
    reference = data.prefill_reference  # the ask's, with its estimates (_load.read)
    spec = llm.models().get(reference.model) if reference is not None else None
    if reference is None or spec is None or not reference.estimates:
        return None
    weight = data.prefill.attention_weight
    # a prompt shorter than the reference's is read no faster per token: a GPU is busier on a
    # long prompt's batches, and the token cost alone had read 128 tokens faster than 512
    at_ask = prefill.token_cost(ask.model, max(ask.context, reference.tokens), weight)
    if not at_ask > 0:
        return None
    ratio = prefill.token_cost(spec, reference.tokens, weight) / at_ask
    moved = tuple(
        what
        for what, same in (
            ("model", reference.model == ask.model.slug or llm.same_shape(spec, ask.model)),
            (
                "format",
                memory.find_quantization(reference.quant, list(llm.quantizations())) == ask.quant,
            ),
            ("length", reference.tokens == ask.context),
        )
        if not same
    )
    width = data.prefill.move_half_width if moved else 0.0
    one_gpu = {}
    for slug, e in reference.estimates.items():
        if e.value > 0 and e.low > 0 and e.high >= e.value:
            one_gpu[slug] = OneRate(
                e.value * ratio,
                math.hypot(math.log(e.high / e.value), width),
                math.hypot(math.log(e.value / e.low), width),
                e.basis,
                e.n,
            )
    measured = {}
    for m in data.measured:
        if m.workload == reference.workload and m.count > 1 and m.value.median > 0:
            measured[(m.gpu, m.count)] = _measured_rate(
                m.value, ratio, width, reference.single_result_half_width
            )
    counts: dict[str, list[int]] = {}
    for gpu, count in sorted(measured):
        counts.setdefault(gpu, []).append(count)
    return PromptMove(reference, moved, one_gpu, measured, counts, {})


def _measured_rate(value: Measurement, ratio: float, width: float, single: float) -> OneRate:
    """A measured configuration's rate moved by `ratio`: its results' spread, or where they
    have none (one result) the workload's pooled run-to-run noise `single`, and the move's
    `width` in quadrature."""
    low, high = value.band()
    median = value.median
    faster = math.log(high / median) if high > median else single
    slower = math.log(median / low) if 0 < low < median else single
    return OneRate(
        median * ratio, math.hypot(faster, width), math.hypot(slower, width), "measured", value.n
    )


def _layer_split(data: LlmData, move: PromptMove, count: int) -> tuple[float, str]:
    """The learned N-GPU / 1-GPU prompt ratio of the reference workload's own results, else of
    every prompt result at the measured length nearest the reference's (memoized on `move`)."""
    found = move.layer_splits.get(count)
    if found is not None:
        return found
    reference = move.reference
    own = data.prefill.workload_split_ratios.get(reference.workload) or {}
    if any(own.values()):
        speedup, basis = llm_fit.split_speedup(own, count)
        found = speedup, f"{basis} on {reference.workload}"
    else:
        by_length = {t: r for t, r in data.prefill.split_ratios.items() if any(r.values())}
        if not by_length:
            found = 1.0, "split:assumed"
        else:
            nearest = min(by_length, key=lambda t: (abs(math.log(t / reference.tokens)), t))
            speedup, basis = llm_fit.split_speedup(by_length[nearest], count)
            found = speedup, f"{basis} at {nearest:,} tokens"
    move.layer_splits[count] = found
    return found


def prompt_time(
    ask: llm_fit.Ask, option: LlmOption, data: LlmData, move: PromptMove | None
) -> PromptTime | None:
    """The option's time to read one asked prompt (`move`: prompt_move's for the ask); None
    without a move or without a rate for its GPU. A configuration measured on the reference
    answers as measured; one of a GPU measured there at another count, as the nearest such
    count scaled by the two counts' learned ratios (3 x RTX 3090 between the measured 2 and 4,
    not one card's estimate x a ratio: it had read a 70B prompt 1.7 times faster than both);
    else one GPU's rate x the learned ratio."""
    if move is None:
        return None
    per_copy = max(option.count // max(option.replicas, 1), 1)
    slug = option.gpu.slug
    one = move.one_gpu.get(slug)
    found = move.measured.get((slug, per_copy))
    near = list(move.measured_counts.get(slug, ()))
    if one is not None and one.basis == "measured":
        near.append(1)
    if found is not None:
        rests_on, speedup, basis, measured_on = found, 1.0, "measured", per_copy
    elif per_copy == 1:
        if one is None:
            return None
        rests_on, speedup, basis, measured_on = one, 1.0, "single", 1
    elif near:  # the nearest count measured, scaled by the two counts' learned ratios
        measured_on = min(near, key=lambda c: (abs(c - per_copy), c))
        base = move.measured.get((slug, measured_on)) if measured_on > 1 else one
        if base is None:
            return None
        rests_on = base
        to, basis = _layer_split(data, move, per_copy)
        at = _layer_split(data, move, measured_on)[0] if measured_on > 1 else 1.0
        speedup = to / at
    else:
        if one is None:
            return None
        rests_on, measured_on = one, 1
        speedup, basis = _layer_split(data, move, per_copy)
    seconds = prefill.prompt_seconds(ask.context, rests_on.rate * speedup)
    if seconds is None:
        return None
    return PromptTime(
        seconds,
        seconds * math.exp(-rests_on.faster),  # a higher rate: fewer seconds
        seconds * math.exp(rests_on.slower),
        move.reference,
        rests_on,
        move.moved,
        per_copy,
        measured_on,
        speedup,
        basis,
        ask.batch,
        ask.context < move.reference.tokens,
    )
