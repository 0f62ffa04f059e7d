"""Throughput model: time per unit = sum over resources of work / rate, plus an overhead.

Pure functions on plain dataclasses (no database, no I/O). Design decisions:

- Resources. A step uses matrix math at the workload's precision (``tensor``: the fastest dense
  unit a run at that precision can use, which is the FP32 rate on a GPU without tensor cores),
  vector FP32 math (``vector``), memory traffic (``memory``) and memory size (``capacity``:
  benchmarks run at the largest batch that fits, so per-step fixed costs are amortised over a
  batch proportional to memory size; with it, held-out cold-GPU errors on the shipped corpus fell
  from a median MdAPE of 9.7% to 8.0%, p90 21.0% to 19.6%). A GPU's rate for a resource is
  spec x calibration efficiency where a calibration exists. Time per unit on GPU g for workload
  w is ``t = (sum_r work_w[r] / rate_g[r] + overhead_w) / e_g`` with ``work_w >= 0``: a workload
  can be partly compute- and partly memory-bound, which a log-linear fit with tied exponents
  cannot express. Units: work in TFLOP (tensor, vector) and GB (memory), overhead in seconds.
- Fit. ``work_w`` is fitted per workload by non-negative least squares on errors in log space,
  solved by iteratively reweighted NNLS: each pass minimises sum ((p_new - t) / p_old)^2 with
  p_old the previous prediction (the first pass uses the measured time), i.e. relative errors,
  which equal log errors to first order; the pass with the lowest sum of squared log errors is
  kept. Gauss-Newton on log t would need a bounded step; IRLS keeps every pass a plain NNLS.
  With few measured GPUs a workload borrows the shape (work split) of the most similar measured
  workloads and fits only a scale; with enough GPUs both that and the free fit are tried and the
  one with the lower leave-one-out log error is kept (a choice made by the data).
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
- Dies. The architecture level is (architecture, die): a vendor ships one architecture name on
  two dies, a compute die with HBM (GA100 in the A100 and A30, GB100 in the B200, GP100) and
  graphics dies with GDDR (GA102 in the RTX 3090, A6000 and A40; GB202 in the RTX 5090), with
  different SMs (GpuSpec.die). The catalog's memory type says which; a GPU without one counts
  as a graphics die. Lumped, the A100s' residuals set the term that the GA10x workstation
  cards got: on the shipped corpus, leave-one-GPU-out, 23 -> 26 of 47 workloads met all
  targets (median MdAPE 9.2% -> 9.1%, p90 21.8% -> 21.4%, coverage 81.5% -> 80.0%);
  bench/heldout.py, same run: a known GPU 11.1% -> 11.3% (p90 22.8% -> 25.7%), a cold one
  11.5% -> 11.1% (p90 22.9% -> 25.4%), 0 of 7 tables either way. Only Ampere, Blackwell and
  Pascal have both dies in the catalog; no graphics-die card is at least as fast in every rate
  as a compute-die card of its architecture, and the served estimates stay monotone over such
  pairs (tests/api/test_estimates_wiring.py).
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
- Nothing measured for a workload: pooled work per FLOP of the nearest measured workloads of the
  same memory-bound kind (same phase first, then the same unit, then the same precision width,
  then nearest FLOPs per unit in log space). The unit says what a step processes: GPT-2 training
  (tokens/s) borrowing from ResNet-50 and SSD (images/s, nearer in FLOPs per unit) took their
  memory- and batch-heavy split and put an RTX 3090 at 0.86 of a measured RTX 4090, where
  Lambda's token-counting training rows (Transformer-XL, GNMT) measure 0.52-0.54 (held-out
  median MdAPE 10.2% -> 9.9%, p90 22.9% -> 22.8%). Its band is the conformal quantile of how
  far such borrowing misses (`borrow_errors`: each measured workload with FLOPs stated,
  estimated from its nearest others as if nothing were measured on it), per memory-bound
  kind: on the shipped corpus x1.93 either way memory-bound, x2.63 otherwise, mostly one
  factor per workload (offsets -1.5 to +1.3 in log, spread within a workload 0.05-0.3).
- Bands: split-conformal. The 80% band's half-width in log space is the conformal quantile of
  the absolute leave-one-GPU-out log errors of the workload (pooled over workloads of the same
  kind when it has fewer than ``MIN_CONFORMAL`` of its own), never below the measured spread of
  the workload's results; a measured value's band is its own spread or, for a single result,
  the pooled spread of that workload's results: never zero-width. In those leave-one-out
  predictions the held-out GPU gets its stack and architecture terms pooled without its own
  residuals, as a card nobody measured would: kept in, a GPU alone in its group (an M1 Max, an
  Arc B580) was predicted with its own efficiency and its band was too narrow (shipped corpus,
  leave-one-GPU-out: median coverage 79.3% -> 80.0%, three workloads from 60-68% to 73-89%,
  errors unchanged). A GPU whose stack has no data of the workload's phase in any suite (an
  Intel card on training or any other workload without a phase: the shipped corpus has none)
  gets the mean of the measured stacks' terms at that phase (`stack_centre`, one vote per
  stack: stacks are groups drawn from one population, and the best guess for a new group is
  their mean, not CUDA's term; on the shipped corpus -0.19 in log without a phase, where CUDA
  is +0.03 and both ROCm stacks -0.3), and its band widens in quadrature by z x s, s^2 = tau^2
  of the (stack, phase) terms around that mean (s = 0.18 in log without a phase, 0.20 for
  decode, 0.89 for prefill): the leave-one-out errors come from GPUs whose stacks are measured
  and do not hold that uncertainty. A GPU alone in its stack is held out the same way in those
  errors. The prediction says so (`stack_measured`) and a recommendation's why names the
  stack. The term was 0 at first, with s^2 = tau^2 + the mean squared (0.23, 0.23, 0.92):
  measured on GPU-Insights' training tables (bench/heldout.py), the Arc A770's mean log error
  went from -0.51 to -0.25 and the M1 Max's from -0.46 to -0.21, both stacks without a training
  result; held-out median MdAPE 11.9% -> 12.1% known, 10.7% -> 10.5% cold, p90 24.2% ->
  22.5% and 24.5% -> 23.7%, coverage 83.3% -> 87.5%; on the corpus one row moved (Llama-2-7B
  Q4_0 tg128, where the Arc B580 is alone in its stack: p90 125.8% -> 117.5%, coverage 50.0%
  -> 66.7%).
- Few data and nothing to borrow from (fewer than ``MIN_NNLS_GPUS`` GPUs, no other workload
  fitted): a stated prior shape, all work on the tensor unit (memory for a memory-bound
  workload), scaled to the data: a spec ratio.
- Physics: no estimate passes the GPU's compute ceiling, its fastest unit's spec rate (calibrated
  where measured) / FLOPs per unit, which the gate holds results to as well (plausibility.py),
  nor for a decode workload whose model and format are known its bandwidth ceiling, datasheet
  bandwidth / the layer weights a token reads (`bandwidth_ceiling`); value and band stop
  there, the band keeping its width below it (`physics_ceiling`). Measured decode results reach
  at most 81% of that bandwidth ceiling (RTX 4000 Ada, Llama 3 8B F16 tg512); of 1,859 served
  decode estimates on the shipped corpus 136 bands and 7 values stop at it, and the
  leave-one-GPU-out figures are unchanged (no held-out prediction reached it). A fit is
  of the GPUs measured: the MLPerf Llama-2-70B offline fit puts all its work on memory traffic,
  which put a GTX 1080 Ti at 6.4 times what its arithmetic can do, and the llm.c GPT-2 fit
  V100s at 1.5-1.7 times and an H20 at 1.6 times. Of 7,057 estimates on the shipped corpus 226
  stop at the ceiling; no held-out prediction of a measured GPU did, so the leave-one-out
  figures are unchanged.
- Measured envelope: below the physics, no estimate claims a larger share of its binding
  ceiling (bandwidth for a memory-bound workload with bytes per unit stated, else compute)
  than any GPU measured on the workload reached (`measured_envelope`, with 5+ GPUs measured);
  the value stops there and its band keeps its width around it. The GPT-2 training fit had put
  34 cards at their full compute peak: an H20 at 172,695 tokens/s (all of its 148 dense BF16
  TFLOPS) and a GTX 1080 Ti at 13,232, where the best measured card, the RTX 5090, reaches
  79%; now 136,337 and 10,446. Shares of the other ceiling say nothing (a decode workload's
  cards use a few percent of their compute). On the shipped corpus 342 of 7,920 served values
  stop at it (40 of them on GPT-2 training), and leave-one-GPU-out, same corpus and run: 26 ->
  28 of 47 workloads meeting all targets (`llm-train` MdAPE 11.0% -> 9.0%; Llama-3-70B Q4_K_M
  tg4096 9.9% -> 8.5%, p90 22.7% -> 17.7%), median MdAPE 8.4% either way, p90 21.0% -> 20.9%;
  the held-out GPU-Insights tables state no FLOPs and are unchanged. Pooled per phase over
  every workload instead of per workload: 27 of 47. A workload nothing is measured on takes
  the envelope of where it borrows from (`borrowed_envelope`).
- Odd data never raises: rates are clamped to [RATE_MIN, RATE_MAX], medians outside
  [VALUE_MIN, VALUE_MAX] or not finite are ignored, log half-widths are capped at
  ``MAX_LOG_HALF_WIDTH``, and a workload whose fit fails numerically is left unfitted.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal, TypeVar

import numpy as np

from service.domain import plausibility
from service.domain.estimate import BYTES_PER_PARAM

RESOURCES: tuple[str, ...] = ("tensor", "vector", "memory", "capacity")
Basis = Literal["measured", "estimated"]
K = TypeVar("K", bound=Hashable)
Item = TypeVar("Item", bound=Hashable)

NOMINAL_COVERAGE = 0.8
FP16_ACCUMULATE = "fp16+acc16"  # matrix_tflops key: fp16 GEMMs with fp16 accumulation
MIN_NNLS_GPUS = 5  # a free fit of 4 work terms + overhead: at least as many GPUs as terms
MIN_CONFORMAL = 5  # fewer own leave-one-out errors: pool over workloads of the same kind
# fewer measured GPUs: no measured envelope (the best of one or two cards bounds nothing)
MIN_ENVELOPE_GPUS = 5
SIMILAR_WORKLOADS = 3
SAME_STEP_PRECISIONS = frozenset({"fp16", "bf16"})  # one step, two formats of the same width
# a step at fp8 is a 16-bit step whose matrix math runs at the fp8 rate: FP8 training keeps
# master weights, optimizer state and the non-matmul work at 16 or 32 bits (Micikevicius et
# al. 2022, "FP8 Formats for Deep Learning", sec. 4); it borrows the 16-bit fit (_twin), as
# an int8 one does (int8 inference quantizes the matmuls: GPT-2 training at int8, borrowed per
# FLOP, had put a B200 at 2.3 times its bf16 measurement)
NARROW_STEP_PRECISIONS = frozenset({"fp8", "int8"})
BACKFIT_ROUNDS = 3
IRLS_ROUNDS = 6
# Run-to-run noise when no workload has two results of one GPU to measure it: an assumption,
# stated, that keeps a single result's band from being zero-width. Replaced by data.
DEFAULT_RELATIVE_NOISE = 0.05
MAD_TO_SIGMA = 1.4826
RATE_MIN, RATE_MAX = 1e-6, 1e9  # TFLOPS or GB/s: clamps that keep 1 / rate finite
VALUE_MIN, VALUE_MAX = 1e-9, 1e12  # units/s a median may have to be used at all
MAX_LOG_HALF_WIDTH = math.log(1e3)  # a band wider than x1000 either way says nothing more
MAX_LOG_MULTIPLIER = math.log(1e3)  # a pooled efficiency beyond x1000 is a data error


def _clamp_rate(x: float) -> float:
    return min(max(x, RATE_MIN), RATE_MAX) if math.isfinite(x) else RATE_MIN


def _usable(o: Observation) -> bool:
    return math.isfinite(o.median) and VALUE_MIN <= o.median <= VALUE_MAX


def _z(coverage: float) -> float:
    """Two-sided normal quantile for `coverage` (bisection on erf; no scipy)."""
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if math.erf(mid / math.sqrt(2)) < coverage:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# --------------------------------------------------------------------------- inputs


def derive_stack(vendor: str, market: str) -> str:
    """Software stack from vendor and market, for catalogs that do not state one."""
    v = vendor.lower()
    if v == "nvidia":
        return "cuda"
    if v == "amd":
        return "rocm-instinct" if market == "datacenter" else "rocm-radeon"
    if v == "intel":
        return "oneapi"
    if v == "apple":
        return "metal"
    return v


@dataclass(frozen=True)
class GpuSpec:
    """Spec rates of one GPU.

    ``matrix_tflops`` maps a precision to the fastest dense rate a run at that precision can use
    (tensor cores where present, else the vector rate). ``calibration`` maps ``"tensor:<prec>"``,
    ``"vector"`` or ``"memory"`` to a measured efficiency (achieved / spec) in (0, 1].
    """

    slug: str
    vendor: str
    architecture: str
    stack: str
    matrix_tflops: Mapping[str, float]
    fp32_tflops: float
    bandwidth_gbs: float
    calibration: Mapping[str, float] = field(default_factory=dict)
    memory_gb: float | None = None
    tdp_w: float | None = None
    memory_type: str | None = None  # HBM3, GDDR6X, ... (None: not stated)

    @property
    def log_power(self) -> float | None:
        """log of the board power in W; None where the catalog does not state one."""
        if self.tdp_w is None or not math.isfinite(self.tdp_w) or self.tdp_w <= 0:
            return None
        return math.log(self.tdp_w)

    def rates(self, precision: str) -> np.ndarray:
        """(tensor, vector, memory, capacity) effective rates for a workload at `precision`.

        Capacity is the memory size in GB: a benchmark run at the largest batch that fits
        amortises its per-step fixed costs over a batch proportional to it, so that cost per
        unit goes as 1 / memory. Without a memory size the term is switched off (the rate
        clamped to RATE_MAX), never guessed."""
        tensor = self.matrix_tflops.get(precision) or self.fp32_tflops
        cal = self.calibration
        capacity = self.memory_gb if self.memory_gb and self.memory_gb > 0 else RATE_MAX
        return np.array(
            [
                _clamp_rate(tensor * cal.get(f"tensor:{precision}", 1.0)),
                _clamp_rate(self.fp32_tflops * cal.get("vector", 1.0)),
                _clamp_rate(self.bandwidth_gbs * cal.get("memory", 1.0)),
                _clamp_rate(capacity),
            ]
        )

    @cached_property
    def die(self) -> str:
        """Which die a card carries: "compute" with HBM, else "graphics" (also where the
        catalog states no memory type). One architecture name covers two dies: the A100's
        GA100 and the RTX 3090's GA102, the B200 and the RTX 5090. A vendor's HBM part is its
        compute die, with its own SM design (per SM, GA100 has half GA102's FP32 lanes, tensor
        cores of twice the dense FP16 rate and 192 KB of L1 against 128 KB: NVIDIA's A100 and
        GA102 whitepapers), and the memory type says which one a card carries."""
        return "compute" if (self.memory_type or "").upper().startswith("HBM") else "graphics"

    @cached_property
    def group(self) -> tuple[str, str]:
        """The architecture level of the efficiency terms: (stack, architecture/die); cached, as
        every prediction asks for it."""
        return (self.stack, f"{self.architecture}/{self.die}")


@dataclass(frozen=True)
class WorkloadSpec:
    slug: str
    precision: str
    flops_per_unit: float | None
    memory_bound: bool
    kind: str = ""  # phase: "" (training, batch inference), prefill or decode
    unit: str = ""  # what one unit is (tokens/s, images/s): the data a step processes
    # the GpuSpec.matrix_tflops key its matrix math runs at where that is not its precision
    # (FP16_ACCUMULATE: fp16 GEMMs accumulating in fp16)
    matmul: str = ""
    # the lab or harness whose results measure it (one lab's scripts, batch sizes and software:
    # Lambda's PyTorch training table, one llama-bench table, MLPerf); "" where none is named
    suite: str = ""
    # bytes one unit reads at the least (a decode token's layer weights), where stated: the
    # bandwidth ceiling (`ceiling`)
    bytes_per_unit: float | None = None
    # the workload this is at one precision (its slug without the precision): the same step at
    # fp16 and bf16 (`_similar`)
    step: str = ""

    @property
    def rate_key(self) -> str:
        return self.matmul or self.precision

    @property
    def efficiency_kind(self) -> str:
        """The kind the efficiency terms key on: the phase, within its suite where it has one."""
        return efficiency_kind(self.kind, self.suite)


SUITE_SEPARATOR = "@"


def efficiency_kind(kind: str, suite: str) -> str:
    return f"{kind}{SUITE_SEPARATOR}{suite}" if suite else kind


def base_kind(kind: str) -> str:
    """The phase of an efficiency kind (its suite dropped)."""
    return kind.partition(SUITE_SEPARATOR)[0]


@dataclass(frozen=True)
class Observation:
    """Median of the accepted single-GPU results of one (GPU, workload), units/s.

    `per_gpu_of` > 1: no single-GPU result exists, and the median is the per-GPU share of the
    smallest multi-GPU system measured (its median / its GPU count). It teaches the model that
    GPU's (and its architecture's and stack's) efficiency, understated by that system's scaling
    loss (a few percent for the serving and training systems in the corpus, alike for the GPUs
    measured that way), but it is never answered as a measured single-GPU value."""

    gpu: str
    workload: str
    median: float
    n: int
    mad: float
    per_gpu_of: int = 1
    # the frameworks of its results, where known (FittedModel.framework_noise)
    frameworks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prediction:
    gpu: str
    workload: str
    value: float
    low: float
    high: float
    basis: Basis
    model: str  # measured | nnls | shape-scaled | borrowed
    n: int  # results behind a measured value; measured GPUs behind an estimate
    band: float = NOMINAL_COVERAGE
    # False: no GPU of this GPU's stack has data of the workload's phase, so its stack term is
    # the assumed average and the band carries the spread between stacks (Efficiencies)
    stack_measured: bool = True


@dataclass(frozen=True)
class WorkloadFit:
    workload: str
    # per unit: TFLOP tensor, TFLOP vector, GB memory traffic, GB x s of per-step fixed cost
    # amortised over a batch that scales with memory size (see GpuSpec.rates)
    work: tuple[float, float, float, float]
    overhead_s: float
    method: str  # nnls | shape-scaled | borrowed
    n_gpus: int
    half_width: float  # band half-width in log space
    loo_log_errors: tuple[float, ...]

    def time(self, rates: np.ndarray) -> float:
        return float(np.dot(self.work, 1.0 / rates) + self.overhead_s)


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


# --------------------------------------------------------------------------- NNLS


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """min ||a x - b|| subject to x >= 0 (Lawson-Hanson active set)."""
    m, n = a.shape
    max_iter = max_iter or 3 * n + 30
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * max(m, n) * max(float(np.abs(a).sum(axis=0).max()), 1.0)
    w = a.T @ (b - a @ x)
    iterations = 0
    while (~passive).any() and float(w[~passive].max()) > tol and iterations < max_iter:
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            iterations += 1
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all() or iterations >= max_iter:
                break
            bad = passive & (z <= 0)
            alpha = float(np.min(x[bad] / (x[bad] - z[bad])))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
        x = np.where(passive, np.maximum(z, 0.0), 0.0)
        w = a.T @ (b - a @ x)
    return x


def _design(rates: np.ndarray) -> np.ndarray:
    """Rows [1/tensor, 1/vector, 1/memory, 1/capacity, 1] (the last column is the overhead)."""
    return np.hstack([1.0 / rates, np.ones((rates.shape[0], 1))])


def fit_work_log(design: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Non-negative x minimising the squared log errors of design @ x against times (IRLS)."""
    scale = np.linalg.norm(design, axis=0)
    scale[scale == 0] = 1.0
    d = design / scale
    p = times.copy()
    best, best_sse = np.zeros(d.shape[1]), math.inf
    for _ in range(IRLS_ROUNDS):
        x = nnls(d / p[:, None], times / p)
        pred = d @ x
        if not (pred > 0).all():
            break
        sse = float(np.sum(np.log(pred / times) ** 2))
        if sse < best_sse - 1e-15:
            best, best_sse = x, sse
        elif sse >= best_sse:
            break
        p = pred
    return best / scale


