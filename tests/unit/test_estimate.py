"""The performance model: measured medians, the tied log-linear fit, fallbacks, scaling,
prices and budget ranking, including the properties a buyer relies on."""

import math
from datetime import date

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from service.domain import estimate as est
from service.domain import tiers
from service.domain.prices import PriceObservation, current_price
from service.domain.recommend import (
    Candidate,
    Configuration,
    configurations,
    fewest_gpus_first,
    ranked_above_because,
    ranked_above_words,
    why_body,
    why_lead,
    within_budget,
)
from service.domain.scaling import Scaling, efficiency, scaling
from service.domain.tiers import faster_below

TRAIN = est.WorkloadShape(flops_per_unit=2.45e10, memory_bound=False, precision="fp16")
DECODE = est.WorkloadShape(flops_per_unit=1.35e10, memory_bound=True, precision="fp16")


def gpu(slug, compute, bandwidth):
    return est.GpuPerf(slug, compute, bandwidth)


FLEET = [
    gpu("a", 50, 500),
    gpu("b", 100, 900),
    gpu("c", 165, 1000),
    gpu("d", 312, 2000),
    gpu("e", 989, 3350),
    gpu("f", 25, 300),
]


def true_value(g, b=0.7, scale=3.0):
    return scale * g.compute_tflops**b * g.bandwidth_gbs ** (1 - b)


def test_measured_gpu_gets_exactly_its_median():
    measured = {"c": est.Measurement(1500.0, 7, 20.0)}
    out = est.estimate_all(FLEET, measured, TRAIN)
    assert out["c"].value == 1500.0 and out["c"].basis == "measured" and out["c"].n == 7
    assert out["c"].low == pytest.approx(1500 - 1.2816 * 1.4826 * 20, rel=1e-4)  # 80% band
    assert out["a"].basis == "estimated" and out["a"].model == "spec-ratio"


def test_fit_recovers_a_known_shape_and_reports_a_small_band():
    measured = {g.slug: est.Measurement(true_value(g), 5, 1.0) for g in FLEET[:4]}
    out = est.estimate_all(FLEET, measured, TRAIN)
    for g in FLEET[4:]:
        assert out[g.slug].model == "fit"
        assert out[g.slug].value == pytest.approx(true_value(g), rel=1e-6)
        assert out[g.slug].relative_error < 0.05


def test_fit_band_comes_from_leave_one_out_error():
    noisy = [1.0, 1.3, 0.8, 1.1, 0.9]
    measured = {
        g.slug: est.Measurement(true_value(g) * k, 5, 1.0)
        for g, k in zip(FLEET[:5], noisy, strict=True)
    }
    out = est.estimate_all(FLEET, measured, TRAIN)
    loo = est.leave_one_out_log_rmse(
        FLEET[:5], [true_value(g) * k for g, k in zip(FLEET[:5], noisy, strict=True)]
    )
    assert out["f"].high / out["f"].value == pytest.approx(math.exp(loo))
    assert out["f"].n == 5


def test_spec_ratio_uses_bandwidth_for_memory_bound_work():
    measured = {"c": est.Measurement(60.0, 3, 1.0)}
    out = est.estimate_all(FLEET, measured, DECODE)
    assert out["d"].value == pytest.approx(60.0 * 2000 / 1000)
    out_train = est.estimate_all(FLEET, measured, TRAIN)
    assert out_train["d"].value == pytest.approx(60.0 * 312 / 165)


def test_roofline_prior_without_any_measurement():
    out = est.estimate_all(FLEET, {}, DECODE)
    # 1000 GB/s x 0.6 / (6.75e9 params x 2 bytes) tokens/s
    assert out["c"].value == pytest.approx(1000e9 * 0.6 / (1.35e10 / 2 * 2))
    assert out["c"].model == "roofline-prior" and out["c"].n == 0
    no_flops = est.WorkloadShape(flops_per_unit=None, memory_bound=False, precision="fp16")
    assert est.estimate_all(FLEET, {}, no_flops) == {}


fleet_st = st.lists(
    st.tuples(st.floats(1, 2000), st.floats(100, 8000)), min_size=3, max_size=12, unique=True
)


