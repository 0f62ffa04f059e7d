"""How long a configuration of an inference ask takes to read the asked prompt before its first
token: the throughput model's estimate (or the measured value) for one GPU on a measured
prompt workload, moved to the asked model and length (service/domain/prefill.py), over the
configuration's GPUs.

Design decisions:

- The reference (`reference_for`): of the one-GPU prompt workloads (llama-bench ppN), one in a
  format of the ask's kind, GGUF for a GGUF file (llama.cpp's integer kernels) and F16 for any
  other format; of those the asked model's own shape first, then the asked format, then the
  nearest in dense FLOPs per token, then the nearest length. Llama 3.1 70B in Q4_K_M at 32,768
  tokens rests on Llama 3 70B Q4_K_M pp8192; Qwen3 32B in Q4_K_M on the same 70B workload
  (nearer in FLOPs than 8B); Qwen3 30B-A3B (3.3B active) in Q4_K_M on Llama 3 8B Q4_K_M,
  measured on 19 GPUs, rather than Llama 2 7B Q4_0 pp512, nearer in FLOPs but measured on 4.
- A move to another model, length or format multiplies by the ratio of the two token costs at
  the fitted attention weight, and by the ratio of the GPU's matrix rates for the two formats
  (an F16 file's prompt runs at the FP16-accumulate rate in llama.cpp, twice a GeForce card's
  FP32-accumulate rate; a bf16 ask for a serving engine at its bf16 rate). Its band widens in
  quadrature by the move's conformal half-width (prefill.move_half_width); a value moved from
  llama.cpp's F16 prompt to another engine's format says so, and its band does not cover the
  engines' difference (no result in the corpus measures it).
- Several GPUs: a GGUF file split by layers reads at the learned N-GPU / 1-GPU ratio of
  llama.cpp's prompt results (split_speedup; 1.0 where none is measured); a tensor-parallel
  split at the framework's data-parallel profile (the prompt's matrix products are compute
  bound and split over the GPUs); independent copies each read their own prompt, on count /
  copies GPUs.
- Only the prompt: generation after it is the row's tokens/s.
"""

import math
from dataclasses import dataclass
from typing import cast

from service.catalog import llm
from service.domain import llm_fit, memory, prefill
from service.domain.estimate import Estimate, counted
from service.domain.plausibility import fp16_accumulate_tflops, peak_tflops
from service.read_model.llm._data import MAX_KEPT_OPTIONS, LlmData, LlmOption, PrefillWorkload
from service.read_model.llm._throughput import _parallel_scaling
from service.read_model.memo import bounded


@dataclass(frozen=True)
class PromptTime:
    seconds: float
    low: float  # seconds at the fast end of the band
    high: float
    reference: PrefillWorkload
    estimate: Estimate  # the GPU's on the reference
    moved: bool  # to another model, length or format
    other_engine: bool  # from llama.cpp's F16 to another engine's format
    speedup: float
    scaling_basis: str

    def words(self, context: int) -> str:
        """What `why` says: the time, its band and what it rests on."""
        workload = self.reference.workload
        basis = (
            f"{workload} as measured on this GPU (median of {counted(self.estimate.n, 'result')})"
            if self.estimate.basis == "measured"
            else f"the throughput model's estimate for this GPU on {workload}"
        )
        moved = ", moved to this model and length by token cost" if self.moved else ""
        engine = (
            ", measured with llama.cpp, whose kernels another engine's may not match"
            if self.other_engine
            else ""
        )
        gpus = (
            f", x{self.speedup:.2f} over its GPUs ({self.scaling_basis})"
            if self.speedup != 1
            else ""
        )
        value, low, high = _durations(self.seconds, self.low, self.high)
        return (
            f"Reading a {context:,}-token prompt takes ~{value} (likely {low}-{high}) before "
            f"the first token: {basis}{moved}{engine}{gpus}."
        )


def _durations(*seconds: float) -> list[str]:
    """Seconds in the unit the first of them reads best in (s or min), with it after each."""
    first = seconds[0]
    if first >= 120:
        return [f"{s / 60:.1f} min" for s in seconds]
    digits = 1 if first < 10 else 0
    return [f"{s:.{digits}f} s" for s in seconds]


def _kind(quant_name: str) -> str | None:
    found = memory.find_quantization(quant_name, list(llm.quantizations()))
    if found is None:
        return None
    return "gguf" if found.kind == "gguf" else "float"


@dataclass(frozen=True)
class OneGpu:
    """One GPU's prompt rate for the ask (tokens/s) and its band's log widths."""

    rate: float
    faster: float  # log width towards a higher rate
    slower: float
    estimate: Estimate  # the GPU's on the reference
    moved: bool  # to another model, length or format


