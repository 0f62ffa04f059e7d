"""The shared words of the domain, defined once: every layer (schemas, services, agent) imports
them from here, so a precision, a basis or a role means the same thing everywhere.

The MAD band lives here too: a measured median m with median absolute deviation d is shown as
m +- 1.4826 d (1.4826 x MAD estimates the standard deviation of normally distributed values).
"""

import math
from dataclasses import dataclass
from typing import Literal, get_args

Precision = Literal[
    "fp32",
    "tf32",
    "fp16",
    "bf16",
    "fp8",
    "int8",
    # LLM weight formats (service/catalog/quantizations.csv, by name or alias of <= 8 chars):
    "int4",
    "fp4",
    "nf4",
    "nvfp4",
    "mxfp4",
    "awq",
    "gptq",
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q4_k_m",
    "q4_k_s",
    "q4_0",
]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
# The arithmetic each precision's matmuls run at: the one table the physics gate
# (plausibility.peak_tflops) and the estimators read a compute rate through. For weight formats
# it is quantizations.csv's compute_precision (a test holds the two equal): GGUF formats run
# int8 matmuls (llama.cpp's MMQ kernels quantize the activations to 8 bit and use int8 tensor
# cores where the GPU has them, ggml-org/llama.cpp PR #7676 and #8062, June 2024; elsewhere the
# fastest unit at least that precise, as for every precision), W4A16 formats dequantize into
# fp16 matmuls, NF4 into bf16, NVFP4/MXFP4 run fp4.
COMPUTE_PRECISION: dict[str, str] = {
    "fp32": "fp32",
    "tf32": "tf32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "fp16",
    "fp4": "fp4",
    "nf4": "bf16",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "awq": "fp16",
    "gptq": "fp16",
    "q8_0": "int8",
    "q6_k": "int8",
    "q5_k_m": "int8",
    "q4_k_m": "int8",
    "q4_k_s": "int8",
    "q4_0": "int8",
}
# The number formats a workload's matmuls can be asked to run in: the precisions that are their
# own arithmetic. A weight format (GGUF, AWQ, NF4, ...: run at another precision above) changes
# a model's bytes as well as its arithmetic, so it belongs to a language-model ask
# (`model=...&quant=...`) or to a workload that fixes one (llama-bench's), which is asked at its
# own precision only: ResNet-50 training at q4_k_m is no workload at all.
ARITHMETIC_PRECISIONS: tuple[Precision, ...] = tuple(
    p for p in PRECISIONS if COMPUTE_PRECISION[p] == p
)


def precisions_for(own: str, fixed_format: bool) -> tuple[str, ...]:
    """The precisions a workload may be asked at: its own when it fixes a weight format,
    else the arithmetic ones."""
    return (own,) if fixed_format else ARITHMETIC_PRECISIONS


Basis = Literal["measured", "estimated"]  # a measured median, or a model's estimate
Mode = Literal["parallel", "independent"]  # one job over n GPUs, or n jobs at once
Role = Literal["submitter", "admin"]
ROLES: tuple[Role, ...] = get_args(Role)
Device = Literal["cuda", "cpu"]
Condition = Literal["new", "used", "msrp", "cloud"]  # price kinds: street new, used, launch, rent
ConditionChoice = Literal["new", "used", "any"]  # what a purchase is priced at (cloud is per hour)

MAD_TO_SIGMA = 1.4826
NOMINAL_BAND = 0.8  # the coverage every answer's band is labelled with


def two_sided_z(coverage: float) -> float:
    """Two-sided normal quantile for `coverage` (bisection on erf; no scipy): 1.28 at 0.8."""
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if math.erf(mid / math.sqrt(2)) < coverage:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class Measurement:
    """Median, count and median absolute deviation (unscaled) of a group of results."""

    median: float
    n: int
    mad: float

    def band(self, coverage: float = NOMINAL_BAND) -> tuple[float, float]:
        """(low, high) = median -+ z x 1.4826 x MAD, never below zero, z the two-sided normal
        quantile at `coverage` (1.28 at the answers' nominal 0.8). At -+1 sigma (68%) a
        measured multi-GPU median's band had been labelled `band: 0.8` beside estimates whose
        bands are 80% ones."""
        spread = two_sided_z(coverage) * MAD_TO_SIGMA * self.mad
        return max(self.median - spread, 0.0), self.median + spread
