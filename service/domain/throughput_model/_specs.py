"""What the model is fitted on and answers: GPU and workload specs, measured medians,
predictions and fitted work per workload.

Design decisions (figures on the shipped corpus where measured):

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from service.domain.throughput_model._constants import (
    NOMINAL_COVERAGE,
    RATE_MAX,
    RESOURCES,
    VALUE_MAX,
    VALUE_MIN,
    Basis,
    _clamp_rate,
)


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

    def rates_for(self, wl: WorkloadSpec) -> np.ndarray:
        """`rates` at the workload's matrix precision, with capacity switched off where the
        harness fixes the batch (WorkloadSpec.batch_fixed): there a larger memory runs the
        same batch and amortises nothing more."""
        out = self.rates(wl.rate_key)
        if wl.batch_fixed:
            out[3] = RATE_MAX
        return out

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
    def batch_fixed(self) -> bool:
        """Whether the harness, not the GPU's memory, sets the batch: an LLM phase (prefill,
        decode) is run at a stated batch (llama-bench: prompts in ubatches of 512 tokens,
        generation at batch 1), so memory size buys no larger batch and the capacity resource
        does not apply. Fitted freely, it had claimed 50-78% of Llama-3-70B Q4_K_M prompt
        processing time for a 24 GB card (memory sizes 48-192 GB standing in for whatever else
        set Apple and NVIDIA cards apart). Training tables and MLPerf serving size their batch
        by memory, and keep it."""
        return self.kind in ("prefill", "decode")

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


def _usable(o: Observation) -> bool:
    return math.isfinite(o.median) and VALUE_MIN <= o.median <= VALUE_MAX


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


def _split(x: np.ndarray) -> tuple[tuple[float, float, float, float], float]:
    """A fitted vector (one term per resource, then the overhead) as (work, overhead)."""
    return (float(x[0]), float(x[1]), float(x[2]), float(x[3])), float(x[len(RESOURCES)])