@dataclass(frozen=True)
class PromptMove:
    """What every configuration of one ask shares: the reference, and each GPU's rate moved to
    the ask (computed once per ask shape and data, kept with its options)."""

    reference: PrefillWorkload
    one_gpu: dict[str, OneGpu]
    other_engine: bool
    # count -> llama.cpp's learned layer-split (speedup, basis), filled as asked
    layer_splits: dict[int, tuple[float, str]]


def prompt_move(ask: llm_fit.Ask, data: LlmData) -> PromptMove | None:
    """The ask's move from its reference (reference_for), kept in `data.prompt_moves` per
    (model, format, length); None for a training ask or where no prompt workload of the ask's
    kind of format is measured."""
    if ask.task != "inference":
        return None
    key = ("prompt", ask.model.slug, ask.quant.name, ask.context)
    found = bounded(data.prompt_moves, MAX_KEPT_OPTIONS, key, lambda: _prompt_move(ask, data))
    return cast(PromptMove | None, found)


def _prompt_move(ask: llm_fit.Ask, data: LlmData) -> PromptMove | None:
    reference = data.prefill_reference  # the ask's, with its estimates (_load.read)
    if reference is None or not reference.estimates:
        return None
    spec = llm.models()[reference.model]
    quant = memory.find_quantization(reference.quant, list(llm.quantizations()))
    weight = data.prefill.attention_weight
    at_ask = prefill.token_cost(ask.model, ask.context, weight)
    if quant is None or not at_ask > 0:
        return None
    cost_ratio = prefill.token_cost(spec, reference.tokens, weight) / at_ask
    same_model = reference.model == ask.model.slug or llm.same_shape(spec, ask.model)
    same_point = same_model and reference.tokens == ask.context
    from_llama_cpp_f16 = quant.kind == "float" and "llama.cpp" in reference.frameworks
    one_gpu = {}
    for gpu in data.gpus:
        e = reference.estimates.get(gpu.slug)
        if e is None or not (e.value > 0 and e.low > 0 and e.high >= e.value):
            continue
        # llama.cpp's F16 prompt runs at the FP16-accumulate rate (read_model/estimates.py)
        from_rate = (
            fp16_accumulate_tflops(gpu.rates)
            if from_llama_cpp_f16
            else peak_tflops(gpu.rates, quant.compute_precision)
        )
        to_rate = peak_tflops(gpu.rates, ask.quant.compute_precision)
        if not (from_rate > 0 and to_rate > 0):
            continue
        moved = not (same_point and to_rate == from_rate)
        width = data.prefill.move_half_width if moved else 0.0
        one_gpu[gpu.slug] = OneGpu(
            e.value * cost_ratio * to_rate / from_rate,
            math.hypot(math.log(e.high / e.value), width),
            math.hypot(math.log(e.value / e.low), width),
            e,
            moved,
        )
    other_engine = ask.quant.kind != "gguf" and "llama.cpp" in reference.frameworks
    return PromptMove(reference, one_gpu, other_engine, {})


def reference_for(ask: llm_fit.Ask, data: LlmData) -> PrefillWorkload | None:
    """The prompt workload the ask's reading time moves from (module docstring); None where
    none of the ask's kind of format is measured."""
    models = llm.models()
    formats = list(llm.quantizations())
    wanted = "gguf" if ask.quant.kind == "gguf" else "float"
    asked = prefill.token_cost(ask.model, 0, 0.0)
    candidates = [
        w for w in data.prefill.workloads if w.model in models and _kind(w.quant) == wanted
    ]
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


def prompt_time(
    ask: llm_fit.Ask,
    option: LlmOption,
    data: LlmData,
    move: PromptMove | None,
    framework: str,
) -> PromptTime | None:
    """The option's time to read the asked prompt (`move`: prompt_move's for the ask); None
    without a move or without a reference estimate for its GPU."""
    one = move.one_gpu.get(option.gpu.slug) if move is not None else None
    if move is None or one is None:
        return None
    per_copy = max(option.count // max(option.replicas, 1), 1)
    if per_copy == 1:
        speedup, basis = 1.0, "single"
    elif memory.split_for(ask.quant, ask.task) == "layer":
        found = move.layer_splits.get(per_copy)
        if found is None:
            found = llm_fit.split_speedup(data.prefill.split_ratios, per_copy)
            move.layer_splits[per_copy] = found
        speedup, basis = found
    else:
        s = _parallel_scaling(data, framework, option.gpu, per_copy)
        speedup, basis = s.speedup, s.basis
    seconds = prefill.prompt_seconds(ask.context, one.rate * speedup)
    if seconds is None:
        return None
    return PromptTime(
        seconds,
        seconds * math.exp(-one.faster),  # a higher rate: fewer seconds
        seconds * math.exp(one.slower),
        move.reference,
        one.estimate,
        one.moved,
        move.other_engine,
        speedup,
        basis,
    )
