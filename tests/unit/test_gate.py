"""Pure functions of the ingestion gate: peak per precision, implied TFLOPS, modified z-score."""

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from service.domain.outliers import MIN_GROUP_SIZE, modified_z_scores, outlier_flags, summarize
from service.domain.plausibility import PeakRates, exceeds_peak, implied_tflops, peak_tflops

ADA = PeakRates(
    fp32=82.6,
    fp16_vector=82.6,
    tf32_tensor=82.6,
    fp16_tensor=165.2,
    bf16_tensor=165.2,
    fp8_tensor=330.3,
    int8=660.6,
)
PASCAL = PeakRates(fp32=11.34, fp16_vector=0.18)


def test_peak_per_precision_uses_the_fastest_usable_unit():
    assert peak_tflops(ADA, "fp16") == 165.2
    assert peak_tflops(ADA, "fp8") == 330.3
    assert peak_tflops(ADA, "int8") == 660.6
    assert peak_tflops(ADA, "fp32") == 82.6
    # No tensor cores: even an fp16 run cannot beat the FP32 units.
    assert peak_tflops(PASCAL, "fp16") == 11.34
    assert peak_tflops(PASCAL, "bf16") == 11.34


def test_bf16_on_a_gpu_without_bf16_units_runs_at_the_fp32_rate():
    """A V100 or RTX 2080 Ti has fast fp16 units but none for bfloat16."""
    volta = PeakRates(fp32=15.7, fp16_vector=31.4, fp16_tensor=125.0)
    assert peak_tflops(volta, "bf16") == 15.7
    assert peak_tflops(volta, "fp16") == 125.0
    assert peak_tflops(ADA, "bf16") == 165.2


def test_implied_tflops_is_per_gpu():
    assert implied_tflops(1000, 2.45e10, 1) == pytest.approx(24.5)
    assert implied_tflops(1000, 2.45e10, 2) == pytest.approx(12.25)


def test_exceeds_peak_has_five_percent_tolerance_and_skips_unknown_flops():
    at_peak = 165.2e12 / 2.45e10
    assert not exceeds_peak(at_peak * 1.04, 2.45e10, 1, ADA, "fp16")
    assert exceeds_peak(at_peak * 1.06, 2.45e10, 1, ADA, "fp16")
    assert not exceeds_peak(1e12, None, 1, ADA, "fp16")


def test_modified_z_matches_the_textbook_formula():
    values = [10.0, 11.0, 12.0, 13.0, 50.0]
    # median 12, |dev| = 2,1,0,1,38 -> MAD 1
    assert modified_z_scores(values) == pytest.approx([-1.349, -0.6745, 0, 0.6745, 25.631])
    assert outlier_flags(values)[-1] == pytest.approx(25.631)
    assert outlier_flags(values)[:4] == [None] * 4


def test_mad_zero_falls_back_to_mean_absolute_deviation():
    values = [5.0] * 6 + [9.0]
    z = modified_z_scores(values)
    assert z[-1] == pytest.approx(4 / (1.253314 * (4 / 7)))
    assert outlier_flags([5.0] * 7) == [None] * 7


def test_groups_below_minimum_flag_nothing():
    assert outlier_flags([1.0, 1.0, 1.0, 1000.0]) == [None] * 4
    assert MIN_GROUP_SIZE == 5


values_st = st.lists(st.floats(min_value=1, max_value=1e6), min_size=5, max_size=60)


@given(values_st, st.floats(min_value=100, max_value=1000))
def test_a_far_outlier_is_always_flagged_and_never_moves_the_kept_median(values, factor):
    base = summarize(values)
    # Far beyond the group's whole range, whether or not MAD is 0.
    far = max(values) + factor * (max(values) - min(values) + base.median)
    flags = outlier_flags([*values, far])
    assert flags[-1] is not None and flags[-1] > 3.5
    kept = [v for v, z in zip([*values, far], flags, strict=True) if z is None]
    assert min(values) <= summarize(kept).median <= max(values)


@given(values_st)
@example([1.0, 1.0, 2.0, 2.0, 2.0, 2.00001])  # scores near 1e5: rounding is relative, not 1e-6
def test_scores_are_scale_invariant(values):
    scaled = [v * 3.0 for v in values]
    expected = modified_z_scores(values)
    assert modified_z_scores(scaled) == pytest.approx(expected, rel=1e-9, abs=1e-6)
