"""Peak rates per precision, read from a catalog GPU's spec columns (one place for the
mapping from a precision to the columns that hold it)."""

from service.domain.plausibility import PeakRates
from service.models import Gpu

CALIBRATED_RATE = {  # precision -> (calibration column, gpu spec column)
    "fp32": ("fp32_tflops", "fp32_tflops"),
    "tf32": ("tf32_tflops", "tf32_tensor_tflops"),
    "fp16": ("fp16_tflops", "fp16_tensor_tflops"),
    "bf16": ("bf16_tflops", "bf16_tensor_tflops"),
    "fp8": ("fp8_tflops", "fp8_tensor_tflops"),
}


def peak_rates(gpu: Gpu) -> PeakRates:
    """Every spec rate of `gpu`, for the physics gate and the estimator."""
    return PeakRates(
        fp32=gpu.fp32_tflops,
        fp16_vector=gpu.fp16_tflops,
        tf32_tensor=gpu.tf32_tensor_tflops,
        fp16_tensor=gpu.fp16_tensor_tflops,
        bf16_tensor=gpu.bf16_tensor_tflops,
        fp8_tensor=gpu.fp8_tensor_tflops,
        int8=gpu.int8_tops,
    )


def spec_peaks(gpu: Gpu | None) -> dict[str, float | None]:
    """Spec peak per calibrated dtype (the rates a calibration run is judged against)."""
    if gpu is None:
        return {}
    return {dtype: getattr(gpu, spec_col) for dtype, (_c, spec_col) in CALIBRATED_RATE.items()}
