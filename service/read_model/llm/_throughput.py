"""One configuration's tokens/s and band: measured where the corpus has the model and format
(moved along the decode roofline beyond what it covers), else the throughput model's estimate
of a measured workload scaled to the ask, else the roofline x a learned efficiency.

Inference asks of a model whose decode (or one of its shape's) is measured in the asked format
(or one of the same bytes per weight: a GGUF F16 file for bf16), and of any other model the
decode workload nearest in bytes per token (moved by the roofline ratio of the two: Qwen3 8B
from a Llama 3 8B workload), take the throughput model's estimate for that workload
(DecodeReference: its own work split, the GPU's, stack's and board
power's terms, its conformal band) x roofline(asked context, batch) / roofline(the workload's
mean context, batch 1). One efficiency pooled over every model and format put a held-out GPU a
median 20.2% off (p90 64.8%, 80% band covering 64.6%); the workload's estimate, 6.3% (p90 17.3%,
77.9%): leave-one-GPU-out over the shipped corpus's 13 decode workloads with 6+ GPUs,
bench/llm_asks.py.

Training asks (full fine-tune, LoRA, QLoRA) that nothing measured: the corpus holds no LLM
training result, so a learned roofline efficiency would be the flat stated prior (35% of peak
for every GPU, which is what ranked consumer Radeon cards first for a QLoRA ask). Instead they
take the throughput model's estimate for the catalog's LLM training workload (``llm-train``,
GPT-2 124M pretraining; its GPU, architecture and stack efficiencies are pooled from every
measured training workload, service/domain/throughput_model/) at the ask's compute precision,
scaled by FLOPs per token: tokens/s = estimate x flops_per_unit(llm-train) /
Ask.flops_per_token, which counts the task's passes (memory.training_passes): GPT-2
pretraining is 3 forwards' worth per token; full fine-tuning with gradient checkpointing (the
memory breakdown's default) 4, LoRA and QLoRA with it 3 (no weight gradients for frozen
weights). Counted as 3 for every task before, full fine-tuning was a third faster per token
than LoRA would make it. Time per token proportional to FLOPs is the roofline's own
assumption; the band is the model's band, scaled alike. QLoRA adds the time its 4-bit weights
take to dequantize on every pass, at the GPU's bandwidth (Ask.dequantization_s_per_token,
memory.dequantized_bytes_per_step: a floor, a few percent at 4,096 tokens and more at short
sequences, where bitsandbytes measured well above it).
"""

import math
from collections.abc import Iterator
from dataclasses import dataclass

from service.catalog import llm
from service.domain import llm_fit, memory
from service.domain.estimate import Estimate, counted
from service.domain.plausibility import FP8_WEIGHT_ONLY_ARCHITECTURES, peak_tflops
from service.domain.recommend import widened
from service.domain.scaling import Scaling
from service.read_model.llm._data import TRAIN_REFERENCE, DecodeReference, GpuRow, LlmData, Measured


def _one_gpu_rooflines(
    measured: list[Measured], gpus: list[GpuRow], phase: str
) -> Iterator[tuple[Measured, float]]:
    """Each one-GPU result of `phase` of a catalog model, format and GPU, with its roofline
    (tokens/s at the result's mean context, batch 1): what learn's efficiency and the decode
    transfer band both measure against."""
    by_slug = {g.slug: g for g in gpus}
    models = llm.models()
    formats = list(llm.quantizations())
    phase_lit = _phase_literal(phase)
    for m in measured:
        if m.phase != phase or m.count != 1:
            continue
        spec = models.get(m.model)
        gpu = by_slug.get(m.gpu)
        quant = memory.find_quantization(m.quant, formats)
        if spec is None or gpu is None or quant is None:
            continue
        yield (
            m,
            llm_fit.roofline_tokens_per_s(
                spec, quant, phase_lit, _mean_context(m), 1, gpu.bandwidth_gbs, _peak(gpu, quant)
            ),
        )


def _phase_literal(phase: str) -> memory.Phase:
    return "decode" if phase == "decode" else "prefill" if phase == "prefill" else "train"


def _peak(gpu: GpuRow, quant: memory.Quantization) -> float:
    return peak_tflops(gpu.rates, quant.compute_precision)


