"""Physics gate: a result cannot beat the GPU's peak arithmetic rate for its precision.

A weight format (q4_k_m, nf4, awq...) is judged at the rate its matmuls run at,
vocabulary.COMPUTE_PRECISION (the same table the estimators use). fp4: the catalog has no FP4
column yet, so an fp4 run's ceiling is the fastest unit it certainly has (fp8 and below).
"""

from dataclasses import dataclass

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
    reach on this GPU."""
    units = _UNITS_FOR_PRECISION[COMPUTE_PRECISION.get(precision, precision)]
    values = [getattr(rates, unit) for unit in units]
    return max(v for v in values if v is not None)


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
