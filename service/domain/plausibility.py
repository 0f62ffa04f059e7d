"""Physics gate: a result cannot beat the GPU's peak arithmetic rate for its precision.

A weight format (q4_k_m, nf4, awq...) is judged at the rate its matmuls run at,
vocabulary.COMPUTE_PRECISION (the same table the estimators use). fp4: the catalog has no FP4
column yet, so an fp4 run's ceiling is the fastest unit it certainly has (fp8 and below).
"""

import math
from dataclasses import dataclass
from typing import NamedTuple

from service.domain.vocabulary import COMPUTE_PRECISION

PEAK_TOLERANCE = 1.05


@dataclass(frozen=True)
class PeakRates:
    """Spec rates of one GPU in TFLOPS (TOPS for int8); None where the GPU lacks the unit."""

    fp32: float
    fp16_vector: float | None = None
    tf32_tensor: float | None = None
    fp16_tensor: float | None = None
    bf16_tensor: float | None = None
    fp8_tensor: float | None = None
    int8: float | None = None


# A run at a precision may use any unit at least that precise (PyTorch runs fp32 convolutions
# as TF32 on Ampere by default, mixed precision keeps fp32 parts), so its ceiling is the fastest
# unit among those it can use.
_UNITS_FOR_PRECISION: dict[str, tuple[str, ...]] = {
    "fp32": ("fp32", "tf32_tensor"),
    "tf32": ("fp32", "tf32_tensor"),
    "fp16": ("fp32", "tf32_tensor", "fp16_vector", "fp16_tensor"),
    "bf16": ("fp32", "tf32_tensor", "fp16_vector", "bf16_tensor"),
    "fp8": ("fp32", "tf32_tensor", "fp16_vector", "fp16_tensor", "bf16_tensor", "fp8_tensor"),
    "int8": ("fp32", "tf32_tensor", "fp16_vector", "fp16_tensor", "bf16_tensor", "int8"),
    "fp4": ("fp32", "tf32_tensor", "fp16_vector", "fp16_tensor", "bf16_tensor", "fp8_tensor"),
}


def peak_tflops(rates: PeakRates, precision: str) -> float:
    """The highest rate a run at `precision` (or a weight format's compute precision) could
    reach on this GPU. bfloat16 is its own format: a GPU without bf16 units (before Ampere
    and CDNA: V100, T4, RTX 20, GTX 10) runs it through FP32 arithmetic, never its fp16
    units, so there only the FP32 rate counts (the catalog put a V100 or an RTX 2080 Ti at
    twice its FP32 rate on bf16 work)."""
    compute = COMPUTE_PRECISION.get(precision, precision)
    units = _UNITS_FOR_PRECISION[compute]
    if compute == "bf16" and rates.bf16_tensor is None:
        units = tuple(u for u in units if u != "fp16_vector")
    values = [getattr(rates, unit) for unit in units]
    return max(v for v in values if v is not None)


# NVIDIA architectures without FP8 tensor cores that run FP8 weights as weight-only W8A16
# (FP8 Marlin, compute capability 7.5 to 8.7): vLLM docs, features/quantization/fp8 ("FP8
# models will run on compute capability >= 7.5 (Turing) as weight-only W8A16"), dense models
# only ("vLLM supports FP8 MoE models only on Ada Lovelace or Hopper GPUs (>= SM 89)", Red Hat
# AI on huggingface.co/neuralmagic/DeepSeek-Coder-V2-Instruct-FP8, discussion 1).
FP8_WEIGHT_ONLY_ARCHITECTURES = frozenset({"turing", "ampere"})
NO_FP8_UNITS = "no_fp8_units"


def lacks_fp8_units(
    precision: str, rates: PeakRates, architecture: str, weight_only_decode: bool
) -> bool:
    """An fp8 run on a GPU without FP8 tensor units, which no framework does: only an LLM's
    memory-bound decode reads FP8 weights there, as weight-only W8A16 on Turing and Ampere
    (`weight_only_decode`: the workload is one). An RTX 3090 ResNet-50 result at fp8 had been
    accepted, and moved every GPU's fp8 estimate (the fit took it as the workload's only
    measured GPU at that precision)."""
    if COMPUTE_PRECISION.get(precision, precision) != "fp8" or rates.fp8_tensor:
        return False
    return not (weight_only_decode and architecture in FP8_WEIGHT_ONLY_ARCHITECTURES)


