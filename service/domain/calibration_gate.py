"""Accept or reject a calibration run, and turn an accepted one into efficiencies."""

from collections.abc import Mapping
from dataclasses import dataclass

MAX_OVER_PEAK = 1.10
MAX_NOISE = 0.25
# Below this share of the spec peak a run measured a broken setup (a throttled or shared GPU,
# a slow fallback kernel), not the card, and would cut the card's estimates for every answer:
# half the lowest matmul efficiency published for any accelerator (AMD MI300X bf16 51.4%, stas00
# ml-engineering MAMF table, shared/data/stas00-mamf), rounded down.
MIN_OF_PEAK = 0.25


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    reason: str | None


def judge(
    best_tflops: Mapping[str, float],
    spec_peaks: Mapping[str, float | None],
    noise: float,
) -> Verdict:
    """Reject a run faster than 1.10 x the spec peak of any dtype, slower than 0.25 x it, or
    noisier than 25% IQR.

    `spec_peaks` is empty for runs not mapped to a catalog GPU (CPU runs, unknown devices):
    those are only checked for noise.
    """
    for dtype, achieved in sorted(best_tflops.items()):
        peak = spec_peaks.get(dtype)
        if peak and achieved > MAX_OVER_PEAK * peak:
            return Verdict(False, f"exceeds_peak:{dtype} {achieved:.1f} > 1.10 x {peak:.1f}")
        if peak and achieved < MIN_OF_PEAK * peak:
            return Verdict(False, f"below_floor:{dtype} {achieved:.1f} < 0.25 x {peak:.1f}")
    if noise > MAX_NOISE:
        return Verdict(False, f"noisy: IQR/median {noise:.2f} > {MAX_NOISE}")
    return Verdict(True, None)


def efficiencies(
    best_tflops: Mapping[str, float], spec_peaks: Mapping[str, float | None]
) -> dict[str, float]:
    """achieved / spec peak per dtype, capped at 1 (the estimator never inflates a spec)."""
    return {
        dtype: min(achieved / peak, 1.0)
        for dtype, achieved in best_tflops.items()
        if (peak := spec_peaks.get(dtype))
    }
