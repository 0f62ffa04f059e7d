"""Scaling fitted from measurements: the pooled value by hand, what never feeds a profile,
monotone and interpolated rows, the box interconnect of bridged cards, and precedence."""

import math

import pytest

from service.domain.recommend import narrowed, widened
from service.domain.scaling import (
    ANY_COUNT,
    ANY_LINK,
    MIN_GPUS,
    MeasuredScaling,
    box_interconnect,
    fit_profiles,
    half_width,
    scaling,
    scaling_half_widths,
)
from service.ingest.groups import AGGREGATE_STATUSES
from service.read_model.estimates import COUNTED_STATUSES

ASSUMED = {("pytorch", "pcie", n): e for n, e in [(1, 1.0), (2, 0.95), (4, 0.9), (8, 0.82)]}


def pair(gpu, eff, count=4, workload="w", framework="pytorch", link="pcie", single=100.0, **kw):
    return MeasuredScaling(
        gpu, workload, "fp16", count, eff * count * single, single, 3, 2, framework, link, **kw
    )


def test_fitted_efficiency_is_the_median_over_pairs_computed_by_hand():
    pairs = [
        pair("a", 0.90, workload="w1"),
        pair("a", 0.70, workload="w2"),
        pair("b", 0.95, workload="w1"),
        pair("c", 0.80, workload="w1"),
    ]
    row = fit_profiles(pairs)[("pytorch", "pcie", 4)]
    assert row.efficiency == pytest.approx((0.80 + 0.90) / 2)  # median of 0.70 0.80 0.90 0.95
    assert (row.pairs, row.gpus, row.n) == (4, ("a", "b", "c"), 4 * (3 + 2))
    assert row.source.startswith("fitted: median of 4")


def test_what_never_feeds_a_profile():
    good = [pair("a", 0.9), pair("b", 0.8)]
    noise = [
        pair("c", 1.5),  # superlinear: more than 1.2x linear
        pair("d", 0.1, framework=None),  # groups measured with mixed frameworks
        pair("e", 0.1, data_parallel=False),  # an LLM split, not data parallel
    ]
    assert fit_profiles(good + noise)[("pytorch", "pcie", 4)].efficiency == pytest.approx(0.85)
    assert fit_profiles(good + noise)[("pytorch", "pcie", 4)].pairs == 2
    # One GPU's box is not a profile of its interconnect.
    assert MIN_GPUS == 2
    assert fit_profiles([pair("a", 0.9, workload=w) for w in "xyz"]) == {}
    # Mildly superlinear accepted cells (up to 1.2x) count, but no row beats linear.
    assert fit_profiles([pair("a", 1.1), pair("b", 1.15)])[("pytorch", "pcie", 4)].efficiency == 1


def test_rows_never_rise_with_count_and_counts_between_are_log2_interpolated():
    rows = fit_profiles(
        [pair(g, e, count=2) for g, e in (("a", 0.96), ("b", 0.94))]
        + [pair(g, e, count=4) for g, e in (("a", 0.80), ("b", 0.90))]
        + [pair(g, e, count=8) for g, e in (("c", 0.92), ("d", 0.88))]  # other GPUs: 0.90
    )
    two, four, eight = (rows[("pytorch", "pcie", c)].efficiency for c in (2, 4, 8))
    assert (two, four) == pytest.approx((0.95, 0.85))
    assert (
        eight == pytest.approx(0.85)
        and "capped at the 4-GPU" in rows[("pytorch", "pcie", 8)].source
    )
    three = rows[("pytorch", "pcie", 3)]
    assert three.efficiency == pytest.approx(0.95 + (math.log2(3) - 1) * (0.85 - 0.95))
    assert "interpolated" in three.source and three.pairs == 4
    assert {c for (_, _, c) in rows} == set(range(2, 9))  # nothing beyond 8 is extrapolated


def test_a_first_fitted_count_above_two_interpolates_from_one_gpu():
    rows = fit_profiles([pair("a", 0.8), pair("b", 0.8)])
    assert rows[("pytorch", "pcie", 2)].efficiency == pytest.approx(0.9)  # halfway in log2
    assert "1 GPU (1.0 by definition)" in rows[("pytorch", "pcie", 2)].source


def test_bridged_nvlink_cards_scale_as_pcie_beyond_two():
    assert box_interconnect("nvlink", "card", 2) == "nvlink"
    assert box_interconnect("nvlink", "card", 4) == "pcie"
    assert box_interconnect("nvlink", "hgx-8", 8) == "nvlink"
    assert box_interconnect("nvlink", None, 8) == "nvlink"
    assert box_interconnect("infinity-fabric", "oam-8", 8) == "infinity-fabric"
    nvlink = ASSUMED | {("pytorch", "nvlink", 4): 0.95}
    card = scaling(nvlink, "parallel", "pytorch", "nvlink", 4, sold_as="card")
    hgx = scaling(nvlink, "parallel", "pytorch", "nvlink", 4, sold_as="hgx-8")
    assert (card.basis, hgx.basis) == ("profile:pytorch/pcie", "profile:pytorch/nvlink")
    # Decode stays tensor-parallel (never a training profile), over the box's link.
    tp = scaling(nvlink, "parallel", "pytorch", "nvlink", 4, decode=True, sold_as="card")
    assert tp.basis == "tensor-parallel:pcie"