@given(fleet_st, st.data())
@settings(max_examples=60, deadline=None)
def test_property_estimate_for_any_measured_gpu_equals_its_median(specs, data):
    gpus = [gpu(f"g{i}", c, b) for i, (c, b) in enumerate(specs)]
    chosen = data.draw(st.sets(st.sampled_from([g.slug for g in gpus]), min_size=1))
    medians = {s: data.draw(st.floats(1, 1e5)) for s in chosen}
    out = est.estimate_all(gpus, {s: est.Measurement(v, 3, 0.0) for s, v in medians.items()}, TRAIN)
    for slug, median in medians.items():
        assert out[slug].value == median and out[slug].basis == "measured"
    for g in gpus:
        assert out[g.slug].value > 0 and out[g.slug].low <= out[g.slug].value <= out[g.slug].high


PROFILES = {("pytorch", "pcie", n): e for n, e in [(1, 1.0), (2, 0.95), (4, 0.9), (8, 0.82)]}
PROFILES |= {("tensorflow", "pcie", n): e for n, e in [(1, 1.0), (2, 0.8), (4, 0.65)]}
PROFILES |= {("default", "pcie", n): e for n, e in [(1, 1.0), (4, 0.75)]}


def test_scaling_profiles_and_fallbacks():
    assert scaling(PROFILES, "parallel", "pytorch", "pcie", 4).speedup == pytest.approx(3.6)
    assert scaling(PROFILES, "parallel", "tensorflow", "pcie", 4).speedup == pytest.approx(2.6)
    assert scaling(PROFILES, "independent", "tensorflow", "pcie", 4).speedup == 4
    # Unknown framework -> conservative default; unknown link -> pcie; 3 GPUs -> 2-GPU eff.
    assert efficiency(PROFILES, "mxnet", "pcie", 4)[:2] == (0.75, "default")
    assert efficiency(PROFILES, "pytorch", "nvlink", 4)[2] == "pcie"
    assert efficiency(PROFILES, "pytorch", "pcie", 3)[0] == 0.95


def test_current_price_newest_fresh_and_cheapest_for_any():
    today = date(2026, 12, 1)
    obs = [
        PriceObservation(1599, "new", "msrp", date(2022, 10, 12), 1),
        PriceObservation(1999, "new", "shop", date(2026, 11, 1), 2),
        PriceObservation(1300, "used", "ebay", date(2026, 10, 1), 3),
        PriceObservation(900, "used", "old", date(2019, 1, 1), 4),
        PriceObservation(100, "new", "typo-future", date(2027, 1, 1), 5),
    ]
    assert current_price(obs, "new", today, 3650).source == "shop"
    assert current_price(obs, "used", today, 3650).source == "ebay"
    assert current_price(obs, "any", today, 3650).source == "ebay"
    assert current_price(obs, "used", today, 30) is None
    assert current_price([], "any", today, 30) is None


def candidate(slug, value, usd, memory=24.0):
    e = est.Estimate(slug, value, "estimated", 0, value * 0.8, value * 1.2, "spec-ratio")
    price = PriceObservation(usd, "new", "msrp", date(2025, 1, 1)) if usd else None
    return Candidate(slug, slug, memory, 300.0, "pcie", e, price)


def ranked(cands, max_gpus=4, mode="parallel"):
    return configurations(
        cands, max_gpus, lambda c, n: scaling(PROFILES, mode, "pytorch", c.interconnect, n), {}
    )


cands_st = st.lists(
    st.tuples(st.floats(1, 1e4), st.floats(50, 40000), st.sampled_from([8.0, 12.0, 24.0, 80.0])),
    min_size=1,
    max_size=15,
)


@given(cands_st, st.floats(10, 1e5), st.floats(0, 1e5), st.integers(1, 8))
@settings(max_examples=100, deadline=None)
def test_property_more_budget_never_gives_a_worse_best(specs, budget, extra, max_gpus):
    cands = [candidate(f"g{i}", v, p, m) for i, (v, p, m) in enumerate(specs)]
    configs = ranked(cands, max_gpus)
    small = within_budget(configs, budget, 12.0, 1)
    large = within_budget(configs, budget + extra, 12.0, 1)
    if small:
        assert large and large[0].throughput >= small[0].throughput
    for c in within_budget(configs, budget, 12.0, 50):
        assert c.total_price <= budget and c.candidate.memory_gb >= 12.0
        assert c.perf_per_dollar == pytest.approx(c.throughput / c.total_price)


