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
  shape first, then the asked format, then the nearest in dense FLOPs per token, then the
  nearest length. Llama 3.1 70B in Q4_K_M at 32,768 tokens rests on Llama 3 70B Q4_K_M pp8192;
  Qwen3 32B in Q4_K_M on the same 70B workload (nearer in FLOPs than 8B).
- A move to another model, format or length multiplies by the ratio of the two token costs at
  the fitted attention weight (the GGUF formats all run llama.cpp's int8 kernels); its band
  widens in quadrature by the move's conformal half-width (prefill.move_half_width, measured
  over moves of model and length within one format: a move between formats, Q4_K_M to Q8_0,
  says so and is not scored).
- Several GPUs split the file by layers, and llama.cpp pipelines a prompt's batches over them:
  a configuration measured on the reference workload (2 x RTX 3090 on Llama 3 70B Q4_K_M
  pp8192, 338.8 tokens/s) answers as measured, moved like a one-GPU value; else the one-GPU
  value x the learned N-GPU / 1-GPU ratio of the prompt results at the reference's length (the
  pipeline gains with length: 2 x RTX 3090 read Llama 3 8B at 0.83 x one at 512 tokens and
  1.36 x at 8,192), the nearest measured count and length where that one is not measured.
  Independent copies each read their own prompt, on count / copies GPUs.
- One prompt: a batch of b prompts reads b of them; generation after it is the row's tokens/s.
"""

import math
from dataclasses import dataclass
from typing import cast

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
    speedup: float  # over one GPU (1.0 where measured on them)
    scaling_basis: str  # single | measured | split:learned@<n> at <tokens> | split:assumed

    def words(self, context: int) -> str:
        """What `why` says: the time, its band and what it rests on."""
        workload = self.reference.workload
        results = f"median of {counted(self.rests_on.n, 'result')}"
        if self.scaling_basis == "measured":
            basis = f"{workload} as measured on {self.count} of this GPU ({results})"
        elif self.rests_on.basis == "measured":
            basis = f"{workload} as measured on one of this GPU ({results})"
        else:
            basis = f"the throughput model's estimate of one such GPU on {workload}"
        what = " and ".join(
            [", ".join(self.moved[:-1]), self.moved[-1]] if self.moved[1:] else self.moved
        )
        moved = f", moved to this {what} by token cost" if self.moved else ""
        gpus = (
            f", x{self.speedup:.2f} over its {self.count} GPUs ({self.scaling_basis})"
            if self.scaling_basis.startswith("split")
            else ""
        )
        value, low, high = _durations(self.seconds, self.low, self.high)
        return (
            f"Reading one {context:,}-token prompt takes ~{value} (likely {low}-{high}) before "
            f"the first token: {basis}{moved}{gpus}; llama.cpp results, whose build and "
            "flash-attention setting decide a long prompt's speed."
        )


def _durations(*seconds: float) -> list[str]:
    """Seconds in the unit the first of them reads best in (min from 2 minutes, else s with
    two significant digits), with it after each."""
    first = seconds[0]
    if first >= 120:
        return [f"{s / 60:.1f} min" for s in seconds]
    digits = max(0, 1 - math.floor(math.log10(first))) if first > 0 else 0
    return [f"{s:.{digits}f} s" for s in seconds]


def _gguf(quant_name: str) -> bool:
    found = memory.find_quantization(quant_name, list(llm.quantizations()))
    return found is not None and found.kind == "gguf"


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
    candidates = [w for w in data.prefill.workloads if w.model in models and _gguf(w.quant)]
    if not candidates:
        return None

    def key(w: PrefillWorkload) -> tuple[bool, bool, float, float, str]:
        spec = models[w.model]
        own = w.model == ask.model.slug or llm.same_shape(spec, ask.model)
        same_format = memory.find_quantization(w.quant, formats) == ask.quant
        flops = abs(math.log(prefill.token_cost(spec, 0, 0.0) / asked))
        tokens = abs(math.log(w.tokens / ask.context))
        return (not own, not same_format, round(flops, 2), tokens, w.workload)

    return min(candidates, key=key)


@dataclass(frozen=True)
class PromptMove:
    """What every configuration of one ask shares: the reference, the move to the ask, and the
    rates moved to it (computed once per ask shape and data, kept in data.prompt_moves)."""

    reference: PrefillWorkload
    moved: tuple[str, ...]
    one_gpu: dict[str, OneRate]  # slug -> one GPU's rate, measured or estimated
    measured: dict[tuple[str, int], OneRate]  # (slug, count) -> a measured configuration's
    # count -> the learned layer-split (speedup, basis) at the reference's length, as asked
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
    at_ask = prefill.token_cost(ask.model, ask.context, weight)
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
    return PromptMove(reference, moved, one_gpu, measured, {})


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


def _layer_split(data: LlmData, tokens: int, count: int) -> tuple[float, str]:
    """The learned N-GPU / 1-GPU prompt ratio at the measured length nearest `tokens`."""
    by_length = {t: r for t, r in data.prefill.split_ratios.items() if r}
    if not by_length:
        return 1.0, "split:assumed"
    nearest = min(by_length, key=lambda t: (abs(math.log(t / tokens)), t))
    speedup, basis = llm_fit.split_speedup(by_length[nearest], count)
    return speedup, f"{basis} at {nearest:,} tokens"


def prompt_time(
    ask: llm_fit.Ask, option: LlmOption, data: LlmData, move: PromptMove | None
) -> PromptTime | None:
    """The option's time to read one asked prompt (`move`: prompt_move's for the ask); None
    without a move or without a rate for its GPU."""
    if move is None:
        return None
    per_copy = max(option.count // max(option.replicas, 1), 1)
    found = move.measured.get((option.gpu.slug, per_copy))
    if found is not None:
        rests_on, speedup, basis = found, 1.0, "measured"
    else:
        one = move.one_gpu.get(option.gpu.slug)
        if one is None:
            return None
        rests_on, speedup, basis = one, 1.0, "single"
        if per_copy > 1:
            split = move.layer_splits.get(per_copy)
            if split is None:
                split = _layer_split(data, move.reference.tokens, per_copy)
                move.layer_splits[per_copy] = split
            speedup, basis = split
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
        speedup,
        basis,
    )