def _mean_context(m: Measured) -> float:
    """Generation of n tokens from an empty context attends n/2 on average; a prompt of n
    tokens is passed as n (flops_per_token halves it)."""
    return m.tokens / 2 if m.phase == "decode" else float(m.tokens)


@dataclass(frozen=True)
class Learned:
    efficiency: llm_fit.Efficiency
    split_ratios: dict[int, list[float]]
    # formats with a measured split: their runtime's split (llama.cpp's, in the corpus) is
    # measured, so its ratio stands for them whatever the format's usual runtime
    split_formats: frozenset[str] = frozenset()


def learn(data: LlmData, phase: str) -> Learned:
    """Efficiency over every measured single GPU of `phase`; N-GPU / 1-GPU ratios per N."""
    ratios = []
    single: dict[tuple[str, str], float] = {}
    for m, roof in _one_gpu_rooflines(data.measured, data.gpus, phase):
        single[(m.workload, m.gpu)] = m.value.median
        ratios.append(m.value.median / roof)
    multi = [
        m
        for m in data.measured
        if m.phase == phase and m.count > 1 and single.get((m.workload, m.gpu))
    ]
    split = llm_fit.split_ratios(
        single, (((m.workload, m.gpu), m.count, m.value.median) for m in multi)
    )
    formats = frozenset(m.quant for m in multi)
    return Learned(llm_fit.learn_efficiency(ratios, _phase_literal(phase)), split, formats)


def _measured_for(ask: llm_fit.Ask, data: LlmData) -> dict[tuple[str, int], Measured]:
    """Measured (gpu, count) of this model (or one of its shape) and format, at the benchmark
    token count that covers the asked context (_covering)."""
    models = llm.models()
    relevant = [
        m
        for m in data.measured
        if m.phase == ask.phase
        and m.quant == ask.quant.name
        and m.model in models
        and (m.model == ask.model.slug or llm.same_shape(models[m.model], ask.model))
    ]
    if not relevant:
        return {}
    best = min({m.tokens for m in relevant}, key=lambda n: _covering(n, ask.context))
    return {(m.gpu, m.count): m for m in relevant if m.tokens == best}


def _covering(tokens: int, context: int) -> tuple[int, int]:
    """Sort key of a benchmark's token count for an asked context: the fewest tokens that
    cover the context first (a tgN run decodes up to N tokens of context), else the most. The
    nearest count in log had taken tg1024 for a 2048-token ask, which it does not cover."""
    return (0, tokens) if tokens >= context else (1, -tokens)


def runs_format(gpu: GpuRow, ask: llm_fit.Ask) -> bool:
    """Whether a runtime runs the ask's weight format on the GPU: an FP8 format needs FP8
    tensor cores, except for inference of a dense model on NVIDIA Turing or Ampere (weight-only,
    at the 16-bit rate). An RX 7900 XTX was offered for FP8 (torch._scaled_mm needs MI300 or
    newer on ROCm), and an A100 for DeepSeek-V3 in FP8. AWQ and GPTQ checkpoints run where
    vLLM's kernels do (GROUP_INT4_UNSUPPORTED): 4 x V100 was offered for Llama 3.1 70B in AWQ,
    and 8 x GTX 1080 and an MI300X. NVFP4 checkpoints run on NVIDIA Ampere and newer
    (NVFP4_ARCHITECTURES): 120 GPUs of every stack, a GTX 1080 Ti first at $450, had been
    offered for Llama 3.1 8B in NVFP4."""
    unsupported = GROUP_INT4_UNSUPPORTED.get(ask.quant.name)
    if unsupported is not None and (
        gpu.architecture in unsupported or gpu.stack.startswith("rocm")
    ):
        return False
    if ask.quant.name in NVFP4_FORMATS and (
        gpu.stack != "cuda" or gpu.architecture not in NVFP4_ARCHITECTURES
    ):
        return False
    if ask.quant.compute_precision != "fp8" or gpu.rates.fp8_tensor:
        return True
    return (
        gpu.architecture in FP8_WEIGHT_ONLY_ARCHITECTURES
        and ask.task == "inference"
        and not ask.model.is_moe
    )