# --------------------------------------------------------------------------- pooling


def shrink_groups(
    values: Mapping[Item, float], weights: Mapping[Item, float], groups: Mapping[Item, K]
) -> dict[K, float]:
    """Shrunk group means of `values` (per item, with item counts `weights`).

    One-way random effects: within-group variance W pooled over groups (around precision-
    weighted group means), prior variance of group means tau^2 = max(0, var of group means -
    mean W / n_j) by moments; with one group, or fewer items than groups + 1, tau^2 = W (prior
    as wide as the noise). A group's mean is shrunk to 0 by tau^2 / (tau^2 + W / n_j).
    """
    return _variance_components(values, weights, groups)[0]


def _shrink(mean: float, n: int | float, tau2: float, within: float) -> float:
    """A group mean over `n` items shrunk to 0 by tau^2 / (tau^2 + W / n)."""
    noise = within / n
    return mean * (tau2 / (tau2 + noise)) if tau2 + noise > 0 else 0.0


def _weighted_mean(
    items: Sequence[Item], values: Mapping[Item, float], weights: Mapping[Item, float]
) -> float:
    return float(np.average([values[i] for i in items], weights=[weights[i] for i in items]))


def _variance_components(
    values: Mapping[Item, float], weights: Mapping[Item, float], groups: Mapping[Item, K]
) -> tuple[dict[K, float], float, float]:
    """shrink_groups' shrunk means, with its tau^2 and W."""
    members: dict[K, list[Item]] = {}
    for item, g in groups.items():
        if item in values:
            members.setdefault(g, []).append(item)
    if not members:
        return {}, 0.0, 0.0
    means = {g: _weighted_mean(items, values, weights) for g, items in members.items()}
    sizes = {g: len(items) for g, items in members.items()}
    n_items = sum(sizes.values())
    dev = [values[i] - means[g] for g, items in members.items() for i in items]
    all_values = np.array([values[i] for items in members.values() for i in items])
    if n_items > len(members):
        within = float(np.sum(np.square(dev)) / (n_items - len(members)))
    else:
        within = float(np.var(all_values)) if len(all_values) > 1 else 0.0
    if len(members) >= 2 and n_items > len(members):
        m = np.array(list(means.values()))
        tau2 = max(
            0.0, float(np.var(m, ddof=1)) - float(np.mean([within / sizes[g] for g in members]))
        )
    else:
        tau2 = within
    return {g: _shrink(means[g], sizes[g], tau2, within) for g in members}, tau2, within


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