def fp16_accumulate_tflops(rates: PeakRates) -> float:
    """FP16 matrix rate with FP16 accumulation: the catalog's fp16 rate, or half the int8 rate
    where that is higher.

    The catalog's GeForce RTX 20-50 tensor rates are the FP32-accumulate ones, half the
    FP16-accumulate rate (service/catalog/SOURCES.md); professional, datacenter and Titan parts
    run both at the full rate. NVIDIA's INT8 tensor rate is twice the full-rate FP16 one from
    Turing on, so half of it is the FP16-accumulate rate on every such card (RTX 4090: 660.6 / 2
    = 330.3, the Ada whitepaper's figure; RTX 3090: 142; RTX 5090: 419; RTX A6000, H100: equal
    to their FP16 rate), while for GPUs whose int8 rate is not twice their fp16 rate (Volta,
    RDNA3, Apple) the fp16 rate stands."""
    fp16 = peak_tflops(rates, "fp16")
    return max(fp16, rates.int8 / 2) if rates.int8 else fp16


def implied_tflops(value: float, flops_per_unit: float, gpu_count: int) -> float:
    """Arithmetic rate per GPU that a throughput of `value` units/s implies."""
    return value * flops_per_unit / gpu_count / 1e12


def exceeds_peak(
    value: float, flops_per_unit: float | None, gpu_count: int, rates: PeakRates, precision: str
) -> bool:
    if flops_per_unit is None:
        return False
    implied = implied_tflops(value, flops_per_unit, gpu_count)
    return implied > PEAK_TOLERANCE * peak_tflops(rates, precision)


def bandwidth_ceiling(bandwidth_gbs: float, bytes_per_unit: float | None) -> float:
    """Units/s one GPU could do reading the least bytes a unit needs (a decode token's layer
    weights, llm_fit.decode_bytes_floor) at its datasheet bandwidth; inf where none is stated."""
    if not bytes_per_unit or bytes_per_unit <= 0 or bandwidth_gbs <= 0:
        return math.inf
    return bandwidth_gbs * 1e9 / bytes_per_unit


def exceeds_bandwidth(
    value: float, bytes_per_unit: float | None, gpu_count: int, bandwidth_gbs: float
) -> bool:
    """A decode result faster than `bandwidth_ceiling` allows (with the peak's tolerance; N
    GPUs at most N times one, as a tensor split would be). Shipped decode results reach at most
    81% of it."""
    return value > PEAK_TOLERANCE * gpu_count * bandwidth_ceiling(bandwidth_gbs, bytes_per_unit)


# --- Peers check (issue 11 section 4) -------------------------------------------------------
#
# A result is compared with what *other* measured GPUs reach on the same workload and precision.
# Efficiency is per-GPU throughput divided by a GPU's ceiling: its peak rate for compute-bound
# work, its memory bandwidth for memory-bound work. The workload's FLOPs (or bytes) per unit is
# the same for every GPU, so it cancels in the ratio and the check works for workloads without
# flops_per_unit too. Compute-bound results are flagged only when they beat the best peer by
# PEER_FACTOR on both the compute and the bandwidth measure: tensor-core peaks are far from
# reachable on many workloads, so a GPU without tensor cores can look "too efficient" against its
# FLOPs alone while being ordinary against its bandwidth. No per-GPU constants.

PEER_FACTOR = 2.0
SUPERLINEAR_FACTOR = 1.2  # per-GPU throughput on N GPUs vs the same GPU's single-GPU median