# Architectures whose GPUs run no AWQ or GPTQ checkpoint, besides every AMD GPU: vLLM's
# quantization support table (docs.vllm.ai/quantization, "Supported Hardware": AWQ not on
# Volta, neither on "AMD GPU") and its CUDA requirement, compute capability 7.0 or higher
# (docs.vllm.ai getting_started/installation/gpu: Pascal and older are out).
PRE_VOLTA = frozenset({"pascal", "maxwell", "kepler"})


GROUP_INT4_UNSUPPORTED: dict[str, frozenset[str]] = {
    "awq-4bit": PRE_VOLTA | {"volta"},
    "gptq-4bit": PRE_VOLTA,
}

# NVIDIA's block-FP4 checkpoints (ModelOpt NVFP4) run natively on Blackwell's FP4 tensor cores
# and elsewhere only as weight-only FP4 through vLLM's Marlin kernel ("Your GPU does not have
# native support for FP4 computation ... Weight-only FP4 compression will be used leveraging
# the Marlin kernel", vllm-project/vllm#31085), which runs on Ampere, Ada and Hopper and not on
# Volta, Turing or AMD GPUs (docs.vllm.ai v0.9.2, features/quantization/supported_hardware,
# "Marlin (GPTQ/AWQ/FP8)" row). MXFP4 is left open: llama.cpp runs its GGUF MXFP4 on every
# backend.
NVFP4_FORMATS = frozenset({"nvfp4", "fp4"})
NVFP4_ARCHITECTURES = frozenset({"ampere", "ada", "hopper", "blackwell"})


MOVED = "measured-moved"  # a measured decode value moved to the asked context or batch


def _moved_measurement(
    ask: llm_fit.Ask,
    gpu: GpuRow,
    m: Measured,
    band: tuple[float, float],
    width: float,
) -> tuple[float, float, float] | None:
    """A measured decode value (and its `band`) moved by the decode roofline to an ask it does not
    cover, else None (the measurement answers as it is). A llama-bench tgN run generates N
    tokens at batch 1 from an empty context, so it covers an ask at batch 1 and a context of
    at most N. Beyond it the KV cache each token reads grows (and a batch shares the weights):
    the RTX 3090's tg8192, 87.5 tokens/s, had been answered for a 131,072-token context, where
    4.9 GB of weights and 17.2 GB of KV per token on 936 GB/s allow 42, and above an RTX 5090
    and a B200 whose estimates were moved. Its band widens, in quadrature, by how far that
    move misses between token counts measured on one GPU (`width`,
    llm_fit.context_move_half_width)."""
    if ask.phase != "decode" or (ask.batch == 1 and ask.context <= m.tokens):
        return None
    spec = llm.models().get(m.model)
    quant = memory.find_quantization(m.quant, list(llm.quantizations()))
    if spec is None or quant is None:
        return None
    measured_at = _decode_roof(gpu, spec, quant, _mean_context(m), 1)
    asked = _decode_roof(gpu, ask.model, ask.quant, ask.context, ask.batch)
    if not (measured_at > 0 and asked > 0):
        return None
    ratio = asked / measured_at
    low, high = band
    value = m.value.median
    below = math.hypot(math.log(value / low), width) if low > 0 else width
    above = math.hypot(math.log(high / value), width) if high > 0 else width
    moved = value * ratio
    return moved, moved * math.exp(-below), moved * math.exp(above)


def _reference_estimate(kind: str, data: LlmData, slug: str) -> tuple[str, Estimate] | None:
    """The fixed workload a scaled value (of `kind`) rests on and this GPU's estimate there;
    None for a value that rests on no such estimate."""
    if kind == "workload-scaled" and data.decode_reference is not None:
        workload, estimates = data.decode_reference.workload, data.decode_reference.estimates
    elif kind == f"{TRAIN_REFERENCE}-scaled" and data.train_reference is not None:
        workload, estimates = TRAIN_REFERENCE, data.train_reference.estimates
    else:
        return None
    e = estimates.get(slug)
    return None if e is None else (workload, e)


def _measured_band(m: Measured, ref: DecodeReference | None) -> tuple[float, float]:
    """A measured value's band: median -+ 1.4826 x MAD of its results; where they have no
    spread (one result, or identical ones) and the workload is the reference's, the
    throughput model's band for a result measured once (that workload's pooled run-to-run
    noise, multi-GPU splits alike): never zero-width there."""
    low, high = m.value.band()
    if low < high or ref is None or ref.workload != m.workload:
        return low, high
    half = ref.single_result_half_width
    return m.value.median * math.exp(-half), m.value.median * math.exp(half)


