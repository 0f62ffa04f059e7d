"""Which GPU configurations fit a language model, how fast they run it, and how they rank.

Pure functions: no I/O (the read model passes GPUs, measurements and prices in).

Fit: the fewest GPUs on which memory.memory_breakdown's per-GPU total fits (memory.gpus_needed):
tensor-parallel (heads divisible by N), or for a GGUF file by layers as llama.cpp splits it
(any N; the GPU with the most layers decides). Checked against every whole-GPU run and
out-of-memory the XiongjieDai llama.cpp tables publish for catalog models (tests/unit/
test_llm_fit.py): 8B F16 fits a 16 GB card at 4096 tokens and not at 8192, as measured. A
catalog `memory_gb` is the vendor's figure, which for GPU memory is
binary (a "24 GB" RTX 4090 has 24 GiB = 25.8e9 bytes), so capacity = memory_gb x 2^30 bytes.
A tensor-parallel serving engine takes a share of it (Ask.usable_gb): vLLM allocates
`--gpu-memory-utilization` of each GPU, 0.9 by default (docs.vllm.ai, Engine Arguments), for
everything it holds (weights, activations, KV cache, its CUDA context: the breakdown's terms),
and leaves the rest unused unless told otherwise. Counted whole, DeepSeek-R1 in FP8 had fit 8
x H100 PCIe with 1.2 GB a GPU spare, where serving it takes 8 H200s or two 8-GPU H100 nodes.
llama.cpp (a GGUF file's layer split) and training allocate what they need, and keep the
whole capacity.

Throughput, tokens/s, by the best basis available:
1. measured: the median of accepted results of this model (or one of the same shape, e.g.
   Llama 3 8B for Llama 3.1 8B) and format, on this GPU and count, at the benchmark token
   count nearest the asked context;
2. roofline x learned efficiency. Decode is bandwidth-bound: tokens/s = e x bandwidth x batch /
   (weight bytes read per step + KV bytes read), weight bytes = all weights x active/total
   params for mixture-of-experts, KV = kv bytes/token x context x batch; capped by the compute
   roofline. Prefill and training are compute-bound: tokens/s = e x peak rate of the format's
   compute precision (vocabulary.COMPUTE_PRECISION) / memory.flops_per_token. The efficiency e
   is the median of measured / roofline over every measured GPU of that phase (any LLM), and
   its log spread (1.4826 x MAD) sizes the band; with no measurement e is estimate.py's stated
   prior (0.6 of bandwidth, 0.35 of peak) and the band is value / 1.5 to value x 1.5.
Several GPUs: inference runs the model split over them, as its runtime splits it
(memory.split_for). A GGUF file's layer split (llama.cpp, the measured corpus's runtime) runs
one token through the GPUs in turn, so the N-GPU rate is the one-GPU rate times the median
measured N-GPU / 1-GPU ratio of the same workload and GPU (1.0, no speedup, when nothing is
measured; XiongjieDai's 8B Q4_K_M on 1, 2, 4 and 8 RTX 4090s: 130.6, 124.7, 120.3, 118.1
tokens/s at tg 512); so does a format with a measured split (the corpus's F16 files run by
llama.cpp: measured wins over assumed). Other formats run tensor-parallel: each GPU streams 1/N
of the weights, so decode takes scaling.tensor_parallel's speedup (bandwidth adds, less its
stated interconnect cost), as a fixed decode workload does. Training over N GPUs uses the
framework's scaling profile.

A decode ask of a model no measured workload has the shape of rests on another model's
workload, moved by the ratio of the two rooflines (read_model/llm/, _nearest_bytes_reference);
its band widens in quadrature by how far that ratio misses between measured models on one GPU
(transfer_half_width: the conformal 80% quantile of |log error| over every pair of one-GPU
decode results of two models on the same GPU). On the shipped corpus, 640 such pairs of the
Llama 3 models (8B Q4_K_M, 8B F16, 70B Q4_K_M, each token count): 0.35 in log (median 0.16;
the 8B Q4_K_M runs 0.23 below what the 70B's rate and the roofline ratio say). Kept to its
single reference's band, Qwen3 30B-A3B Q4_K_M on an RTX 3090 was ~208 tokens/s, likely 201-215.

Ranking: throughput first; configurations whose estimates are tied (tiers.tied: within 1.25x
and their gap inside their bands added in quadrature) form a tier, and inside a tier fewer
GPUs rank first (as fast within what the estimates can tell, and one card needs no split, no
bigger box and less power: 2 x RX 7900 XT at ~100 tokens/s and $2,249 with their box had
ranked above one RX 7900 XTX at ~122 and $781 for its larger context), then more headroom
(largest batch, then context, that still fits); equal headroom keeps throughput order, then
the lower price; but never above a faster option of the tier that costs less (the cards
and the box several need). Until 2026-12-07 a tie asked each band to hold the other's value,
so the measured 2 x RTX 3090 on Llama-3.1-70B Q4_K_M (15.4 tokens/s, $3,038 with their box)
could not tie with 3 x RTX 5080 (~16.8, likely 14.3-19.7, $4,778) and ranked below it. Counts
of one GPU keep throughput order inside a tier (rank). Tiers are formed among the
configurations that are offered (within budget), led by the fastest left.

A recommendation offers no dominated configuration: one that another offered configuration
beats on every count a buyer weighs (at least as many tokens/s, a cost no higher, at least as
much room for batch and context) and strictly on one. A used card never counts as beating a new
one (a buyer may want the warranty). Headroom inside a tier would otherwise put a $2,800 A10
(24 GiB, ~961 tokens/s) on a QLoRA list beside a $781 RX 7900 XTX with the same 24 GiB that
runs faster. Rankings list every GPU and keep them.
"""

