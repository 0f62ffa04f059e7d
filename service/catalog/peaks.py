"""Peak rates per precision, read from a catalog GPU's spec columns (one place for the
mapping from a precision to the columns that hold it)."""

from collections.abc import Iterable

from service.domain.plausibility import PeakRates
from service.models import Gpu

# PeakRates field -> the gpu table's column that holds it
RATE_COLUMNS: dict[str, str] = {
    "fp32": "fp32_tflops",
    "fp16_vector": "fp16_tflops",
    "tf32_tensor": "tf32_tensor_tflops",
    "fp16_tensor": "fp16_tensor_tflops",
    "bf16_tensor": "bf16_tensor_tflops",
    "fp8_tensor": "fp8_tensor_tflops",
    "int8": "int8_tops",
}

CALIBRATED_RATE = {  # precision -> (calibration column, gpu spec column)
    "fp32": ("fp32_tflops", "fp32_tflops"),
    "tf32": ("tf32_tflops", "tf32_tensor_tflops"),
    "fp16": ("fp16_tflops", "fp16_tensor_tflops"),
    "bf16": ("bf16_tflops", "bf16_tensor_tflops"),
    "fp8": ("fp8_tflops", "fp8_tensor_tflops"),
}


def peak_rates(gpu: Gpu) -> PeakRates:
    """Every spec rate of `gpu`, for the physics gate and the estimator."""
    return rates_from_columns(getattr(gpu, column) for column in RATE_COLUMNS.values())


def rates_from_columns(values: Iterable[float | None]) -> PeakRates:
    """PeakRates from the RATE_COLUMNS values of one gpu row, in that order (a query that
    selects those columns needs no ORM object)."""
    return PeakRates(**dict(zip(RATE_COLUMNS, values, strict=True)))  # type: ignore[arg-type]


def spec_peaks(gpu: Gpu | None) -> dict[str, float | None]:
    """Spec peak per calibrated dtype (the rates a calibration run is judged against)."""
    if gpu is None:
        return {}
    return {dtype: getattr(gpu, spec_col) for dtype, (_c, spec_col) in CALIBRATED_RATE.items()}