def _transfer(data: LlmData, ask: llm_fit.Ask) -> float | None:
    """The log half-width a decode value moved from another model's or format's workload adds
    to its band (_scaled_decode_reference): how far such moves miss between measured models
    (llm_fit.transfer_half_width), or between formats of one model where the reference is of
    the asked model's shape (format_move_half_width: a bfloat16 ask of Llama 3.1 8B from its
    Q4_K_M workload had added nothing); None where the reference is the ask's own model and
    bytes (or there is none)."""
    ref = data.decode_reference
    if ref is None or ref.model is None:
        return None
    if ref.model.slug == ask.model.slug or llm.same_shape(ref.model, ask.model):
        return data.decode_format_half_width
    return data.decode_transfer_half_width


def _reference_source(
    reference: tuple[str, Estimate] | None,
    transfer: float | None = None,
    decode: DecodeReference | None = None,
) -> str | None:
    """What a scaled value rests on (_reference_estimate): 'llama-3-8b-q4_k_m-tg4096 as measured
    on this GPU (median of 3 results)', 'the throughput model's value for this GPU on ...,
    fitted to 18 measured GPUs', or for llm-train with nothing measured on it, the work per
    FLOP it borrows; for a decode workload (`decode`), the engine its results were measured
    with, and for another model's or format's (`transfer`), that the value keeps that
    engine's per-token costs and what its band adds: an FP8 ask of Llama 3.1 70B rests on
    llama.cpp's Q4_K_M decode, which put a B200 at 20.5 tokens/s, 19% of its bandwidth, and
    the answer said only 'another model'."""
    if reference is None:
        return None
    workload, e = reference
    engine = " and ".join(decode.frameworks) if decode is not None else ""
    measured_with = f" ({engine} results)" if engine and transfer is None else ""
    other = ""
    if transfer is not None:
        measured_in = decode.quant.name if decode is not None and decode.quant else "another"
        costs = (
            f", measured in {measured_in} with {engine}: its per-token costs, a fixed time per "
            "layer (where one is learned, from cards measured on two or more weights) moved "
            "with the layers and the rest by bytes"
            if engine
            else ""
        )
        other = (
            f" (another model or format{costs}; its band adds x{math.exp(transfer):.2f} either "
            "way: how far such moves miss between models or formats measured on one GPU)"
        )
    if e.basis == "measured":
        return (
            f"{workload} as measured on this GPU (median of {counted(e.n, 'result')})"
            f"{measured_with}{other}"
        )
    model = f"the throughput model's value for this GPU on {workload}{measured_with}"
    if e.n:
        return f"{model}, fitted to {e.n} measured GPUs{other}"
    return f"{model}, nothing measured on it: work per FLOP of measured training workloads"


def _estimate(
    ask: llm_fit.Ask,
    gpu: GpuRow,
    count: int,
    learned: Learned,
    data: LlmData,
    framework: str,
) -> tuple[float, float, float, int, float, str, str, float]:
    """(value, low, high, n, speedup, scaling basis, the `model` it names): a scaled workload
    estimate where there is one, else the roofline x the learned efficiency."""
    reference = _scaled_reference(ask, gpu, learned, data)
    if reference is not None:
        kind = f"{TRAIN_REFERENCE}-scaled" if ask.phase == "train" else "workload-scaled"
    else:
        kind = f"roofline-{learned.efficiency.basis}"
        eff = learned.efficiency
        roof = llm_fit.roofline_tokens_per_s(
            ask.model,
            ask.quant,
            ask.phase,
            ask.context,
            ask.batch,
            gpu.bandwidth_gbs,
            _peak(gpu, ask.quant),
            ask.passes,
        )
        reference = (eff.value * roof, eff.log_band, eff.log_band, eff.n)
    one, log_low, log_high, n = reference
    # llama.cpp splits by layers; so must a GPU that no tensor-parallel runtime serves (vLLM
    # needs compute capability 7.0: PRE_VOLTA), which had put 4 x GTX 1080 at 38.3 tokens/s on
    # Llama 3.1 8B in bf16 by a tensor-parallel speedup and the same cards at 15.3 in Q8_0
    layer = _splits_by_layers(ask, gpu)
    width = 0.0  # the speedup's own band (scaling.scaling_half_widths), where sized
    if ask.phase != "train" and (layer or ask.quant.name in learned.split_formats):
        speedup, basis = llm_fit.split_speedup(learned.split_ratios, count)
    else:  # training: the framework's profile; tensor-parallel decode: as a fixed workload's
        s = _parallel_scaling(data, framework, gpu, count, decode=ask.phase == "decode")
        speedup, basis, width = s.speedup, s.basis, s.log_half_width
    value = one * speedup
    low, high = widened(value, value * math.exp(-log_low), value * math.exp(log_high), width)
    return value, low, high, n, speedup, basis, kind, width