@given(cands_st, st.floats(10, 1e5), st.floats(0, 200), st.integers(1, 8))
@settings(max_examples=100, deadline=None)
def test_property_a_split_model_is_held_together_by_the_fewest_no_faster_gpus(
    specs, budget, together, max_gpus
):
    cands = [candidate(f"g{i}", v, p, m) for i, (v, p, m) in enumerate(specs)]
    configs = configurations(
        cands, max_gpus, lambda c, n: Scaling(0.95 if n > 1 else 1.0, "split"), {}, True, 0.0, True
    )
    for c in within_budget(configs, budget, 0.0, 50, together_gb=together):
        assert c.candidate.memory_gb * c.count >= together
        if c.count > 1:  # no faster than one: only where one GPU fewer cannot hold the model
            assert c.candidate.memory_gb * (c.count - 1) < together


@given(cands_st, st.sampled_from(["parallel", "independent"]))
@settings(max_examples=60, deadline=None)
def test_property_scaling_never_exceeds_linear_unless_measured(specs, mode):
    cands = [candidate(f"g{i}", v, p, m) for i, (v, p, m) in enumerate(specs)]
    for c in ranked(cands, 8, mode):
        single = c.candidate.estimate.value
        assert c.throughput <= c.count * single * (1 + 1e-12)
        if mode == "independent":
            assert c.throughput == pytest.approx(c.count * single)


def test_measured_multi_gpu_result_overrides_the_profile_even_above_linear():
    cands = [candidate("a", 100.0, 1000)]
    measured = {("a", 2): est.Measurement(205.0, 4, 2.0)}
    configs = configurations(
        cands, 2, lambda c, n: scaling(PROFILES, "parallel", "pytorch", "pcie", n), measured
    )
    two = next(c for c in configs if c.count == 2)
    assert two.throughput == 205.0 and two.scaling_basis == "measured" and two.n == 4
    assert two.speedup == pytest.approx(2.05)
    # the answer says that a measured ratio above linear is two runs, not a scaling
    assert "above 2x linear: the 2-GPU and one-GPU medians are different runs" in why_body(
        two, "images/s", "a", 0.0
    )
    below = configurations(
        cands,
        2,
        lambda c, n: scaling(PROFILES, "parallel", "pytorch", "pcie", n),
        {("a", 2): est.Measurement(190.0, 4, 2.0)},
    )
    assert "linear" not in why_body(next(c for c in below if c.count == 2), "images/s", "a", 0.0)


def test_n_gpus_no_faster_than_one_are_never_offered():
    """A llama.cpp layer split (or a measured box that lost speed) buys nothing for one job."""
    cands = [candidate("a", 100.0, 1000)]
    slower = {("a", 2): est.Measurement(92.0, 3, 1.0)}
    flat = configurations(cands, 4, lambda c, n: Scaling(1.0, "split:learned@2"), slower)
    assert [c.count for c in flat] == [1]
    faster = {("a", 2): est.Measurement(190.0, 3, 1.0)}
    counts = configurations(
        cands, 2, lambda c, n: scaling(PROFILES, "parallel", "pytorch", "pcie", n), faster
    )
    assert sorted(c.count for c in counts) == [1, 2]


@given(
    st.floats(101, 1e5),  # above one GPU's 100: N GPUs no faster than one are left out
    st.integers(1, 20),
    st.floats(0, 1e4),
    st.floats(0, 0.5),
)
def test_a_measured_multi_gpu_band_is_its_spread_never_narrower_than_the_noise(
    median, n, mad, noise
):
    cands = [candidate("a", 100.0, 1000)]
    measured = {("a", 2): est.Measurement(median, n, mad)}
    configs = configurations(
        cands,
        2,
        lambda c, n: scaling(PROFILES, "parallel", "pytorch", "pcie", n),
        measured,
        result_noise=noise,
    )
    two = next(c for c in configs if c.count == 2)
    low, high = measured[("a", 2)].band()
    assert two.low == pytest.approx(max(min(low, median * (1 - noise)), 0.0))
    assert two.high == pytest.approx(max(high, median * (1 + noise)))
    assert 0 <= two.low <= two.throughput <= two.high
    if noise >= 1e-6:  # one result (mad 0) still gets a band
        assert two.high > two.low


def test_unpriced_gpus_are_never_recommended():
    assert ranked([candidate("a", 100.0, None)]) == []