# A run at a reduced precision (fp16, bf16, fp8, a weight format) can always fall back to FP32
# math (peak_tflops counts the FP32 units for every precision), and mixed precision adds casts,
# not a second pass, so it never halves a step's speed against the same GPU's FP32 run (same
# workload and GPU count). Of the 1,841 reduced-precision rows in Lambda's tables with an FP32
# median to compare with, 9 are below half of it: the RTX A4000 WaveGlow fp16 column (0.10-0.12,
# 1 to 16 GPUs), two 8-GPU RTX 2080 Ti BERT-large cells (0.30, out-of-memory runs), a laptop RTX
# 3080 Max-Q WaveGlow cell (0.39) and one 4x H100 Tacotron 2 cell (0.46, where eleven other 4x
# H100 systems measured 254k-337k); the next is 0.52. Such a value is a failed run, not a card.
REDUCED_PRECISION_FLOOR = 0.5
# Where the GPU has no FP32 median at the run's GPU count, the per-GPU share is judged against
# the FP32 per-GPU share at the largest smaller count it has: per-GPU throughput falls as GPUs
# are added (by the scaling loss; 4 GPUs at 2-3x with weak libraries is a per-GPU 0.5-0.75), so
# that floor allows a further 2x. Lambda's 16-GPU RTX A4000 WaveGlow fp16 cell, whose 16-GPU
# FP32 reference is itself refused (superlinear), is 0.14 of the 8-GPU FP32 share: the same
# failed column as its 1- to 8-GPU cells. The lowest other such ratio in the shipped corpus is
# 1.66 (Quadro RTX 8000 SSD fp16 on 8 GPUs against its 1-GPU fp32 run).
FEWER_GPUS_FLOOR = REDUCED_PRECISION_FLOOR / 2

IMPLAUSIBLE_VS_PEERS = "implausible_vs_peers"
SUPERLINEAR_SCALING = "superlinear_scaling"
SLOWER_THAN_FP32 = "slower_than_fp32"


class Efficiency(NamedTuple):
    """Per-GPU throughput per TFLOPS of peak and per GB/s of bandwidth (relative units).
    (A NamedTuple: the peers step makes one per stored group and row of a batch.)"""

    compute: float
    bandwidth: float


def efficiency(
    value: float, gpu_count: int, rates: PeakRates, precision: str, bandwidth_gbs: float
) -> Efficiency:
    return efficiency_at(value, gpu_count, peak_tflops(rates, precision), bandwidth_gbs)


def efficiency_at(value: float, gpu_count: int, peak: float, bandwidth_gbs: float) -> Efficiency:
    """efficiency() with the peak already looked up (a batch judges many rows per GPU)."""
    per_gpu = value / gpu_count
    return Efficiency(per_gpu / peak, per_gpu / bandwidth_gbs)


def implausible_vs_peers(candidate: Efficiency, best_peer: Efficiency, memory_bound: bool) -> bool:
    """True when `candidate` is far beyond the best efficiency other GPUs reach."""
    over_bandwidth = candidate.bandwidth > PEER_FACTOR * best_peer.bandwidth
    if memory_bound:
        return over_bandwidth
    return over_bandwidth and candidate.compute > PEER_FACTOR * best_peer.compute


def best_efficiency(peers: list[Efficiency]) -> Efficiency | None:
    """Componentwise best of the peers' efficiencies; None without peers."""
    if not peers:
        return None
    return Efficiency(max(p.compute for p in peers), max(p.bandwidth for p in peers))


def slower_than_fp32(value: float, precision: str, fp32_median: float | None) -> bool:
    """True when a reduced-precision run gives less than REDUCED_PRECISION_FLOOR of the same
    GPU's FP32 median on the same workload and GPU count."""
    if precision == "fp32" or fp32_median is None or fp32_median <= 0:
        return False
    return value < REDUCED_PRECISION_FLOOR * fp32_median


def slower_than_fp32_on_fewer_gpus(
    value: float, precision: str, gpu_count: int, fp32_count: int, fp32_median: float
) -> bool:
    """True when a reduced-precision run on `gpu_count` GPUs gives per GPU less than
    FEWER_GPUS_FLOOR of the same GPU's FP32 median per GPU on `fp32_count` < `gpu_count` GPUs
    (the largest smaller count measured; only where the same count has no FP32 median)."""
    if precision == "fp32" or not 0 < fp32_count < gpu_count or fp32_median <= 0:
        return False
    return value / gpu_count < FEWER_GPUS_FLOOR * fp32_median / fp32_count


# A data-parallel run on N GPUs that is no faster than one of them has not scaled: each GPU
# steps its own share of the batch, and even weak libraries give 2-3x on 4 GPUs (the README's
# guide figures). Lambda's tables hold such cells: RTX 3090 BERT-large fp32 16 sentences/s on 4
# and on 8 GPUs against 24 on one, RTX 2080 Ti BERT-large fp16 6 on 2 and 4 against 23 on one
# (out-of-memory runs, as the 8-GPU cells slower than FP32 are), an RTX 6000 Ada Tacotron 2
# fp32 4-GPU cell at 11,570 against 31,837 on one. Answered as measured, /compare said 16
# sentences/s for 8 x RTX 3090 where /recommend's profile said 133. Not for a split by layers
# (llama.cpp's multi-GPU prefill and decode), where one token passes the GPUs in turn and N
# GPUs are expected to be no faster than one (`splits_by_layers`), nor for a memory-bound
# workload (a batch-1 decode over GPUs without peer-to-peer may be no faster either).
NO_FASTER_THAN_ONE_GPU = "no_faster_than_one_gpu"