def _splits_by_layers(ask: llm_fit.Ask, gpu: GpuRow) -> bool:
    """Whether N of `gpu` run the ask split by layers, one GPU after another: llama.cpp's
    formats, and any format on a GPU no tensor-parallel runtime serves (PRE_VOLTA)."""
    return memory.split_for(ask.quant, ask.task) == "layer" or gpu.architecture in PRE_VOLTA


def held_to_decode_ceiling(
    ask: llm_fit.Ask, gpu: GpuRow, count: int, estimate: tuple[float, float, float], data: LlmData
) -> tuple[float, float, float]:
    """A decode estimate (value, low, high) of `count` GPUs held below what their bandwidth
    allows at the asked context and batch (llm_fit.held_to_ceiling): no more of it than the
    best GPU measured on the reference workload reached, the band never past it. Moved from a
    workload by a roofline ratio and widened by how far such moves miss, the bands had passed
    it: an L4 on Llama 3.1 8B in FP8 up to 40.6 tokens/s, where 300 GB/s over 7.0 GB of layer
    weights and 0.5 GB of KV a token allow 40.0 (an RTX 4060 Ti 16GB, an RTX 4000 Ada and an
    RTX 4070 Ti alike)."""
    value, low, high = estimate
    if ask.phase != "decode":
        return value, low, high
    in_parallel = 1 if _splits_by_layers(ask, gpu) else count
    ceiling = llm_fit.decode_ceiling_tokens_per_s(
        ask.model, ask.quant, ask.context, ask.batch, gpu.bandwidth_gbs, in_parallel
    )
    ref = data.decode_reference
    reached = None
    if ref is not None and ref.envelope is not None:
        # in the terms the envelope was measured in: layer weights alone, no KV
        weights_only = llm_fit.decode_ceiling_tokens_per_s(
            ask.model, ask.quant, 0, ask.batch, gpu.bandwidth_gbs, in_parallel
        )
        reached = ref.envelope * weights_only * _envelope_moved(ask, gpu, ref, data.decode_fixed)
    return llm_fit.held_to_ceiling(value, low, high, ceiling, reached)


def _envelope_moved(
    ask: llm_fit.Ask, gpu: GpuRow, ref: DecodeReference, fixed: llm_fit.FixedCosts
) -> float:
    """How much more (or less) of the ask's weights-only ceiling the reference's envelope
    stands for once its fixed per-token time moves with the layers (_fixed_move), not with
    the bytes: Llama 2 7B in Q4_0, whose best card reached 57% of its ceiling (3.8 GB a token,
    a third of the time fixed), had held bf16 asks of the same model to 57% of theirs; 1 for
    a reference of the ask's own model and bytes."""
    if ref.model is None or ref.quant is None or ref.envelope is None or not ref.envelope > 0:
        return 1.0
    one_ref = llm_fit.decode_ceiling_tokens_per_s(ref.model, ref.quant, 0, 1, gpu.bandwidth_gbs, 1)
    one_ask = llm_fit.decode_ceiling_tokens_per_s(
        ask.model, ask.quant, 0, ask.batch, gpu.bandwidth_gbs, 1
    )
    if not (one_ref > 0 and one_ask > 0):
        return 1.0
    fixed_s, layers_ratio = _fixed_move(ask, gpu, ref, fixed)
    at_ref = ref.envelope * one_ref
    moved = llm_fit.moved_decode_rate(at_ref, one_ref, one_ask, fixed_s, layers_ratio)
    return moved / (ref.envelope * one_ask)