def brute_force_loo(gpus, values):
    errors = []
    for i in range(len(gpus)):
        rest = [j for j in range(len(gpus)) if j != i]
        a, b = est.fit_shape([gpus[j] for j in rest], [values[j] for j in rest])
        errors.append(math.log(est.predict(a, b, gpus[i]) / values[i]))
    return math.sqrt(sum(e * e for e in errors) / len(errors))


def test_closed_form_leave_one_out_equals_refitting_each_time():
    noisy = [1.0, 1.3, 0.8, 1.1, 0.9, 1.05]
    values = [true_value(g) * k for g, k in zip(FLEET, noisy, strict=True)]
    assert 0 < est.fit_shape(FLEET, values)[1] < 1  # an interior fit: the line formula applies
    assert est.leave_one_out_log_rmse(FLEET, values) == pytest.approx(
        brute_force_loo(FLEET, values), rel=1e-9
    )
    # Shape clipped at the bound (bandwidth-bound data): only the constant is fitted.
    flat = [7.0 * g.bandwidth_gbs * k for g, k in zip(FLEET, noisy, strict=True)]
    assert est.fit_shape(FLEET, flat)[1] == 0.0
    assert est.leave_one_out_log_rmse(FLEET, flat) == pytest.approx(
        brute_force_loo(FLEET, flat), rel=1e-9
    )


# Issue 16: any stored numbers, however degenerate, give finite estimates or none, never raise.
_ANY_POSITIVE = st.floats(min_value=5e-324, max_value=1e308, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(_ANY_POSITIVE, min_size=0, max_size=6),
    specs=st.lists(st.tuples(_ANY_POSITIVE, _ANY_POSITIVE), min_size=6, max_size=6),
    memory_bound=st.booleans(),
)
def test_estimates_survive_any_stored_values(values, specs, memory_bound):
    fleet = [gpu(f"g{i}", c, b) for i, (c, b) in enumerate(specs)]
    measured = {f"g{i}": est.Measurement(v, 1, 0.0) for i, v in enumerate(values)}
    shape = est.WorkloadShape(flops_per_unit=1e10, memory_bound=memory_bound, precision="fp16")
    out = est.estimate_all(fleet, measured, shape)
    assert set(measured) <= set(out)  # a measured GPU always keeps its measurement
    for e in out.values():
        assert math.isfinite(e.value) and e.value > 0
        assert math.isfinite(e.low) and math.isfinite(e.high)
        assert e.low <= e.value <= e.high or e.basis == "measured"


def test_one_subnormal_result_does_not_drop_the_other_gpus():
    measured = {"a": est.Measurement(5e-324, 1, 0.0), "b": est.Measurement(700.0, 1, 0.0)}
    out = est.estimate_all(FLEET, measured, TRAIN)
    assert set(out) == {g.slug for g in FLEET}


def _at(slug: str, value: float) -> est.Estimate:
    return est.Estimate(slug, value, "estimated", 5, value * 0.8, value * 1.2, "nnls")


def test_a_gpu_without_bf16_units_takes_its_fp16_figure_where_that_is_higher():
    bf16 = {"v100": _at("v100", 10.0), "a100": _at("a100", 50.0), "p40": _at("p40", 8.0)}
    fp16 = {"v100": _at("v100", 40.0), "a100": _at("a100", 60.0), "p40": _at("p40", 7.0)}
    fp16["t4"] = _at("t4", 20.0)  # no bf16 figure at all
    out = est.with_fp16_fallback(bf16, fp16, frozenset({"v100", "p40", "t4"}))
    assert (out["v100"].value, out["v100"].precision) == (40.0, "fp16")
    assert (out["t4"].value, out["t4"].precision) == (20.0, "fp16")
    assert out["a100"] == bf16["a100"]  # it has bf16 units: its bf16 figure stays
    assert out["p40"] == bf16["p40"]  # fp16 no faster there: bf16 stays
    assert "no bf16 tensor rate" in est.precision_note("fp16") and est.precision_note("") == ""