def splits_by_layers(quant: str | None, phase: str | None) -> bool:
    """A llama-bench workload (a GGUF or F16 file's prefill or decode): llama.cpp splits the
    model by layers over N GPUs, so one token or prompt goes through them in turn."""
    return quant is not None and phase in ("prefill", "decode")


def gpus_in_parallel(gpu_count: int, in_turn: bool) -> int:
    """How many GPUs work on one decoded token at once: all N, or one at a time where they
    decode in turn (llama.cpp's layer split, which every llama-bench workload is judged as: a
    row split is another configuration, and a note saying so is free text anyone can post).
    A layer split's N GPUs decode no faster than one GPU's bandwidth allows, and no faster
    than the same GPU alone (superlinear against 1, not N): 2 x RTX 4090 at 240 tokens/s on
    Llama 3 8B Q4_K_M had passed (the corpus measures 130.6 on one 4090, 124.65 on two) and
    lifted every GPU's learned split ratio above 1. Not for prefill, which llama.cpp pipelines
    over the GPUs in prompt batches (92 of the corpus's layer-split prompt rows pass 1.2 x one
    GPU)."""
    return 1 if in_turn else gpu_count


def no_faster_than_one_gpu(value: float, gpu_count: int, single_gpu_median: float | None) -> bool:
    """True when a data-parallel run on N > 1 GPUs gives at most one GPU's median."""
    if gpu_count <= 1 or single_gpu_median is None or single_gpu_median <= 0:
        return False
    return value <= single_gpu_median


# The same contradiction from the other side: one GPU claiming at least what N > 1 of the same
# GPU measured together on a data-parallel workload. Judged against the stored accepted N-GPU
# medians only (never a batch's own: a batch holding a failed N-GPU run and its GPU's one-GPU
# run flags the N-GPU one, no_faster_than_one_gpu), so a cell seeded with its one-GPU run is
# never flagged by what is posted after it; and only beyond SUPERLINEAR_FACTOR x the stored
# one-GPU median, so a run a little faster than a cell that barely scaled passes. Five posts
# of 1,500 img/s for an RTX 3070 on ResNet-50 fp16 had made Lambda's one-GPU 419 an outlier by
# the statistics step and ranked the 3070 first, where Lambda's own 2-, 4- and 8-GPU cells of
# the card measure 808, 1,620 and 3,117.
FASTER_THAN_MULTI_GPU = "faster_than_multi_gpu"


def faster_than_multi_gpu(
    value: float,
    gpu_count: int,
    multi_gpu_median: float | None,
    single_gpu_median: float | None = None,
) -> bool:
    """True when a one-GPU run gives at least the median of N > 1 of the same GPU (the lowest
    stored N-GPU median of a data-parallel workload) and, where the GPU has a stored one-GPU
    median, more than SUPERLINEAR_FACTOR times it: a run a little faster than a cell that
    barely scaled (a Quadro RTX 8000's 2-GPU Transformer-XL Large cell is 1.04 x its one-GPU
    median) is a faster run, not a contradiction, and two posted 2-GPU runs just above the
    one-GPU median must not refuse the next faster one-GPU run."""
    if gpu_count != 1 or multi_gpu_median is None or multi_gpu_median <= 0:
        return False
    if single_gpu_median is not None and value <= SUPERLINEAR_FACTOR * single_gpu_median:
        return False
    return value >= multi_gpu_median


def superlinear(
    value: float, gpu_count: int, single_gpu_median: float | None, in_parallel: int | None = None
) -> bool:
    """True when N GPUs claim clearly more than N times one GPU's throughput, or than once where
    they work one at a time (`in_parallel`, gpus_in_parallel: a layer split)."""
    if gpu_count <= 1 or single_gpu_median is None or single_gpu_median <= 0:
        return False
    return value / (in_parallel or gpu_count) > SUPERLINEAR_FACTOR * single_gpu_median