def held_to_training_envelope(
    ask: llm_fit.Ask,
    gpu: GpuRow,
    speedup: float,
    estimate: tuple[float, float, float],
    data: LlmData,
) -> tuple[tuple[float, float, float], llm_fit.TrainedEnvelope | None]:
    """A training estimate scaled from GPT-2 124M (llm-train) held, per GPU, to the measured
    envelope of the LLM training workload nearest the asked model in size: no more of the
    GPU's peak at the ask's compute precision than any GPU measured on it reached (the band
    keeps its width around the value), and which envelope held it (None: it did not). GPT-2's
    envelope (79%, an RTX 5090 with llm.c) is a 124M model's: carried by the FLOPs ratio to
    an 8B full fine-tune it put 7 x RTX 5090 at 79% of their dense BF16 peak each, and to
    QLoRA on 70B four of them at 72%, where on MLPerf's Llama 2 70B LoRA no GPU passes 56% of
    its peak; datacenter cards, at 30-48% on GPT-2, were already below it."""
    value, low, high = estimate
    ref = data.train_reference
    if ask.phase != "train" or ref is None or not speedup > 0:
        return estimate, None
    nearest = llm_fit.nearest_trained(ask.model.params_b, ref.trained)
    if nearest is None or nearest.workload == TRAIN_REFERENCE:
        return estimate, None
    # the peak of the precision the estimate is at: fp16 on a GPU without bf16 units (its
    # bf16 peak is its FP32 rate, and had held a V100 to a ninth of its estimate)
    scaled_from = ref.estimates.get(gpu.slug)
    at = scaled_from.precision if scaled_from is not None and scaled_from.precision else None
    peak = peak_tflops(gpu.rates, at) if at else _peak(gpu, ask.quant)
    reached = nearest.share * peak * 1e12 / ask.flops_per_token
    per_gpu = value / speedup
    if not per_gpu > reached:
        return estimate, None
    scale = reached / per_gpu
    return (value * scale, low * scale, high * scale), nearest


def with_dequantization(
    ask: llm_fit.Ask,
    gpu: GpuRow,
    count: int,
    speedup: float,
    estimate: tuple[float, float, float],
) -> tuple[float, float, float]:
    """A training estimate on `count` GPUs with the time its stored 4-bit weights take to
    dequantize on each pass added to each GPU's time per token (QLoRA;
    Ask.dequantization_s_per_token), after the compute envelope held it: the envelope bounds
    the matrix math, and dequantization is memory traffic besides it. Unchanged for weights
    trained at 16 bits. The band keeps its width in log."""
    value, low, high = estimate
    extra = ask.dequantization_s_per_token(gpu.bandwidth_gbs, count)
    if not (extra > 0 and value > 0 and speedup > 0):
        return estimate
    per_gpu = value / speedup
    scale = 1.0 / (1.0 + per_gpu * extra)
    return value * scale, low * scale, high * scale


def redequantized(ask: llm_fit.Ask, gpu: GpuRow, per_gpu: float, count: int, more: int) -> float:
    """How a GPU's tokens/s `per_gpu` on `count` GPUs (dequantization included:
    with_dequantization) changes on `more` of them, where each trains fewer sequences per step
    and spends its dequantization over fewer tokens; 1.0 for weights trained at 16 bits."""
    before = ask.dequantization_s_per_token(gpu.bandwidth_gbs, count)
    after = ask.dequantization_s_per_token(gpu.bandwidth_gbs, more)
    if before == after or not per_gpu > 0:
        return 1.0
    t = 1.0 / per_gpu
    return t / (t - before + after)


def _parallel_scaling(
    data: LlmData, framework: str, gpu: GpuRow, count: int, decode: bool = False
) -> Scaling:
    """`count` x `gpu` on one job by the data's profiles (fitted where they speak for the GPU's
    stack, else assumed), as a fixed workload's configurations scale them."""
    return data.profiles.scaling(
        "parallel",
        framework,
        gpu.interconnect,
        count,
        decode=decode,
        sold_as=gpu.sold_as,
        stack=gpu.stack,
    )