def test_bounded_by_bytes_caps_estimates_and_keeps_measured_values() -> None:
    """A memory-bound step reading twice the bytes: an estimate above half the narrower one's
    is brought to it (band alike); one below stays; a measured value stands."""
    narrow = {
        g: est.Estimate(g, 100.0, "estimated", 5, 80.0, 120.0, "borrowed") for g in ("a", "b", "c")
    }
    wide = {
        "a": est.Estimate("a", 70.0, "estimated", 5, 50.0, 90.0, "borrowed"),
        "b": est.Estimate("b", 40.0, "estimated", 5, 30.0, 55.0, "borrowed"),
        "c": est.Estimate("c", 70.0, "measured", 3, 69.0, 71.0, "measured"),
    }
    out = est.bounded_by_bytes(wide, narrow, 0.5)
    assert (out["a"].value, out["a"].low, out["a"].high) == (50.0, 40.0, 60.0)
    assert out["b"] == wide["b"] and out["c"] == wide["c"]


def test_a_measured_band_is_an_80_percent_band_like_every_other():
    """A measured median's band is median -+ z(0.8) x 1.4826 x MAD (z = 1.2816): the answers
    label it `band: 0.8`, and at -+1 sigma it covered about 68%."""
    from service.domain.vocabulary import Measurement

    low, high = Measurement(100.0, 5, 10.0).band()
    assert (100 - low) == pytest.approx(1.2816 * 14.826, rel=1e-4) == (high - 100)
    assert Measurement(100.0, 5, 10.0).band(0.6827) == pytest.approx((85.174, 114.826), rel=1e-3)
    assert Measurement(10.0, 3, 100.0).band()[0] == 0.0  # never below zero


def test_inside_overlapping_estimates_fewer_gpus_then_more_memory_rank_first():
    """2 x a 10 GB card (~95, likely 76-114, $400) and one 16 GB card (~85, likely 68-102,
    $350): neither estimate can tell them apart, so the one card ranks first; 2 x c (~57, $100)
    stays above one a (~50, $200), faster and cheaper, though one a needs fewer GPUs; with tiers
    off the order is throughput's."""
    cands = [candidate("a", 50.0, 200.0, 10.0), candidate("b", 85.0, 350.0, 16.0)]
    cands.append(candidate("c", 30.0, 50.0, 24.0))
    configs = ranked(cands, max_gpus=2)
    by_throughput = within_budget(configs, 600.0, 8.0, 3)
    assert [(c.candidate.slug, c.count) for c in by_throughput] == [("a", 2), ("b", 1), ("c", 2)]
    tiered_ = within_budget(configs, 600.0, 8.0, 3, tiers=True)
    assert [(c.candidate.slug, c.count) for c in tiered_][:3] == [("b", 1), ("a", 2), ("c", 2)]
    # the scan goes past `limit` to find the tier: one row asked, the one card answers, and
    # the faster one it ranks above comes with it
    taken = within_budget(configs, 600, 8, 1, tiers=True)
    assert [(c.candidate.slug, c.count) for c in taken][:2] == [("b", 1), ("a", 2)]
    first, faster = tiered_[0], tiered_[1]
    assert faster_below(tiered_, 0) is faster
    assert ranked_above_because(first, faster) == ("fewer GPUs", "more memory per GPU")
    assert why_lead(1, 600.0, ("fewer GPUs",)).startswith("Fewest GPUs among the fastest")
    words = ranked_above_words(first, faster, ("fewer GPUs", "more memory per GPU"), "x/s")
    assert "needs fewer GPUs (1 against 2) and has more memory per GPU (16 GB against 10)" in words
    # same count, same band: more memory first; a third card far below stays below
    same = [candidate("d", 100.0, 100.0, 12.0), candidate("e", 95.0, 100.0, 24.0)]
    order = within_budget(ranked(same, max_gpus=1), 1000.0, 8.0, 2, tiers=True)
    assert [c.candidate.slug for c in order] == ["e", "d"]


def test_a_tie_break_never_ranks_a_dearer_configuration_above_a_faster_one():
    """The same two as above with the 10 GB card at $100: 2 x it (~95) cost $200, less than
    the one 16 GB card ($350, ~85), so fewer GPUs and more memory buy the slower one no place
    above it (3 x RTX 5080, $4,778 with their box, had ranked above 4 x RTX 4080 Super, faster
    at $4,607); the box several cards need counts in what each costs."""
    cands = [candidate("a", 50.0, 100.0, 10.0), candidate("b", 85.0, 350.0, 16.0)]
    configs = ranked(cands, max_gpus=2)
    tiered_ = within_budget(configs, 600.0, 8.0, 3, tiers=True)
    assert [(c.candidate.slug, c.count) for c in tiered_][:2] == [("a", 2), ("b", 1)]
    boxed = within_budget(configs, 600.0, 8.0, 3, lambda c: 200.0 * (c.count > 1), tiers=True)
    assert [(c.candidate.slug, c.count) for c in boxed][:2] == [("b", 1), ("a", 2)]