def test_fitted_beats_assumed_for_its_exact_key_only():
    fitted = {("pytorch", "pcie", 4): 0.93}
    four = scaling(ASSUMED, "parallel", "pytorch", "pcie", 4, fitted=fitted)
    assert (four.speedup, four.basis) == (pytest.approx(3.72), "fitted:pytorch/pcie")
    eight = scaling(ASSUMED, "parallel", "pytorch", "pcie", 8, fitted=fitted)
    assert (eight.speedup, eight.basis) == (pytest.approx(8 * 0.82), "profile:pytorch/pcie")
    tf = scaling(ASSUMED, "parallel", "tensorflow", "pcie", 4, fitted=fitted)
    assert tf.basis.startswith("profile:")
    assert scaling(ASSUMED, "independent", "pytorch", "pcie", 4, fitted=fitted).speedup == 4
    assert scaling(ASSUMED, "parallel", "pytorch", "pcie", 4, True, fitted).basis.startswith(
        "tensor-parallel"
    )


def test_a_row_fitted_on_one_stacks_boxes_speaks_for_that_stack_only():
    """NCCL boxes measured say nothing of a Radeon or Arc box: those take the assumed row."""
    fitted, stacks = {("pytorch", "pcie", 4): 0.93}, {("pytorch", "pcie", 4): frozenset({"cuda"})}
    cuda = scaling(ASSUMED, "parallel", "pytorch", "pcie", 4, False, fitted, None, "cuda", stacks)
    rocm = scaling(ASSUMED, "parallel", "pytorch", "pcie", 4, False, fitted, None, "rocm", stacks)
    assert cuda.basis == "fitted:pytorch/pcie" and cuda.speedup == pytest.approx(3.72)
    assert rocm.basis == "profile:pytorch/pcie" and rocm.speedup == pytest.approx(4 * 0.9)
    unknown = scaling(ASSUMED, "parallel", "pytorch", "pcie", 4, False, fitted, None, None, stacks)
    assert unknown.basis == "fitted:pytorch/pcie"  # no stack given: as before


def test_counted_statuses_match_the_gate():
    assert set(COUNTED_STATUSES) == set(AGGREGATE_STATUSES)


def test_measured_scaling_is_multi_over_count_times_single():
    m = MeasuredScaling("a", "w", "fp16", 8, 7200.0, 1000.0, 2, 5, "pytorch", "nvlink")
    assert m.efficiency == pytest.approx(0.9) and m.n == 7


def test_a_speedup_carries_how_far_measured_boxes_sit_from_its_row():
    """The band of N GPUs by a profile: the 80% split-conformal quantile of |log(measured /
    row)| over the measured boxes of that link and count, else of that link, else of all."""
    effs = [0.60, 0.85, 0.90, 0.92, 0.95]
    pairs = [pair(f"g{i}", e, workload=f"w{i}") for i, e in enumerate(effs)]
    pairs.append(pair("g9", 0.97, count=2, link="nvlink"))
    fitted = fit_profiles(pairs)
    row = fitted[("pytorch", "pcie", 4)].efficiency
    widths = scaling_half_widths(pairs, ASSUMED, fitted)
    errors = sorted(abs(math.log(e / row)) for e in effs)
    assert widths[("pcie", 4)] == pytest.approx(errors[math.ceil(6 * 0.8) - 1])  # the 5th of 5
    assert widths[("nvlink", 2)] == pytest.approx(abs(math.log(0.97 / 0.95)))  # assumed row
    assert half_width(widths, "pcie", 8) == widths[("pcie", ANY_COUNT)]
    assert half_width(widths, "infinity-fabric", 4) == widths[(ANY_LINK, ANY_COUNT)]
    assert half_width({}, "pcie", 4) == 0.0
    s = scaling(ASSUMED, "parallel", "pytorch", "pcie", 4, half_widths=widths)
    assert s.log_half_width == widths[("pcie", 4)] > 0
    assert (
        scaling(ASSUMED, "independent", "pytorch", "pcie", 4, half_widths=widths).log_half_width
        == 0
    )
    assert (
        scaling(ASSUMED, "parallel", "pytorch", "pcie", 1, half_widths=widths).log_half_width == 0
    )


def test_a_configurations_band_adds_the_speedups_in_quadrature():
    low, high = widened(100.0, 90.0, 120.0, 0.2)
    assert math.log(100.0 / low) == pytest.approx(math.hypot(math.log(100 / 90), 0.2))
    assert math.log(high / 100.0) == pytest.approx(math.hypot(math.log(120 / 100), 0.2))
    assert widened(100.0, 90.0, 120.0, 0.0) == (90.0, 120.0)
    # configurations of one count share their speedup's row: ranking takes the width back out
    assert narrowed(100.0, low, high, 0.2) == pytest.approx((90.0, 120.0))