def _scaled_reference(
    ask: llm_fit.Ask, gpu: GpuRow, learned: Learned, data: LlmData
) -> tuple[float, float, float, int] | None:
    """One GPU's tokens/s from the throughput model's estimate of a measured workload, with
    its log band (below, above) and n: a decode ask's reference workload (DecodeReference)
    scaled to the asked context and batch by the decode roofline, or for a training ask the
    TRAIN_REFERENCE estimate scaled by FLOPs per token. None without one (a training ask whose
    learned efficiency has data of its own, a measured LLM training result, also takes none)."""
    if ask.phase == "decode":
        return _scaled_decode_reference(
            ask, gpu, data.decode_reference, _transfer(data, ask) or 0.0, data.decode_fixed
        )
    ref = data.train_reference
    if ask.phase != "train" or learned.efficiency.n or ref is None:
        return None
    e = _usable_estimate(ref.estimates, gpu.slug)
    if e is None:
        return None
    one = e.value * ref.flops_per_token / ask.flops_per_token
    floor = ref.cold_log_band
    return one, max(math.log(e.value / e.low), floor), max(math.log(e.high / e.value), floor), e.n


def _usable_estimate(estimates: dict[str, Estimate], slug: str) -> Estimate | None:
    e = estimates.get(slug)
    if e is None or not (e.value > 0 and e.low > 0 and e.high >= e.value):
        return None
    return e


def _scaled_decode_reference(
    ask: llm_fit.Ask,
    gpu: GpuRow,
    ref: DecodeReference | None,
    transfer: float = 0.0,
    fixed: llm_fit.FixedCosts = llm_fit.NO_FIXED_COSTS,
) -> tuple[float, float, float, int] | None:
    """The reference workload's single-GPU estimate x roofline(asked context and batch) /
    roofline(the workload's mean context, batch 1): the model's own GPU, architecture, stack
    and board-power terms and its calibrated band, moved along the roofline only by the KV
    traffic the context adds (the weights are the same bytes). A reference of another model or
    format (ref.model set) moves by the two rooflines too, its stack's fixed per-token time
    moving with the layers instead (_fixed_move), and its band widens in quadrature by
    `transfer` (_transfer: how far such moves miss between measured models or formats)."""
    e = _usable_estimate(ref.estimates, gpu.slug) if ref is not None else None
    if ref is None or e is None:
        return None
    reference = _decode_roof(
        gpu, ref.model or ask.model, ref.quant or ask.quant, ref.mean_context, 1
    )
    asked = _decode_roof(gpu, ask.model, ask.quant, ask.context, ask.batch)
    if not (reference > 0 and asked > 0):
        return None
    fixed_s, layers_ratio = _fixed_move(ask, gpu, ref, fixed)
    one = llm_fit.moved_decode_rate(e.value, reference, asked, fixed_s, layers_ratio)
    below = math.hypot(math.log(e.value / e.low), transfer)
    above = math.hypot(math.log(e.high / e.value), transfer)
    return one, below, above, e.n


def _fixed_move(
    ask: llm_fit.Ask, gpu: GpuRow, ref: DecodeReference, fixed: llm_fit.FixedCosts
) -> tuple[float, float]:
    """(the reference's fixed seconds per token on this GPU, asked over reference layers per
    token of a step's batch) for a move from another model or format (ref.model set); (0, 1)
    for a move of the ask's own model and bytes along the context and batch alone, which keeps
    the whole time in proportion: within one model and format, time per token grows with the
    context faster than its KV bytes do (llama.cpp's attention), and the proportional move
    misses by less (80% of such moves within x1.08 on the shipped corpus, x1.11 with the
    fixed time kept)."""
    if ref.model is None:
        return 0.0, 1.0
    return llm_fit.fixed_part(fixed, gpu.stack, ref.model.layers, ask.model.layers, ask.batch)


def _decode_roof(
    gpu: GpuRow,
    model: memory.ModelSpec,
    quant: memory.Quantization,
    context: float,
    batch: int,
) -> float:
    """The GPU's decode roofline (tokens/s) for a model and format at a context and batch: what
    an estimate or a measured value is moved along (_scaled_decode_reference,
    _moved_measurement)."""
    return llm_fit.roofline_tokens_per_s(
        model, quant, "decode", context, batch, gpu.bandwidth_gbs, _peak(gpu, quant)
    )