import math
import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from service.domain import memory
from service.domain.estimate import (
    DEFAULT_BAND,
    PRIOR_BANDWIDTH_UTILISATION,
    PRIOR_COMPUTE_UTILISATION,
)
from service.domain.plausibility import bandwidth_ceiling
from service.domain.throughput_model import conformal_quantile, nnls
from service.domain.tiers import tiered
from service.domain.vocabulary import MAD_TO_SIGMA

GIB = 2**30
# vLLM's --gpu-memory-utilization default: the share of each GPU's memory it allocates for
# weights, activations and KV cache (docs.vllm.ai, Engine Arguments; module docstring)
SERVING_MEMORY_FRACTION = 0.9
MIN_LOG_BAND = math.log1p(0.1)  # a band learned from few GPUs is never narrower than +-10%


@dataclass(frozen=True)
class Ask:
    """What the user asks to run: the model, task, format and shape."""

    model: memory.ModelSpec
    task: memory.Task
    quant: memory.Quantization
    context: int
    batch: int = 1
    optimizer: memory.Optimizer = "adamw"
    lora_rank: int = 16
    gradient_checkpointing: bool = True

    @property
    def phase(self) -> memory.Phase:
        return "decode" if self.task == "inference" else "train"

    @property
    def passes(self) -> int:
        """Forwards' worth of matrix math per token (memory.training_passes; 1 for inference)."""
        if self.task == "inference":
            return 1
        return memory.training_passes(self.task, self.gradient_checkpointing)

    @property
    def flops_per_token(self) -> float:
        """FLOPs per token at the asked context, this task's passes included."""
        return memory.flops_per_token(self.model, self.phase, self.context, self.passes)

    def dequantization_s_per_token(self, bandwidth_gbs: float, gpus: int = 1) -> float:
        """Seconds per trained token each of `gpus` GPUs spends dequantizing stored weights at
        `bandwidth_gbs`: memory.dequantized_bytes_per_step over the tokens it trains per step,
        ceil(batch / gpus) sequences of the context (sharded data parallel: each GPU gathers
        and dequantizes every weight for its own sequences); 0 for inference and for weights
        trained at 16 bits."""
        if self.task == "inference" or not bandwidth_gbs > 0 or gpus < 1:
            return 0.0
        moved = memory.dequantized_bytes_per_step(self.model, self.quant, self.passes)
        sequences = -(-self.batch // gpus)
        return moved / (bandwidth_gbs * 1e9) / (sequences * self.context)

    def memory_kwargs(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "quant": self.quant,
            "optimizer": self.optimizer,
            "lora_rank": self.lora_rank,
            "gradient_checkpointing": self.gradient_checkpointing,
        }

    def usable_gb(self, memory_gb: float) -> float:
        """GB of one GPU the ask's runtime may fill: a tensor-parallel serving engine's share
        of the capacity (SERVING_MEMORY_FRACTION), else all of it (module docstring)."""
        capacity = capacity_gb(memory_gb)
        if memory.split_for(self.quant, self.task) == "tensor":
            return capacity * SERVING_MEMORY_FRACTION
        return capacity

    def breakdown(self, gpus: int = 1) -> memory.MemoryBreakdown:
        return memory.memory_breakdown(
            self.model,
            context=self.context,
            batch=self.batch,
            gpus=gpus,
            **self.memory_kwargs(),
        )


def capacity_gb(memory_gb: float) -> float:
    """Catalog memory_gb (binary, as vendors count GPU memory) in GB of 1e9 bytes."""
    return memory_gb * GIB / 1e9


@dataclass(frozen=True)
class Headroom:
    max_context: int | None  # at the asked batch
    max_batch: int | None  # at the asked context


def gpus_needed(ask: Ask, memory_gb: float, max_gpus: int, unit: int = 1) -> int | None:
    """The fewest GPUs that hold the ask, in multiples of `unit` (the GPUs one purchase
    brings: 8 for an HGX-8 platform), up to `max_gpus`; None when none does. A B200, sold only
    on 8-GPU baseboards, had been offered alone for Llama 3.1 70B in FP8 at $64,375, where
    /compare refuses one and a fixed workload's answer offers 8."""
    return memory.gpus_needed(
        ask.model,
        ask.usable_gb(memory_gb),
        max_gpus,
        unit,
        context=ask.context,
        batch=ask.batch,
        **ask.memory_kwargs(),
    )


def headroom(ask: Ask, memory_gb: float, gpus: int) -> Headroom:
    cap = ask.usable_gb(memory_gb)
    kwargs = {**ask.memory_kwargs(), "gpus": gpus}
    return Headroom(
        memory.max_context_that_fits(ask.model, cap, batch=ask.batch, **kwargs),
        memory.max_batch_that_fits(ask.model, cap, context=ask.context, **kwargs),
    )


# ---------------------------------------------------------------- rooflines


def decode_bytes_per_step(
    model: memory.ModelSpec, quant: memory.Quantization, context: float, batch: int
) -> float:
    """Bytes one decode step reads: the weights a token runs through, plus every sequence's KV."""
    weights = memory.weight_bytes(model, quant) * model.active_params_b / model.params_b
    kv = memory.kv_cache_bytes_per_token(model) * memory.kv_tokens(model, context, stored=False)
    return weights + kv * batch


def decode_bytes_floor(model: memory.ModelSpec, quant: memory.Quantization) -> float:
    """Bytes one decode token reads at the least: the layers' weights it runs through (active
    experts only), embeddings and lm_head left out. A bound, not an estimate: the token-per-s
    ceiling bandwidth / this can be reached by nothing, since lm_head and the KV are read too."""
    layers = model.active_params_b * 1e9 - model.embedding_params
    return max(layers, 0.0) * quant.bits_per_weight / 8


def decode_ceiling_tokens_per_s(
    model: memory.ModelSpec,
    quant: memory.Quantization,
    context: float,
    batch: int,
    bandwidth_gbs: float,
    in_parallel: int = 1,
) -> float:
    """Tokens/s no decode of `batch` sequences at `context` tokens can pass: `in_parallel` GPUs'
    datasheet bandwidth over the least bytes a step reads (the layers' weights a token runs
    through, decode_bytes_floor, and every sequence's KV). A layer split's GPUs read their
    layers in turn (in_parallel 1); a tensor-parallel one's at once, each its share."""
    read = memory.kv_tokens(model, context, stored=False)
    step = decode_bytes_floor(model, quant) + memory.kv_cache_bytes_per_token(model) * read * batch
    return bandwidth_ceiling(in_parallel * bandwidth_gbs, step / batch)


def held_to_ceiling(
    value: float, low: float, high: float, ceiling: float, reached: float | None
) -> tuple[float, float, float]:
    """An estimate and its band held below a physics `ceiling` as the throughput model holds
    its own (service/domain/throughput_model/_ceilings.py): the value claims no more than the
    best measured GPU's share of its ceiling would give this one (`reached`; the band keeps its
    width around it), never the ceiling itself, and the band stops at the ceiling, keeping its
    width below it."""
    if not (math.isfinite(ceiling) and ceiling > 0 and value > 0):
        return value, low, high
    if reached is not None and reached > 0 and value > reached:
        scale = reached / value
        value, low, high = value * scale, low * scale, high * scale
    if value > ceiling:
        below = math.log(value / low) if low > 0 else 0.0
        value, low, high = ceiling, ceiling * math.exp(-2 * below), ceiling
    return value, low, min(high, ceiling)


@dataclass(frozen=True)
class TrainedEnvelope:
    """A measured training workload of a catalog model: the model's parameters and the largest
    share of its compute ceiling any GPU measured on it reached (the throughput model's
    measured envelope)."""

    workload: str
    params_b: float
    share: float


def nearest_trained(params_b: float, trained: Sequence[TrainedEnvelope]) -> TrainedEnvelope | None:
    """The measured training workload whose model is nearest the asked one in log parameters
    (GPT-2 124M pretraining for a 1B model, MLPerf's Llama 2 70B LoRA for an 8B or 70B one:
    the two meet at 2.9B); None without one."""
    usable = [t for t in trained if t.params_b > 0 and t.share > 0]
    if not usable or params_b <= 0:
        return None
    return min(usable, key=lambda t: (abs(math.log(params_b / t.params_b)), t.workload))


def roofline_tokens_per_s(
    model: memory.ModelSpec,
    quant: memory.Quantization,
    phase: memory.Phase,
    context: float,
    batch: int,
    bandwidth_gbs: float,
    peak_tflops: float,
    passes: int = memory.FULL_TRAINING_PASSES,
) -> float:
    """Tokens/s at 100% of bandwidth (decode, capped by compute) or of peak (prefill, train:
    `passes` forwards' worth per token)."""
    flops = memory.flops_per_token(model, phase, int(context), passes)
    compute = peak_tflops * 1e12 / flops
    if phase != "decode":
        return compute
    bandwidth = bandwidth_gbs * 1e9 * batch / decode_bytes_per_step(model, quant, context, batch)
    return min(bandwidth, compute)


@dataclass(frozen=True)
class Efficiency:
    """Fraction of the roofline reached: learned from n measured GPUs, or a stated prior."""

    value: float
    log_band: float
    n: int

    @property
    def basis(self) -> str:
        return "learned" if self.n else "prior"


def learn_efficiency(ratios: Sequence[float], phase: memory.Phase) -> Efficiency:
    """Median measured / roofline, with 1.4826 x MAD of the log ratios as the band."""
    positive = [r for r in ratios if r > 0 and math.isfinite(r)]
    if not positive:
        prior = PRIOR_BANDWIDTH_UTILISATION if phase == "decode" else PRIOR_COMPUTE_UTILISATION
        return Efficiency(prior, math.log1p(DEFAULT_BAND), 0)
    logs = [math.log(r) for r in positive]
    mid = statistics.median(logs)
    mad = statistics.median(abs(x - mid) for x in logs)
    return Efficiency(math.exp(mid), max(MAD_TO_SIGMA * mad, MIN_LOG_BAND), len(positive))


K = TypeVar("K", bound=Hashable)


def split_ratios(
    single: Mapping[K, float], multi: Iterable[tuple[K, int, float]]
) -> dict[int, list[float]]:
    """N-GPU / 1-GPU throughput per N (split_speedup's input): each multi-GPU median (key, N,
    median) over the single-GPU value of the same key, where that is known."""
    out: dict[int, list[float]] = {}
    for key, count, median in multi:
        one = single.get(key)
        if one and count > 1:
            out.setdefault(count, []).append(median / one)
    return out


def split_speedup(ratios: Mapping[int, Sequence[float]], count: int) -> tuple[float, str]:
    """N-GPU / 1-GPU throughput of a model split over N GPUs: the median measured ratio at N
    (else at the nearest measured N), else 1.0 (a layer split adds memory, not speed)."""
    if count == 1:
        return 1.0, "single"
    known = {n: r for n, r in ratios.items() if r}
    if not known:
        return 1.0, "split:assumed"
    nearest = min(known, key=lambda n: (abs(n - count), n))
    return statistics.median(known[nearest]), f"split:learned@{nearest}"


# ---------------------------------------------------------------- ranking


@dataclass(frozen=True)
class Option:
    """One (GPU, count) configuration that fits, with its throughput and headroom."""

    slug: str
    count: int
    throughput: float
    low: float
    high: float
    price: float  # the cards, and the box several need where the caller knows it
    headroom: Headroom
    used: bool = False  # priced second-hand


def rank(options: Sequence[Option]) -> list[Option]:
    """By throughput; inside a tier of tied estimates fewer GPUs, then more headroom first,
    never above a faster option that costs less, and between counts of one GPU throughput
    order (tiers.tiered)."""
    ordered = sorted(options, key=lambda o: (-o.throughput, o.price, o.slug, o.count))
    return tiered(ordered, _headroom_key, lambda o: o.slug, lambda o: o.price)


def undominated(options: Sequence[Option]) -> list[Option]:
    """`options` less those another of them dominates (see the module docstring), in order."""
    return [o for o in options if not any(_dominates(other, o) for other in options)]


def _dominates(a: Option, b: Option) -> bool:
    """Whether `a` is at least as good as `b` on throughput, price and both headrooms, and
    better on one of them; a used `a` never beats a new `b`."""
    if a.used and not b.used:
        return False
    room_a = (a.headroom.max_batch or 0, a.headroom.max_context or 0)
    room_b = (b.headroom.max_batch or 0, b.headroom.max_context or 0)
    no_worse = (
        a.throughput >= b.throughput
        and a.price <= b.price
        and room_a[0] >= room_b[0]
        and room_a[1] >= room_b[1]
    )
    return no_worse and (a.throughput > b.throughput or a.price < b.price or room_a != room_b)


def ranked_above_because(first: Option, faster: Option) -> tuple[str, ...]:
    """Why `rank` put `first` above `faster`, a faster option inside its tier: "fewer GPUs",
    "larger batch", "longer context", each only where it holds (the tie-break is fewer GPUs
    first, then more room, so at least one does)."""
    reasons = []
    if first.count < faster.count:
        reasons.append("fewer GPUs")
    if (first.headroom.max_batch or 0) > (faster.headroom.max_batch or 0):
        reasons.append("larger batch")
    if (first.headroom.max_context or 0) > (faster.headroom.max_context or 0):
        reasons.append("longer context")
    return tuple(reasons)


def _headroom_key(o: Option) -> tuple[int, float, float, float, float, str]:
    room = o.headroom
    return (
        o.count,
        -(room.max_batch or 0),
        -(room.max_context or 0),
        -o.throughput,
        o.price,
        o.slug,
    )


@dataclass(frozen=True)
class DecodePoint:
    """One GPU's measured one-GPU decode rate of a model in a format over a benchmark's token
    count, and its roofline there."""

    gpu: str
    model: str
    measured: float
    roofline: float
    quant: str = ""
    tokens: int = 0
    stack: str = ""  # the GPU's software stack (FixedCosts are learned per stack)
    layers: int = 0  # the model's layers
    gb_per_token: float = 0.0  # what a token reads at the benchmark's mean context (weights, KV)


@dataclass(frozen=True)
class FixedCosts:
    """Seconds per layer per generated token that do not shrink with bandwidth (kernel
    launches, synchronisation, sampling), per software stack: the intercept of time per token
    on layers, beside bytes per token over an effective bandwidth, fitted on each GPU measured
    on two or more model weights (a model in two formats, or two models), then the median per
    stack, and over every GPU for a stack without one (`pooled`).

    On the shipped corpus (llama-bench, 2024 builds) 15 CUDA cards give 0.075-0.125 ms a layer
    (median 0.097: 3.1 ms a token for Llama 3 8B's 32 layers, 7.8 ms for 70B's 80) at 0.9-1.04 of
    their bandwidth for GDDR cards and 0.54-0.68 for the A100s and H100 PCIe, every result
    within 14% of the two-term line; three Apple chips 0.22-0.43 ms. A value moved along the
    decode roofline by the ratio of its rooflines alone carried that fixed time with the bytes:
    from Llama 2 7B in Q4_0 (3.8 GB a token) to bf16 (14.5 GB) it made an RTX 4090 41.7 tokens/s,
    below the 54.8 it measures on Llama 3 8B F16, which reads more."""

    by_stack: Mapping[str, float]
    pooled: float = 0.0

    def per_layer_s(self, stack: str) -> float:
        return self.by_stack.get(stack, self.pooled)


NO_FIXED_COSTS = FixedCosts({})


def fixed_costs(points: Iterable[DecodePoint]) -> FixedCosts:
    """FixedCosts from one-GPU decode points: per GPU with two or more (model, format) measured,
    the non-negative least-squares line time = a x layers + b x GB per token in relative
    error; a GPU with one model in one format (its points differ only in KV) says nothing of
    a, and is left out."""
    by_gpu: dict[str, list[DecodePoint]] = {}
    for p in points:
        if p.measured > 0 and p.layers > 0 and p.gb_per_token > 0:
            by_gpu.setdefault(p.gpu, []).append(p)
    per_gpu: dict[str, tuple[str, float]] = {}
    for gpu, same in by_gpu.items():
        if len({(p.model, p.quant) for p in same}) < 2:
            continue
        times = np.array([1.0 / p.measured for p in same])
        design = np.array([[p.layers, p.gb_per_token] for p in same]) / times[:, None]
        a, _ = nnls(design, np.ones(len(same)))
        if math.isfinite(a):
            per_gpu[gpu] = (same[0].stack, float(a))
    if not per_gpu:
        return NO_FIXED_COSTS
    stacks: dict[str, list[float]] = {}
    for stack, a in per_gpu.values():
        stacks.setdefault(stack, []).append(a)
    return FixedCosts(
        {s: statistics.median(v) for s, v in stacks.items()},
        statistics.median(a for _, a in per_gpu.values()),
    )


def moved_decode_rate(
    value: float, from_roof: float, to_roof: float, fixed_s: float = 0.0, layers_ratio: float = 1.0
) -> float:
    """A decode rate (tokens/s) at one roofline point (from_roof, tokens/s the bandwidth
    allows) moved to another: its fixed per-token time (`fixed_s`, FixedCosts x layers; never
    more than what the time leaves beyond the bandwidth's own, 1 / from_roof) moves with the
    layers (`layers_ratio`, asked over measured), the rest with the roofline's time, from_roof
    / to_roof. With no fixed time, the old move: value x to_roof / from_roof."""
    if not (value > 0 and from_roof > 0 and to_roof > 0) or math.isinf(to_roof):
        return math.nan  # no rate to move, or none to move it to: the caller leaves it out
    t = 1.0 / value
    fixed = min(max(fixed_s, 0.0), max(t - 1.0 / from_roof, 0.0)) if math.isfinite(fixed_s) else 0
    moved_s = fixed * layers_ratio + (t - fixed) * from_roof / to_roof
    return 1.0 / moved_s if moved_s > 0 else math.nan


def transfer_half_width(
    points: Iterable[DecodePoint],
    coverage: float,
    fixed_for: Callable[[str], FixedCosts] | None = None,
) -> float:
    """The conformal `coverage` quantile of |log error| of moving one model's measured decode
    rate to another model's on the same GPU along their rooflines (moved_decode_rate, with
    the fixed costs `fixed_for` gives for the GPU: held_out_fixed_costs, as a card nobody
    measured gets them), over every such pair; 0 with none (then no model was measured beside
    another on one GPU)."""
    return _roofline_move_half_width(points, coverage, lambda a, b: a.model != b.model, fixed_for)


def format_move_half_width(
    points: Iterable[DecodePoint],
    coverage: float,
    fixed_for: Callable[[str], FixedCosts] | None = None,
) -> float:
    """The same quantile for moving a measured decode rate to another format of the same model
    on the same GPU (Llama 3 8B Q4_K_M to F16): what a value moved to a format nothing
    measured adds to its band."""
    return _roofline_move_half_width(
        points, coverage, lambda a, b: a.model == b.model and a.quant != b.quant, fixed_for
    )


def context_move_half_width(points: Iterable[DecodePoint], coverage: float) -> float:
    """The same quantile for moving a measured decode rate to another context of the same
    model and format on the same GPU (a llama-bench tg512 result to tg8192), the whole time in
    proportion, as such a move is made (_fixed_move): what a measured value moved to an asked
    context or batch it was not measured at adds to its band; 0 with no model measured at two
    token counts on one GPU."""
    return _roofline_move_half_width(
        points,
        coverage,
        lambda a, b: a.model == b.model and a.quant == b.quant and a.tokens != b.tokens,
    )


def held_out_fixed_costs(points: Iterable[DecodePoint]) -> Callable[[str], FixedCosts]:
    """gpu -> FixedCosts learned without that GPU's points: what a card nobody measured gets,
    so that a move's error on a GPU is scored as it is made for one."""
    kept = list(points)
    learned: dict[str, FixedCosts] = {}

    def without(gpu: str) -> FixedCosts:
        if gpu not in learned:
            learned[gpu] = fixed_costs([p for p in kept if p.gpu != gpu])
        return learned[gpu]

    return without


def _roofline_move_half_width(
    points: Iterable[DecodePoint],
    coverage: float,
    pair: Callable[[DecodePoint, DecodePoint], bool],
    fixed_for: Callable[[str], FixedCosts] | None = None,
) -> float:
    by_gpu: dict[str, list[DecodePoint]] = {}
    for p in points:
        if p.measured > 0 and p.roofline > 0:
            by_gpu.setdefault(p.gpu, []).append(p)
    errors = [
        abs(
            math.log(
                b.measured / moved_between(a, b, fixed_for(a.gpu) if fixed_for else NO_FIXED_COSTS)
            )
        )
        for same in by_gpu.values()
        for a in same
        for b in same
        if pair(a, b)
    ]
    return conformal_quantile(errors, coverage) if errors else 0.0


def moved_between(a: DecodePoint, b: DecodePoint, fixed: FixedCosts) -> float:
    """a's measured rate moved to b's roofline point, with a's stack's fixed costs."""
    fixed_s, layers_ratio = fixed_part(fixed, a.stack, a.layers, b.layers)
    return moved_decode_rate(a.measured, a.roofline, b.roofline, fixed_s, layers_ratio)


def fixed_part(
    fixed: FixedCosts, stack: str, from_layers: int, to_layers: int, batch: int = 1
) -> tuple[float, float]:
    """(the fixed seconds a token of a `from_layers` model takes on `stack`, what that time is
    multiplied by at the target: its layers over the source's, per token of a step of `batch`),
    moved_decode_rate's `fixed_s` and `layers_ratio`."""
    layers_ratio = to_layers / from_layers if from_layers > 0 and to_layers > 0 else 1.0
    return fixed.per_layer_s(stack) * from_layers, layers_ratio / max(batch, 1)