def test_a_measured_value_ties_with_an_estimate_whose_band_holds_it():
    """A measured 15.4 (band 15.0-15.9) and an estimate of 16.8 (likely 14.3-19.7): the
    estimate's band holds the measurement, the measurement's spread does not hold the estimate.
    Their gap (0.087 in log) is inside the two bands added in quadrature (0.16 and 0.03), so
    they tie and the measured pair, fewer GPUs and cheaper, ranks first (2 x RTX 3090 against
    3 x RTX 5080 on Llama-3.1-70B Q4_K_M); 1.3x apart they do not tie."""

    def config(slug, count, value, low, high, price):
        c = candidate(slug, value, price, 24.0)
        return Configuration(c, count, value, low, high, 1.0, "single", "estimated", 0)

    three = config("x", 3, 16.8, 14.3, 19.7, 1000.0)
    two = config("y", 2, 15.4, 15.0, 15.9, 1000.0)
    assert tiers.tied(three, two) and tiers.tied(two, three)
    assert fewest_gpus_first([three, two], lambda c: c.total_price) == [two, three]
    slow = config("y", 2, 12.9, 12.5, 13.3, 1000.0)
    assert not tiers.tied(three, slow)


@given(cands_st, st.floats(10, 1e5), st.integers(1, 8))
@example([(1.0, 50.0, 12.0), (1.0, 51.0, 24.0)], 51.0, 1)  # as fast: more memory first
@settings(max_examples=100, deadline=None)
def test_property_the_first_row_is_the_fastest_or_a_tie_it_breaks(specs, budget, max_gpus):
    """With tiers the first row is the fastest within the budget, or a configuration tied with
    it that costs less, with fewer GPUs or as many and more memory per GPU; every row meets the
    budget and memory as without tiers."""
    cands = [candidate(f"g{i}", v, p, m) for i, (v, p, m) in enumerate(specs)]
    configs = ranked(cands, max_gpus)
    plain = within_budget(configs, budget, 12.0, len(configs) or 1)
    tiered_ = within_budget(configs, budget, 12.0, len(configs) or 1, tiers=True)
    assert sorted(map(id, plain)) == sorted(map(id, tiered_))
    if not plain:
        return
    fastest, first = plain[0], tiered_[0]
    if first is not fastest:
        assert tiers.tied(first, fastest)
        if first.throughput < fastest.throughput:  # never above a faster, cheaper one
            assert first.total_price <= fastest.total_price
        fewer = first.count < fastest.count
        roomier = first.count == fastest.count and (
            first.candidate.memory_gb >= fastest.candidate.memory_gb
        )
        assert fewer or roomier


def test_a_gpus_larger_count_never_takes_the_place_its_smaller_count_earned():
    """One 16 GB card (~97.5), 2 x a 24 GB card (~95: a poor 1.19x scaling) and one of those
    alone (~80), all inside each other's bands and within 1.25x: the 16 GB card ranks first
    for fewer GPUs, and the 24 GB card's two are not moved up into the place its one earned
    for memory (putting a GPU's larger count in its smaller count's place had ranked 2 x RTX
    3090 above one RTX 5080)."""

    def config(slug, memory, count, value):
        c = candidate(slug, value, 100.0, memory)
        return Configuration(c, count, value, value / 2, value * 2, 1.0, "single", "estimated", 0)

    y1, x2, x1 = config("y", 16.0, 1, 97.5), config("x", 24.0, 2, 95.0), config("x", 24.0, 1, 80.0)
    assert fewest_gpus_first([y1, x2, x1], lambda c: c.total_price) == [y1, x2, x1]
    assert ranked_above_because(x2, y1) == ("more memory per GPU",)  # not what put y1 first
    assert ranked_above_because(y1, x2) == ("fewer GPUs",)