def _anova_components(cells: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(tau^2, within) of one-way random effects over the cells with two or more items; (0, 0)
    with fewer than two such cells (no term)."""
    usable = [np.asarray(c, dtype=float) for c in cells if len(c) >= 2]
    k = len(usable)
    if k < 2:
        return 0.0, 0.0
    sizes = np.array([len(c) for c in usable], dtype=float)
    n = float(sizes.sum())
    means = np.array([c.mean() for c in usable])
    grand = float(np.sum(sizes * means) / n)
    msw = float(sum(np.sum(np.square(c - c.mean())) for c in usable) / (n - k))
    msb = float(np.sum(sizes * np.square(means - grand)) / (k - 1))
    n0 = (n - float(np.sum(sizes**2)) / n) / (k - 1)
    return max(0.0, (msb - msw) / n0), msw


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


# --------------------------------------------------------------------------- the model


@dataclass
class FittedModel:
    gpus: Mapping[str, GpuSpec]
    workloads: Mapping[str, WorkloadSpec]
    observations: Mapping[tuple[str, str], Observation]
    fits: dict[str, WorkloadFit]
    efficiency: Efficiencies
    noise: dict[str, float]  # per workload: relative sigma of results (pooled)
    coverage: float = NOMINAL_COVERAGE
    # memory-bound or not -> log(predicted / measured) of measured workloads of that kind
    # predicted as if nothing were measured on them (borrow_errors): the band of a workload
    # that borrows its work per FLOP
    borrowing: Mapping[bool, tuple[float, ...]] = field(default_factory=dict)
    # workload -> the largest share of its physics ceiling any measured GPU reached on it
    # (measured_envelope): no estimate claims more of its own
    envelope: Mapping[str, float] = field(default_factory=dict)
    # workload -> (the framework most of its GPUs were measured with, the relative sigma of
    # GPUs measured with several): what a value measured with others only leaves open
    # (framework_noise)
    framework_noise: Mapping[str, tuple[str, float]] = field(default_factory=dict)

    def predict(self, gpu: str, workload: str) -> Prediction | None:
        """Measured median where measured, else the model; None without a basis."""
        spec, wl = self.gpus.get(gpu), self.workloads.get(workload)
        if spec is None or wl is None:
            return None
        z = _z(self.coverage)
        obs = self.observations.get((gpu, workload))
        if obs is not None and obs.per_gpu_of == 1:
            rel = _relative_sigma(obs)
            half = (
                self.single_result_half_width(workload)
                if rel is None
                else min(max(z * rel, 1e-6), MAX_LOG_HALF_WIDTH)
            )
            other = self.framework_noise.get(workload)
            if other is not None and obs.frameworks and other[0] not in obs.frameworks:
                half = max(half, min(z * other[1], MAX_LOG_HALF_WIDTH))
            return Prediction(
                gpu,
                workload,
                obs.median,
                obs.median * math.exp(-half),
                obs.median * math.exp(half),
                "measured",
                "measured",
                obs.n,
                self.coverage,
            )
        fit = self.fits.get(workload)
        if fit is None:
            return None
        value = _throughput(fit, spec, wl, self.efficiency)
        if not (math.isfinite(value) and value > 0):
            return None
        ceiling = physics_ceiling(spec, wl)
        half = max(fit.half_width, z * self.noise.get(workload, DEFAULT_RELATIVE_NOISE))
        kind = wl.efficiency_kind
        stack_measured = self.efficiency.stack_measured(spec.stack, kind)
        if not stack_measured:
            half = math.hypot(half, self.efficiency.unmeasured_stack_half_width(kind, z))
        half = min(half, MAX_LOG_HALF_WIDTH) if math.isfinite(half) else MAX_LOG_HALF_WIDTH
        half = max(half, 1e-6)
        low, high = value * math.exp(-half), value * math.exp(half)
        if not (math.isfinite(low) and math.isfinite(high)):
            return None
        reached = self.envelope.get(workload, math.inf) * binding_ceiling(spec, wl)
        if value > reached:  # no more of its ceiling than any measured GPU reached
            value, low, high = reached, reached * math.exp(-half), reached * math.exp(half)
        if value > ceiling:  # the band keeps its width, below the ceiling: never zero-width
            value, low, high = ceiling, ceiling * math.exp(-2 * half), ceiling
        high = min(high, ceiling)
        return Prediction(
            gpu,
            workload,
            value,
            low,
            high,
            "estimated",
            fit.method,
            fit.n_gpus,
            self.coverage,
            stack_measured,
        )

    def single_result_half_width(self, workload: str) -> float:
        """Log half-width of the band of a result measured once (no spread of its own): the
        workload's pooled run-to-run noise at the nominal coverage, never zero."""
        rel = self.noise.get(workload, DEFAULT_RELATIVE_NOISE)
        return min(max(_z(self.coverage) * rel, 1e-6), MAX_LOG_HALF_WIDTH)

    def with_workload(self, wl: WorkloadSpec) -> FittedModel:
        """This model, also covering `wl` (a workload it was not fitted with, nothing measured
        on it): borrowed from the nearest fitted workloads of its kind, as in `fit`."""
        if wl.slug in self.workloads:
            return self
        wls = {**self.workloads, wl.slug: wl}
        fits = dict(self.fits)
        twin = _twin(fits, wls, wl)
        split = _per_flop(fits, wls, wl)
        if twin is not None:
            fits[wl.slug] = _borrowed(twin, wl.slug, twin.half_width)
        elif split is not None:
            loo = _per_flop_errors(fits, wls, wl, self.borrowing)
            q = conformal_quantile(loo, self.coverage) if loo else math.nan
            if not math.isfinite(q):
                q = _z(self.coverage) * DEFAULT_RELATIVE_NOISE * 3
            fits[wl.slug] = WorkloadFit(wl.slug, *split, "borrowed", 0, q, loo)
        envelope = dict(self.envelope)
        if wl.slug in fits and (share := borrowed_envelope(self.envelope, fits, wls, wl)):
            envelope[wl.slug] = share
        noise = dict(self.noise)
        noise.setdefault(
            wl.slug, float(np.median(list(noise.values()))) if noise else DEFAULT_RELATIVE_NOISE
        )
        return FittedModel(
            self.gpus,
            wls,
            self.observations,
            fits,
            self.efficiency,
            noise,
            self.coverage,
            self.borrowing,
            envelope,
            self.framework_noise,
        )

    def predict_all(self) -> dict[tuple[str, str], Prediction]:
        out = {}
        for w in self.workloads:
            for g in self.gpus:
                p = self.predict(g, w)
                if p is not None:
                    out[(g, w)] = p
        return out


def _throughput(
    fit: WorkloadFit, spec: GpuSpec, wl: WorkloadSpec, eff: Efficiencies, own: bool = True
) -> float:
    t = fit.time(spec.rates(wl.rate_key))
    multiplier = eff.log_multiplier(spec, wl.efficiency_kind, own, wl.slug)
    return math.exp(multiplier) / t if t > 0 else math.nan


def compute_ceiling(spec: GpuSpec, wl: WorkloadSpec) -> float:
    """Units/s the GPU could do if every FLOP of a unit ran at its fastest unit's spec rate
    (calibrated where measured): the physics gate's ceiling for results (plausibility.py),
    which no estimate may pass either; inf where the workload states no FLOPs per unit."""
    if not wl.flops_per_unit or wl.flops_per_unit <= 0:
        return math.inf
    tensor, vector = spec.rates(wl.rate_key)[:2]
    return float(max(tensor, vector)) * 1e12 / wl.flops_per_unit


def bandwidth_ceiling(spec: GpuSpec, wl: WorkloadSpec) -> float:
    """Units/s the GPU could do if it read the least bytes a unit needs at its datasheet
    bandwidth; inf where the workload states none. A fit of decode workloads puts a card with
    little bandwidth where its siblings' efficiency says, which passed it: the DGX Spark's band
    on Llama 3 70B Q4_K_M tg512 reached 8.4 tokens/s on 273 GB/s, where 41 GB of layer weights
    per token allow 6.6."""
    return plausibility.bandwidth_ceiling(spec.bandwidth_gbs, wl.bytes_per_unit)


def borrowed_envelope(
    envelope: Mapping[str, float],
    fits: Mapping[str, WorkloadFit],
    wls: Mapping[str, WorkloadSpec],
    wl: WorkloadSpec,
) -> float | None:
    """The envelope of a workload nothing is measured on, from where it borrows its work: its
    twin's (the same step at another precision, _twin), else the largest of its nearest fitted
    workloads' (_similar, the same memory-bound kind, so the same binding ceiling). Without
    it llm-inference, borrowed, put a DGX Spark at 94% of its bandwidth on Llama 2 7B, where
    no card measured on a decode workload passes 81%; None where none of them has one."""
    twin = _twin(fits, wls, wl)
    if twin is not None:
        return envelope.get(twin.workload)
    free = [wls[k] for k, f in fits.items() if f.method == "nnls"]
    shares = [envelope[s.slug] for s in _similar(wl, free) if s.slug in envelope]
    return max(shares) if shares else None


def measured_envelope(
    specs: Mapping[str, GpuSpec],
    wls: Mapping[str, WorkloadSpec],
    observations: Iterable[Observation],
) -> dict[str, float]:
    """Workload -> the largest share of its binding ceiling (binding_ceiling) that any measured
    GPU reached on it, per-GPU shares of N-GPU systems included (they understate their GPU's
    own), with at least MIN_ENVELOPE_GPUS measured; none where no ceiling is stated. An
    estimate claims no more of its own: the GPT-2 training fit put cards at their full compute
    peak (an H20 at 172,695 tokens/s, all of its 148 dense BF16 TFLOPS; a GTX 1080 Ti at
    13,232), where no measured card passes 79%."""
    shares: dict[str, list[float]] = {}
    for o in observations:
        spec, wl = specs.get(o.gpu), wls.get(o.workload)
        if spec is None or wl is None:
            continue
        ceiling = binding_ceiling(spec, wl)
        if math.isfinite(ceiling) and ceiling > 0 and math.isfinite(o.median):
            shares.setdefault(o.workload, []).append(o.median / ceiling)
    return {w: max(s) for w, s in shares.items() if len(s) >= MIN_ENVELOPE_GPUS}


def binding_ceiling(spec: GpuSpec, wl: WorkloadSpec) -> float:
    """The ceiling of the resource that limits the workload: bandwidth for a memory-bound one
    (inf where it states no bytes per unit), else compute. Measured shares of the other one say
    nothing about how much of it a card can use: a decode workload's measured cards use a few
    percent of their compute, and a card with little compute would use all of it."""
    return bandwidth_ceiling(spec, wl) if wl.memory_bound else compute_ceiling(spec, wl)


def physics_ceiling(spec: GpuSpec, wl: WorkloadSpec) -> float:
    """What no estimate passes: the compute ceiling, and the bandwidth one where stated."""
    return min(compute_ceiling(spec, wl), bandwidth_ceiling(spec, wl))


def _relative_sigma(obs: Observation) -> float | None:
    if obs.n >= 2 and math.isfinite(obs.mad) and obs.mad > 0 and obs.median > 0:
        return min(MAD_TO_SIGMA * obs.mad / obs.median, MAX_LOG_HALF_WIDTH)
    return None


def conformal_quantile(errors: Sequence[float] | np.ndarray, coverage: float) -> float:
    """Split-conformal quantile: the ceil((n + 1) coverage)-th smallest |error| (the largest
    when that exceeds n)."""
    e = np.sort(np.abs(np.asarray(errors, dtype=float)))
    if len(e) == 0:
        return math.nan
    k = math.ceil((len(e) + 1) * coverage)
    return float(e[min(k, len(e)) - 1])


def _width(precision: str) -> float | str:
    """Bytes per parameter (bf16 and fp16 alike); the name itself where the table lacks it."""
    return BYTES_PER_PARAM.get(precision, precision)


def _similar(wl: WorkloadSpec, candidates: Iterable[WorkloadSpec]) -> list[WorkloadSpec]:
    """The nearest workloads of the same memory-bound kind: same phase first (training with
    training, prompt processing with prompt processing: a llama.cpp prefill is not a training
    step), then the same unit (tokens with tokens, images with images), then the same precision
    width (bf16 with fp16), then the nearest FLOPs per unit in log space."""

    def key(c: WorkloadSpec) -> tuple[bool, bool, bool, bool, float]:
        if wl.flops_per_unit and c.flops_per_unit:
            d = abs(math.log(wl.flops_per_unit / c.flops_per_unit))
        else:
            d = math.inf
        return (
            bool(wl.suite) and c.suite != wl.suite,
            c.kind != wl.kind,
            c.unit != wl.unit,
            _width(c.precision) != _width(wl.precision),
            d,
        )

    same_kind = [c for c in candidates if c.memory_bound == wl.memory_bound and c.slug != wl.slug]
    return sorted(same_kind, key=key)[:SIMILAR_WORKLOADS]


def _twin(
    fits: Mapping[str, WorkloadFit], workloads: Mapping[str, WorkloadSpec], wl: WorkloadSpec
) -> WorkloadFit | None:
    """The fit of the same workload at a 16-bit precision, for the other 16-bit one or fp8,
    where one was fitted to data: the same step, whose work terms differ only in the rates they
    run at (NARROW_STEP_PRECISIONS). A workload nothing is measured on borrows it whole (llm-train
    at fp16 had averaged its bf16 fit per FLOP with two other suites' and put the H100 SXM,
    measured at 461,678 tokens/s at bf16, at 185,047; at fp8, borrowed per FLOP, a B200 came
    out at 1,716,104, 2.17 times its bf16 measurement where its fp8 rate is twice its bf16
    one)."""
    if not wl.step or wl.precision not in SAME_STEP_PRECISIONS | NARROW_STEP_PRECISIONS:
        return None
    for slug, f in fits.items():
        c = workloads[slug]
        if (
            c.step == wl.step
            and c.slug != wl.slug
            and c.precision in SAME_STEP_PRECISIONS
            and f.method != "borrowed"
        ):
            return f
    return None


def _borrowed(twin: WorkloadFit, workload: str, half_width: float) -> WorkloadFit:
    """`twin`'s work terms and leave-one-out errors as `workload`'s borrowed fit."""
    return replace(twin, workload=workload, method="borrowed", n_gpus=0, half_width=half_width)


def _shape(
    fits: Mapping[str, WorkloadFit],
    workloads: Mapping[str, WorkloadSpec],
    wl: WorkloadSpec,
    per_flop: bool,
) -> np.ndarray | None:
    """Mean work vector (a term per resource, then the overhead) of similar fitted workloads, each
    normalised to sum 1 (or per FLOP when `per_flop`)."""
    cands = [workloads[s] for s in fits if fits[s].method == "nnls"]
    if per_flop:
        cands = [c for c in cands if c.flops_per_unit]
    sims = _similar(wl, cands)
    if not sims:
        return None
    vecs = []
    for c in sims:
        f = fits[c.slug]
        v = np.array([*f.work, f.overhead_s])
        norm = c.flops_per_unit if per_flop else float(v.sum())
        if norm:
            vecs.append(v / norm)
    return np.mean(vecs, axis=0) if vecs else None


def prior_shape(wl: WorkloadSpec) -> np.ndarray:
    """Stated prior work split (tensor, vector, memory, overhead): all tensor math, or all memory
    traffic for a memory-bound workload. Used only with too few data and nothing to borrow."""
    shape = np.zeros(len(RESOURCES) + 1)
    shape[2 if wl.memory_bound else 0] = 1.0
    return shape


def _split(x: np.ndarray) -> tuple[tuple[float, float, float, float], float]:
    """A fitted vector (one term per resource, then the overhead) as (work, overhead)."""
    return (float(x[0]), float(x[1]), float(x[2]), float(x[3])), float(x[len(RESOURCES)])


def _fit_one(
    design: np.ndarray, times: np.ndarray, shape: np.ndarray | None, method: str
) -> np.ndarray | None:
    if method == "nnls":
        return fit_work_log(design, times)
    if shape is None:
        return None
    base = design @ shape
    if not (base > 0).all():
        return None
    return shape * math.exp(float(np.mean(np.log(times / base))))


def fit(
    gpus: Sequence[GpuSpec],
    workloads: Sequence[WorkloadSpec],
    observations: Iterable[Observation],
    coverage: float = NOMINAL_COVERAGE,
) -> FittedModel:
    """Fit work per workload, efficiencies and conformal bands from measured medians."""
    specs = {g.slug: g for g in gpus}
    wls = {w.slug: w for w in workloads}
    obs = {
        (o.gpu, o.workload): o
        for o in observations
        if o.gpu in specs and o.workload in wls and _usable(o)
    }
    by_w: dict[str, list[Observation]] = {}
    for o in obs.values():
        by_w.setdefault(o.workload, []).append(o)
    noise = _pooled_noise(by_w, wls)

    eff = Efficiencies({}, {}, {})
    fits: dict[str, WorkloadFit] = {}
    for _round in range(BACKFIT_ROUNDS):
        fits = _fit_workloads(specs, wls, by_w, eff, fits, with_loo=False)
        residuals = {}
        for w, rows in by_w.items():
            f = fits.get(w)
            if f is None or f.method == "borrowed":
                continue
            for o in rows:
                t = f.time(specs[o.gpu].rates(wls[w].rate_key))
                if math.isfinite(t) and t > 0:
                    residuals[(o.gpu, w)] = math.log(o.median * t)
        eff = pool_efficiencies(residuals, specs, {w: wl.efficiency_kind for w, wl in wls.items()})
    fits = _fit_workloads(specs, wls, by_w, eff, fits, with_loo=True)
    borrowing = borrow_errors(specs, wls, by_w, eff, fits)
    for w, f in list(fits.items()):
        if f.method == "borrowed" and _twin(fits, wls, wls[w]) is None:
            fits[w] = replace(f, loo_log_errors=_per_flop_errors(fits, wls, wls[w], borrowing))
    z = _z(coverage)
    # Split-conformal half-widths from the leave-one-out errors, pooled where few.
    for w, f in list(fits.items()):
        errors: Sequence[float] = f.loo_log_errors
        if len(errors) < MIN_CONFORMAL:
            errors = [  # borrowed fits hold others' errors, or borrowing's: not these
                e
                for other, g in fits.items()
                if wls[other].memory_bound == wls[w].memory_bound and g.method != "borrowed"
                for e in g.loo_log_errors
            ]
        q = conformal_quantile(errors, coverage) if errors else math.nan
        if not math.isfinite(q):
            q = z * noise.get(w, DEFAULT_RELATIVE_NOISE) * 3  # no errors anywhere: wide
        fits[w] = WorkloadFit(
            f.workload, f.work, f.overhead_s, f.method, f.n_gpus, q, f.loo_log_errors
        )
    measured = measured_envelope(specs, wls, obs.values())
    envelope = dict(measured)
    for w, f in fits.items():
        if f.method == "borrowed" and (share := borrowed_envelope(measured, fits, wls, wls[w])):
            envelope[w] = share
    return FittedModel(
        specs, wls, obs, fits, eff, noise, coverage, borrowing, envelope, framework_noise(by_w)
    )


def framework_noise(by_w: Mapping[str, list[Observation]]) -> dict[str, tuple[str, float]]:
    """Per workload whose results come from several frameworks: the one most of its GPUs were
    measured with, and the median relative sigma of the GPUs measured with more than one.

    A value measured only with another framework is not what the workload's other GPUs' values
    mean: on GPT-2 training an RX 7900 XTX was measured once, with an llm.c fork, and answered
    $800 at 70,208 tokens/s +-2% (the run-to-run noise of the PyTorch pairs), where the RTX
    4090 and the A100 PCIe 40GB, measured both ways, are 36% and 26% apart. Such a value's band
    is at least this spread at the nominal coverage."""
    out = {}
    for w, rows in by_w.items():
        known = [o for o in rows if o.frameworks and o.per_gpu_of == 1]
        counts: dict[str, int] = {}
        for o in known:
            for f in o.frameworks:
                counts[f] = counts.get(f, 0) + 1
        mixed = [r for o in known if len(o.frameworks) > 1 and (r := _relative_sigma(o))]
        if len(counts) > 1 and mixed:
            main = min(counts, key=lambda f: (-counts[f], f))
            out[w] = (main, float(np.median(mixed)))
    return out


def _pooled_noise(
    by_w: Mapping[str, list[Observation]], wls: Mapping[str, WorkloadSpec]
) -> dict[str, float]:
    """Median relative sigma of the results of each workload; the median over all workloads
    where a workload has no group with two results; DEFAULT_RELATIVE_NOISE without any."""
    per: dict[str, float] = {}
    everything: list[float] = []
    for w, rows in by_w.items():
        rel = [r for r in (_relative_sigma(o) for o in rows) if r is not None]
        everything += rel
        if rel:
            per[w] = float(np.median(rel))
    fallback = float(np.median(everything)) if everything else DEFAULT_RELATIVE_NOISE
    return {w: per.get(w, fallback) for w in wls}


def _fit_workloads(
    specs: Mapping[str, GpuSpec],
    wls: Mapping[str, WorkloadSpec],
    by_w: Mapping[str, list[Observation]],
    eff: Efficiencies,
    previous: Mapping[str, WorkloadFit],
    with_loo: bool,
) -> dict[str, WorkloadFit]:
    fits: dict[str, WorkloadFit] = {}
    # Free fits first, so that shapes can be borrowed from them.
    order = sorted(wls, key=lambda w: -len(by_w.get(w, [])))
    for w in order:
        rows = by_w.get(w, [])
        if not rows:
            continue
        wl = wls[w]
        rates = np.array([specs[o.gpu].rates(wl.rate_key) for o in rows])
        design = _design(rates)
        # Measured time, adjusted by each GPU's efficiency: model time = measured x e_g.
        kind = wl.efficiency_kind
        mult = np.array(
            [math.exp(eff.log_multiplier(specs[o.gpu], kind, workload=w)) for o in rows]
        )
        times = mult / np.array([o.median for o in rows])
        shape_source = {k: v for k, v in {**previous, **fits}.items() if k != w}
        shape = _shape(shape_source, wls, wl, per_flop=False)
        if shape is None and len(rows) < MIN_NNLS_GPUS:
            shape = prior_shape(wl)
        methods = ["shape-scaled"] if shape is not None else []
        if len(rows) >= MIN_NNLS_GPUS or shape is None:
            methods.append("nnls")
        best: tuple[float, str, np.ndarray, tuple[float, ...]] | None = None
        for method in methods:
            try:
                with np.errstate(all="ignore"):
                    x = _fit_one(design, times, shape, method)
            except (np.linalg.LinAlgError, ValueError, FloatingPointError):
                x = None
            if x is None or not np.isfinite(x).all():
                continue
            loo: tuple[float, ...] = ()
            score = 0.0
            if with_loo or len(methods) > 1:
                loo = _loo_errors(rows, specs, wl, eff, shape, method)
                score = float(np.mean(np.square(loo))) if loo else math.inf
            if best is None or score < best[0]:
                best = (score, method, x, loo)
        if best is None:
            continue
        _, method, x, loo = best
        fits[w] = WorkloadFit(
            w,
            *_split(x),
            method,
            len(rows),
            math.nan,
            loo,
        )
    # Workloads nothing is measured on: pooled work per FLOP of the nearest measured ones.
    for w, wl in wls.items():
        if w in fits:
            continue
        twin = _twin(fits, wls, wl)
        if twin is not None:
            fits[w] = _borrowed(twin, w, math.nan)
            continue
        split = _per_flop(fits, wls, wl)
        if split is not None:
            loo = _per_flop_errors(fits, wls, wl, {})
            fits[w] = WorkloadFit(w, *split, "borrowed", 0, math.nan, loo)
    return fits


def _per_flop(
    fits: Mapping[str, WorkloadFit], wls: Mapping[str, WorkloadSpec], wl: WorkloadSpec
) -> tuple[tuple[float, float, float, float], float] | None:
    """`wl`'s (work, overhead) borrowed per FLOP from its nearest fitted workloads (_shape);
    None without FLOPs per unit or anything to borrow from."""
    if not wl.flops_per_unit or wl.flops_per_unit <= 0:
        return None
    shape = _shape(fits, wls, wl, per_flop=True)
    return None if shape is None else _split(shape * wl.flops_per_unit)


def _per_flop_errors(
    fits: Mapping[str, WorkloadFit],
    wls: Mapping[str, WorkloadSpec],
    wl: WorkloadSpec,
    borrowing: Mapping[bool, tuple[float, ...]],
) -> tuple[float, ...]:
    """The errors a per-FLOP borrowed band is the conformal quantile of: how far borrowing
    misses for its memory-bound kind (borrow_errors), else (none measured) the leave-one-out
    errors of the workloads it borrows from."""
    free = [wls[k] for k, f in fits.items() if f.method == "nnls"]
    return borrowing.get(wl.memory_bound) or tuple(
        e for s in _similar(wl, free) for e in fits[s.slug].loo_log_errors
    )


def borrow_errors(
    specs: Mapping[str, GpuSpec],
    wls: Mapping[str, WorkloadSpec],
    by_w: Mapping[str, list[Observation]],
    eff: Efficiencies,
    fits: Mapping[str, WorkloadFit],
) -> dict[bool, tuple[float, ...]]:
    """Memory-bound or not -> log(predicted / measured) for every measured GPU of every
    workload of that kind fitted to its own data with FLOPs per unit stated, predicted as a
    workload nothing is measured on would be: the work per FLOP of its nearest other fitted
    workloads (not its own step at another precision; compared as a workload of no suite, as
    a new one is) x its FLOPs, with each GPU's efficiency terms at the phase and no workload
    term. The band of a borrowed workload
    is the conformal quantile of these errors: the leave-one-out errors of the workloads it
    borrows from say how well their own fits place one GPU, not how far another workload's
    split carries, and gave ViT-B/16 training, nothing measured on it, a band of x1.10 either
    way."""
    free = {k: f for k, f in fits.items() if f.method == "nnls"}
    out: dict[bool, list[float]] = {}
    for w in free:
        wl = wls[w]
        others = {k: g for k, g in free.items() if not (wl.step and wls[k].step == wl.step)}
        as_new = replace(wl, suite="", step="")
        split = _per_flop(others, wls, as_new)
        if split is None:
            continue
        borrowed = WorkloadFit(w, *split, "borrowed", 0, math.nan, ())
        for o in by_w.get(w, []):
            spec = specs[o.gpu]
            t = borrowed.time(spec.rates(wl.rate_key))
            multiplier = eff.log_multiplier(spec, as_new.efficiency_kind)
            if t > 0 and math.isfinite(t):
                error = math.log(math.exp(multiplier) / t / o.median)
                out.setdefault(wl.memory_bound, []).append(error)
    return {kind: tuple(errors) for kind, errors in out.items()}


def _loo_errors(
    rows: Sequence[Observation],
    specs: Mapping[str, GpuSpec],
    wl: WorkloadSpec,
    eff: Efficiencies,
    shape: np.ndarray | None,
    method: str,
) -> tuple[float, ...]:
    """log(predicted / measured) for each GPU, predicted from a fit on the others, as for a
    GPU without data of its own (stack and architecture efficiency pooled from the other GPUs:
    Efficiencies.held_out_log_multiplier)."""
    if len(rows) < 2:
        return ()
    rates = np.array([specs[o.gpu].rates(wl.rate_key) for o in rows])
    design = _design(rates)
    kind, w = wl.efficiency_kind, wl.slug
    mult = np.array([math.exp(eff.log_multiplier(specs[o.gpu], kind, workload=w)) for o in rows])
    cold = np.array([math.exp(eff.held_out_log_multiplier(specs[o.gpu], kind, w)) for o in rows])
    measured = np.array([o.median for o in rows])
    times = mult / measured
    out = []
    for i in range(len(rows)):
        keep = np.arange(len(rows)) != i
        try:
            with np.errstate(all="ignore"):
                x = _fit_one(design[keep], times[keep], shape, method)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            x = None
        if x is None or not np.isfinite(x).all():
            continue
        t = float(design[i] @ x)
        if t <= 0:
            out.append(math.inf)
            continue
        out.append(math.log(cold[i] / t / measured[i]))
    return tuple(out)