def test_estimates_far_apart_do_not_tie_however_wide_their_bands():
    """One card at ~366 and 4 cards at ~947, each band 2.7x either way: they overlap, but 2.6x
    apart the point estimates order them (tiers.TIE_RATIO); within 1.25x they tie."""

    def config(slug, count, value):
        c = candidate(slug, value, 100.0, 80.0)
        e = value * 2.7
        return Configuration(c, count, value, value / 2.7, e, 1.0, "single", "estimated", 0)

    four, one = config("many", 4, 947.0), config("one", 1, 366.0)
    paid = lambda c: c.total_price  # noqa: E731
    assert fewest_gpus_first([four, one], paid) == [four, one]
    near = config("one", 1, 800.0)
    assert fewest_gpus_first([four, near], paid) == [near, four]


@given(cands_st, st.floats(10, 1e5), st.integers(1, 8), st.integers(1, 6))
@settings(max_examples=100, deadline=None)
def test_property_the_rows_a_limit_shows_are_the_first_of_every_row(specs, budget, max_gpus, k):
    """The early stop of within_budget(tiers=True) loses nothing: asked for k rows it begins
    with the first k of the whole order, each of them has the same faster configurations below
    it and the first the same cheaper tie (what the rows say), and a row ranked above a faster
    one is ahead of it on the tie-break (fewer GPUs, or as many with more memory)."""
    cands = [candidate(f"g{i}", v, p, m) for i, (v, p, m) in enumerate(specs)]
    configs = ranked(cands, max_gpus)
    whole = within_budget(configs, budget, 12.0, len(configs) or 1, tiers=True)
    part = within_budget(configs, budget, 12.0, k, tiers=True)
    assert part[:k] == whole[:k]
    for i in range(min(k, len(part))):
        assert set(map(id, tiers.faster_ones_below(part, i))) == set(
            map(id, tiers.faster_ones_below(whole, i))
        )
    if part:
        paid = lambda c: c.total_price  # noqa: E731
        assert tiers.cheaper_tie(part[0], part, paid) is tiers.cheaper_tie(whole[0], whole, paid)
    for i, row in enumerate(whole):
        faster = faster_below(whole, i)
        if faster is not None:
            assert ranked_above_because(row, faster), (row, faster)


def test_the_cheapest_tie_gives_more_per_dollar_by_more_than_the_tie_ratio():
    """One card at ~23.8 (measured, $29,200) and 2 x another at ~23.7 (likely 20-28, $10,214):
    tied, and 2.85x the throughput per dollar, so the answer names it; a tie that gives at most
    1.25x as much per dollar, or a cheaper option the estimates set apart, is not named."""

    def config(slug, count, value, low, high):
        c = candidate(slug, value, 100.0, 80.0)
        return Configuration(c, count, value, low, high, 1.0, "single", "estimated", 0)

    h100, pair = config("h100", 1, 23.8, 23.0, 24.6), config("5090", 2, 23.7, 20.0, 28.0)
    slow = config("slow", 1, 15.0, 14.0, 16.0)
    paid = {id(h100): 29200.0, id(pair): 10214.0, id(slow): 2000.0}
    assert tiers.cheaper_tie(h100, [h100, pair, slow], lambda c: paid[id(c)]) is pair
    paid[id(pair)] = 29200.0 / 1.25
    assert tiers.cheaper_tie(h100, [h100, pair, slow], lambda c: paid[id(c)]) is None


def test_a_first_rows_lead_claims_only_what_holds_against_every_faster_one_below():
    """An RX 7900 XTX 24 GB placed above 2 x Arc B580 12 GB and one RTX 4080 Super 16 GB, both
    faster: fewer GPUs holds against the pair only, more memory against both, so the lead says
    "Most memory" (it had said "Fewest GPUs among the fastest"); with nothing common, "Tied"."""

    def config(slug, count, memory, value):
        c = candidate(slug, value, 100.0, memory)
        return Configuration(c, count, value, value / 2, value * 2, 1.0, "single", "estimated", 0)

    xtx, pair, super_ = (
        config("xtx", 1, 24.0, 70.0),
        config("b580", 2, 12.0, 72.6),
        config("4080s", 1, 16.0, 71.4),
    )
    common = tiers.common_reasons(ranked_above_because, xtx, [pair, super_])
    assert common == ("more memory per GPU",)
    assert why_lead(1, 1200.0, common, outranks=True).startswith("Most memory among the fastest")
    roomy = config("roomy", 1, 32.0, 75.0)
    assert tiers.common_reasons(ranked_above_because, xtx, [pair, roomy]) == ()
    assert why_lead(1, 1200.0, (), outranks=True).startswith("Tied with the fastest within")
    assert why_lead(1, 1200.0).startswith("Most throughput")
