"""Throughput model: NNLS, recovery of a known world, monotonicity, bands, pooling."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.domain import evaluation as ev
from service.domain import throughput_model as tm


def brute_force_nnls(a: np.ndarray, b: np.ndarray) -> float:
    """Smallest residual over every support whose unconstrained solution is non-negative."""
    best = float(np.linalg.norm(b))
    n = a.shape[1]
    for k in range(1, n + 1):
        for cols in itertools.combinations(range(n), k):
            x = np.linalg.lstsq(a[:, cols], b, rcond=None)[0]
            if (x >= -1e-12).all():
                best = min(best, float(np.linalg.norm(a[:, cols] @ x - b)))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_nnls_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(3, 9)), int(rng.integers(1, 5))
    a, b = rng.normal(size=(m, n)), rng.normal(size=m)
    x = tm.nnls(a, b)
    assert (x >= 0).all()
    assert float(np.linalg.norm(a @ x - b)) == pytest.approx(brute_force_nnls(a, b), abs=1e-9)


def test_nnls_exact_non_negative_solution() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(0.1, 1.0, size=(8, 4))
    truth = np.array([0.5, 0.0, 2.0, 0.1])
    assert tm.nnls(a, a @ truth) == pytest.approx(truth, abs=1e-9)


def gpu(
    slug: str,
    tensor: float,
    vector: float,
    memory: float,
    arch: str = "a",
    memory_gb: float | None = None,
    tdp_w: float | None = None,
) -> tm.GpuSpec:
    return tm.GpuSpec(
        slug,
        "nvidia",
        arch,
        "cuda",
        {"fp16": tensor},
        vector,
        memory,
        memory_gb=memory_gb,
        tdp_w=tdp_w,
    )


WORK = {  # true world: TFLOP tensor, TFLOP vector, GB memory, GB x s capacity, overhead s
    "conv": (2e-2, 1e-3, 0.3, 2e-4, 1e-5),
    "attn": (5e-2, 0.0, 1.5, 0.0, 0.0),
    "decode": (0.0, 0.0, 13.5, 0.0, 1e-4),
}


def world(
    n_gpus: int, seed: int, noise: float = 0.0, power_slope: float = 0.0
) -> tuple[list[tm.GpuSpec], list[tm.WorkloadSpec], list[tm.Observation]]:
    """Random GPUs measured on WORK; with `power_slope`, each GPU holds (TDP / 300 W) ^ slope
    of its rates (a power-limited card cannot hold its boost clock)."""
    rng = np.random.default_rng(seed)
    draws = rng.uniform([50, 10, 300, 8, 100], [1000, 100, 5000, 192, 1000], size=(n_gpus, 5))
    gpus = [
        gpu(f"g{i}", float(t), float(v), float(m), "a" if i % 2 else "b", float(c), float(p))
        for i, (t, v, m, c, p) in enumerate(draws)
    ]
    wls = [tm.WorkloadSpec(w, "fp16", None, w == "decode") for w in WORK]
    obs = []
    for g in gpus:
        for w in wls:
            value = true_throughput(g, w.slug, power_slope)
            value *= math.exp(rng.normal(0, noise)) if noise else 1.0
            obs.append(tm.Observation(g.slug, w.slug, value, 1, 0.0))
    return gpus, wls, obs


def true_throughput(g: tm.GpuSpec, w: str, power_slope: float = 0.0) -> float:
    work = WORK[w]
    held = (g.tdp_w / 300.0) ** power_slope if g.tdp_w else 1.0
    return held / float(np.dot(work[:4], 1 / g.rates("fp16")) + work[4])


def test_capacity_applies_only_where_memory_sets_the_batch() -> None:
    """An LLM phase runs at the batch its harness states (llama-bench: ubatches of 512, batch 1
    for generation): results that lean on memory size fit no capacity work there, and two cards
    that differ only in memory get one estimate; a training table's keeps it."""
    gpus, _, _ = world(12, seed=5)
    work = (2e-2, 0.0, 0.3, 5e-3)  # results that lean on memory size
    values = {g.slug: 1 / float(np.dot(work, 1 / g.rates("fp16"))) for g in gpus}
    small, large = (
        gpu("small", 300, 50, 1000, memory_gb=24),
        gpu("large", 300, 50, 1000, memory_gb=96),
    )
    capacity_work, estimates = {}, {}
    for kind in ("", "prefill"):
        wl = tm.WorkloadSpec(f"w-{kind or 'train'}", "fp16", None, False, kind=kind)
        obs = [tm.Observation(s, wl.slug, v, 1, 0.0) for s, v in values.items()]
        model = tm.fit([*gpus, small, large], [wl], obs)
        capacity_work[kind] = model.fits[wl.slug].work[3]
        p_small, p_large = model.predict("small", wl.slug), model.predict("large", wl.slug)
        assert p_small is not None and p_large is not None
        estimates[kind] = p_large.value / p_small.value
    assert capacity_work[""] > 0 and estimates[""] > 1.05
    assert capacity_work["prefill"] == 0
    assert estimates["prefill"] == pytest.approx(1.0)


def test_fit_recovers_known_world() -> None:
    gpus, wls, obs = world(12, seed=3)
    held = {"g0", "g5"}
    model = tm.fit(gpus, wls, [o for o in obs if o.gpu not in held])
    for g in gpus:
        if g.slug not in held:
            continue
        for w in WORK:
            p = model.predict(g.slug, w)
            assert p is not None and p.basis == "estimated"
            assert p.value == pytest.approx(true_throughput(g, w), rel=0.02)
    assert model.fits["decode"].work[2] == pytest.approx(13.5, rel=0.02)
    # the per-step cost amortised over a memory-sized batch is found where it exists
    assert model.fits["conv"].work[3] == pytest.approx(2e-4, rel=0.05)


def test_measured_gpu_keeps_its_median() -> None:
    gpus, wls, obs = world(6, seed=4)
    model = tm.fit(gpus, wls, obs)
    p = model.predict("g1", "conv")
    measured = next(o for o in obs if o.gpu == "g1" and o.workload == "conv")
    assert p is not None and p.basis == "measured" and p.value == measured.median


def test_bands_never_zero_width() -> None:
    gpus, wls, obs = world(8, seed=5)  # every result single (n=1, MAD 0) and noiseless
    model = tm.fit(gpus, wls, obs[3:])
    for p in model.predict_all().values():
        assert p.low < p.value < p.high
        assert p.band == 0.8


def test_single_result_gets_pooled_noise_of_its_workload() -> None:
    gpus, wls, _ = world(4, seed=6)
    obs = [
        tm.Observation("g0", "conv", 100.0, 1, 0.0),
        tm.Observation("g1", "conv", 200.0, 5, 20.0),  # relative sigma 1.4826 x 0.1
    ]
    model = tm.fit(gpus, wls, obs)
    p = model.predict("g0", "conv")
    assert p is not None
    assert math.log(p.high / p.value) == pytest.approx(tm._z(0.8) * 1.4826 * 0.1, rel=1e-6)


def test_a_value_measured_only_with_another_framework_spans_the_frameworks_spread() -> None:
    """Most GPUs measured with one framework (pytorch), one with both (40% apart): a GPU
    measured once with the other (llm.c) gets that spread, not the run-to-run noise; a GPU
    measured once with the main framework keeps the noise."""
    gpus, wls, _ = world(5, seed=6)
    both = tm.Observation("g1", "conv", 120.0, 2, 20.0, frameworks=("llm.c", "pytorch"))
    obs = [
        tm.Observation("g0", "conv", 100.0, 1, 0.0, frameworks=("llm.c",)),
        both,
        tm.Observation("g2", "conv", 200.0, 2, 2.0, frameworks=("pytorch",)),
        tm.Observation("g3", "conv", 150.0, 1, 0.0, frameworks=("pytorch",)),
        tm.Observation("g4", "conv", 180.0, 2, 1.8, frameworks=("pytorch",)),
    ]
    model = tm.fit(gpus, wls, obs)
    assert model.framework_noise["conv"] == ("pytorch", pytest.approx(1.4826 * 20 / 120))
    other, main = model.predict("g0", "conv"), model.predict("g3", "conv")
    assert other is not None and main is not None
    z = tm._z(0.8)
    assert math.log(other.high / other.value) == pytest.approx(z * 1.4826 * 20 / 120)
    assert math.log(main.high / main.value) == pytest.approx(z * 1.4826 * 0.01)


def test_estimate_band_not_narrower_than_measured_spread() -> None:
    gpus, wls, obs = world(8, seed=7)
    spread = [tm.Observation(o.gpu, o.workload, o.median, 5, 0.2 * o.median) for o in obs]
    model = tm.fit(gpus, wls, [o for o in spread if o.gpu != "g0"])
    p = model.predict("g0", "conv")
    assert p is not None
    assert math.log(p.high / p.value) >= tm._z(0.8) * 1.4826 * 0.2 - 1e-9


# arch a and b get efficiencies, and the data a board-power slope
MONO_MODEL = tm.fit(*world(10, seed=8, noise=0.15, power_slope=0.3))
rate = st.floats(1.0, 5000.0)
factor = st.floats(1.0, 4.0)


def test_monotonicity_model_has_a_power_slope() -> None:
    """The property below is tested where board power matters."""
    assert MONO_MODEL.efficiency.power_slope > 0.1


@settings(max_examples=60, deadline=None)
@given(
    base=st.tuples(rate, rate, rate, st.floats(4.0, 288.0), st.floats(50.0, 1200.0)),
    up=st.tuples(factor, factor, factor, factor, factor),
    arch=st.sampled_from(["a", "b", "new"]),
    workload=st.sampled_from(sorted(WORK)),
)
def test_monotone_within_architecture_and_stack(
    base: tuple[float, float, float, float, float],
    up: tuple[float, float, float, float, float],
    arch: str,
    workload: str,
) -> None:
    """No better in every rate, memory size and board power included: never a higher
    estimate."""
    slow = gpu("slow", *base[:3], arch=arch, memory_gb=base[3], tdp_w=base[4])
    t, v, m = (b * u for b, u in zip(base[:3], up[:3], strict=True))
    fast = gpu("fast", t, v, m, arch, base[3] * up[3], base[4] * up[4])
    model = dataclasses.replace(MONO_MODEL, gpus={**MONO_MODEL.gpus, "slow": slow, "fast": fast})
    ps, pf = model.predict("slow", workload), model.predict("fast", workload)
    assert ps is not None and pf is not None
    assert pf.value >= ps.value * (1 - 1e-12)


def test_conformal_quantile_covers_nominal_on_exchangeable_errors() -> None:
    rng = np.random.default_rng(9)
    hits = []
    for _ in range(400):
        calibration, test = rng.normal(0, 0.1, 20), rng.normal(0, 0.1)
        hits.append(abs(test) <= tm.conformal_quantile(calibration, 0.8))
    assert 0.75 <= float(np.mean(hits)) <= 0.87


def test_leave_one_gpu_out_coverage_near_nominal_on_synthetic_world() -> None:
    gpus, wls, obs = world(24, seed=10, noise=0.1)

    def train(training: list[tm.Observation]) -> ev.Predictor:
        model = tm.fit(gpus, wls, training)

        def predict(g: str, w: str) -> tuple[float, float, float] | None:
            p = model.predict(g, w)
            return None if p is None else (p.value, p.low, p.high)

        return predict

    held = ev.leave_one_gpu_out(obs, train, min_gpus=5, mode="gpu")  # type: ignore[arg-type]
    assert len(held) == len(obs)
    coverage = float(np.mean([h.covered for h in held]))
    assert 0.68 <= coverage <= 0.92


def test_pooling_shrinks_groups_with_few_data() -> None:
    values = (
        {f"x{i}": 0.3 for i in range(10)}
        | {"y0": 0.3}
        | {f"z{i}": -0.1 + 0.02 * i for i in range(10)}
    )
    groups = {k: k[0] for k in values}
    out = tm.shrink_groups(values, dict.fromkeys(values, 1.0), groups)
    assert 0 < out["y"] < out["x"] <= 0.3


def test_gpu_efficiency_shrinks_with_fewer_workloads() -> None:
    specs = {f"g{i}": gpu(f"g{i}", 100, 10, 1000) for i in range(6)}
    residuals = {("g0", f"w{j}"): 0.2 for j in range(8)} | {("g1", "w0"): 0.2}
    rng = np.random.default_rng(11)
    for i in range(2, 6):
        for j in range(8):
            residuals[(f"g{i}", f"w{j}")] = float(rng.normal(0, 0.05))
    eff = tm.pool_efficiencies(residuals, specs)
    assert abs(eff.gpu[("g1", "")]) < abs(eff.gpu[("g0", "")])


def test_a_stack_efficiency_learned_on_one_kind_of_work_stays_there() -> None:
    """A stack that decodes at half the model's speed on every GPU measured, with no training
    result, is not marked down for training; the same GPUs' own decode terms stay with decode."""
    specs = {f"g{i}": gpu(f"g{i}", 100, 10, 1000) for i in range(8)}
    specs |= {
        f"r{i}": dataclasses.replace(gpu(f"r{i}", 100, 10, 1000), stack="rocm") for i in range(4)
    }
    kinds = {"train": "", "decode": "decode"}
    rng = np.random.default_rng(12)
    residuals = {(g, w): float(rng.normal(0, 0.02)) for g in specs for w in kinds if g[0] == "g"}
    residuals |= {
        (r, "decode"): math.log(0.5) + float(rng.normal(0, 0.02)) for r in specs if r[0] == "r"
    }
    eff = tm.pool_efficiencies(residuals, specs, kinds)
    r0 = specs["r0"]
    assert eff.log_multiplier(r0, "decode") < math.log(0.7)
    assert abs(eff.log_multiplier(r0, "")) < 0.05


def test_a_gpus_own_efficiency_stays_in_the_suite_it_was_learned_in() -> None:
    """One lab runs a card 40% above the model on every workload; another lab's workloads of
    the same phase do not inherit it (measured on public data: a GPU's own term learned from
    Lambda's table put it 30% off on another lab's table, with nothing learned it was right)."""
    specs = {f"g{i}": gpu(f"g{i}", 100, 10, 1000) for i in range(8)}
    kinds = {f"lab-a{j}": tm.efficiency_kind("", "lab-a") for j in range(6)}
    kinds |= {f"lab-b{j}": tm.efficiency_kind("", "lab-b") for j in range(6)}
    rng = np.random.default_rng(14)
    residuals = {(g, w): float(rng.normal(0, 0.02)) for g in specs for w in kinds}
    residuals |= {("g0", w): math.log(1.4) for w in kinds if w.startswith("lab-a")}
    eff = tm.pool_efficiencies(residuals, specs, kinds)
    g0 = specs["g0"]
    assert eff.log_multiplier(g0, tm.efficiency_kind("", "lab-a")) > math.log(1.25)
    assert abs(eff.log_multiplier(g0, tm.efficiency_kind("", "lab-b"))) < 0.05
    assert abs(eff.log_multiplier(g0, tm.efficiency_kind("", "lab-c"))) < 0.1  # no data there


def test_a_stack_term_is_the_suites_where_it_has_data_else_pooled_over_suites() -> None:
    """ROCm measured at 0.6 of the model in one suite only: that suite's workloads and an
    unlabelled workload of the same phase get it; a suite measuring ROCm at 1.0 keeps its own."""
    specs = {f"g{i}": gpu(f"g{i}", 100, 10, 1000) for i in range(6)}
    specs |= {
        f"r{i}": dataclasses.replace(gpu(f"r{i}", 100, 10, 1000, arch="r"), stack="rocm")
        for i in range(4)
    }
    slow, even = tm.efficiency_kind("", "slow-lab"), tm.efficiency_kind("", "even-lab")
    kinds = {"s0": slow, "s1": slow, "e0": even, "e1": even, "plain": ""}
    rng = np.random.default_rng(15)
    residuals = {(g, w): float(rng.normal(0, 0.02)) for g in specs if g[0] == "g" for w in kinds}
    residuals |= {(r, w): math.log(0.6) for r in ("r0", "r1", "r2") for w in ("s0", "s1")}
    residuals |= {("r3", w): float(rng.normal(0, 0.02)) for w in ("e0", "e1")}
    eff = tm.pool_efficiencies(residuals, specs, kinds)
    assert eff.stack_term("rocm", slow) < math.log(0.75)
    assert abs(eff.stack_term("rocm", even)) < 0.05
    # a suite without data at all takes the term pooled over suites; one with CUDA data only
    # takes ROCm's difference from CUDA where both are measured (across_suites)
    other = tm.efficiency_kind("", "new-lab")
    assert eff.stack_term("rocm", other) == eff.stack_pooled[("rocm", "")] < 0
    assert eff.stack_term("rocm", "") == pytest.approx(eff.stack_across[("rocm", "")])


def test_a_stack_missing_in_a_suite_keeps_its_difference_from_the_stacks_it_shares() -> None:
    """Each suite's work fit sets its own level: ROCm 0.5 below CUDA in one suite is 0.5 below
    CUDA in another, whatever level CUDA has there."""
    terms = {
        ("cuda", "decode"): 0.46,
        ("rocm", "decode"): 0.04,
        ("oneapi", "decode"): -0.40,
        ("cuda", "decode@lab"): 0.01,
        ("metal", "decode@lab"): 0.0,
        ("cuda", "prefill@lab"): 0.2,  # another phase: never carried into decode
    }
    across = tm.across_suites(terms)
    assert across[("rocm", "decode@lab")] == pytest.approx(0.04 - 0.46 + 0.01)
    assert across[("oneapi", "decode@lab")] == pytest.approx(-0.40 - 0.46 + 0.01)
    assert across[("metal", "decode")] == pytest.approx(0.0 - 0.01 + 0.46)  # and back
    assert tm.across_suites({("rocm", "decode"): 0.1, ("metal", "decode@lab"): 0.0}) == {}
    assert ("rocm", "prefill@lab") not in across


def test_a_workload_of_a_suite_borrows_its_shape_from_that_suite_first() -> None:
    lab = tm.WorkloadSpec("lab-cnn", "fp32", None, False, "", "images/s", suite="lab")
    same = tm.WorkloadSpec("lab-vit", "fp32", None, False, "", "images/s", suite="lab")
    other = tm.WorkloadSpec("resnet", "fp32", None, False, "", "images/s", suite="lambda")
    plain = tm.WorkloadSpec("plain", "fp32", None, False, "", "images/s")
    assert [w.slug for w in tm._similar(lab, [other, same])] == ["lab-vit", "resnet"]
    assert [w.slug for w in tm._similar(plain, [other, same])] == ["resnet", "lab-vit"]


def test_the_architecture_term_gives_each_gpu_and_kind_one_vote() -> None:
    """One card of an architecture measured 50% above the model on 12 workloads of one lab,
    another card of it 33% below on one decode workload: the architecture term, shared by
    every kind of work, weighs the two cards alike (the 12 workloads are one lab's runs of one
    card, not 12 views of the architecture), so a card of it nobody measured gets about 0,
    not the first card's +0.4 (about +0.3 if each workload counted)."""
    specs = {f"g{i}": gpu(f"g{i}", 100, 10, 1000) for i in range(8)}
    specs |= {slug: gpu(slug, 100, 10, 1000, arch="b") for slug in ("many", "few", "new")}
    kinds = {f"w{j}": "" for j in range(12)} | {"decode": "decode"}
    rng = np.random.default_rng(16)
    residuals = {(g, w): float(rng.normal(0, 0.02)) for g in specs if g[0] == "g" for w in kinds}
    residuals |= {("many", f"w{j}"): math.log(1.5) for j in range(12)}
    residuals |= {("few", "decode"): math.log(0.67)}
    eff = tm.pool_efficiencies(residuals, specs, kinds)
    assert abs(eff.group[specs["new"].group]) < 0.1
    assert abs(eff.log_multiplier(specs["new"], "decode", own=False)) < 0.1
    assert eff.log_multiplier(specs["many"], "") > math.log(1.3)  # its own term keeps its data


def test_held_out_multiplier_leaves_the_gpus_own_residuals_out_of_its_groups() -> None:
    """A GPU alone in its architecture, 40% faster than the model everywhere: its architecture
    term is learned from it alone, so a leave-one-out error that keeps that term hides what a
    card nobody measured would get. Held out, it gets the other GPUs' terms (about 0 here); a
    GPU among many peers of its architecture gets about the same terms either way."""
    specs = {f"g{i}": gpu(f"g{i}", 100, 10, 1000) for i in range(8)}
    specs["solo"] = gpu("solo", 100, 10, 1000, arch="b")
    rng = np.random.default_rng(13)
    residuals = {(g, f"w{j}"): float(rng.normal(0, 0.03)) for g in specs for j in range(6)}
    residuals |= {("solo", f"w{j}"): math.log(1.4) for j in range(6)}
    eff = tm.pool_efficiencies(residuals, specs)
    solo, peer = specs["solo"], specs["g0"]
    assert eff.log_multiplier(solo, "", own=False) > 0.15  # its own residuals, via its group
    assert abs(eff.held_out_log_multiplier(solo, "")) < 0.05
    assert eff.held_out_log_multiplier(peer, "") == pytest.approx(
        eff.log_multiplier(peer, "", own=False), abs=0.02
    )
    unseen = gpu("unseen", 100, 10, 1000, arch="c")  # no data: the plain cold multiplier
    assert eff.held_out_log_multiplier(unseen, "") == eff.log_multiplier(unseen, "", own=False)


def test_unmeasured_workload_borrows_from_nearest_of_its_kind() -> None:
    gpus, _, obs = world(8, seed=12)
    wls = [
        tm.WorkloadSpec("conv", "fp16", 1e10, False),
        tm.WorkloadSpec("attn", "fp16", 1e12, False),
        tm.WorkloadSpec("decode", "fp16", 1.35e10, True),
        tm.WorkloadSpec("new-conv", "fp16", 2e10, False),
    ]
    model = tm.fit(gpus, wls, obs)
    new, conv, attn = (model.predict("g0", w) for w in ("new-conv", "conv", "attn"))
    assert new is not None and conv is not None and attn is not None
    assert new.model == "borrowed" and new.low < new.value < new.high
    assert model.fits["new-conv"].work[2] > 0  # memory term of its nearest (conv) kept


def _borrowing_world(conv_flops: float, attn_flops: float) -> tm.FittedModel:
    gpus, _, obs = world(8, seed=12)
    wls = [
        tm.WorkloadSpec("conv", "fp16", conv_flops, False),
        tm.WorkloadSpec("attn", "fp16", attn_flops, False),
        tm.WorkloadSpec("decode", "fp16", 1.35e10, True),
        tm.WorkloadSpec("new-conv", "fp16", 2 * conv_flops, False),
    ]
    return tm.fit(gpus, wls, obs)


def test_a_borrowed_band_is_as_wide_as_borrowing_misses_between_measured_workloads() -> None:
    # FLOPs per unit stated 2x and 20x below the tensor work that WORK runs: carried per FLOP
    # from one to the other, the estimate misses by about 10x, whatever each own fit says
    far = _borrowing_world(1e10, 2.5e12)
    near = _borrowing_world(2e10, 5e10)  # FLOPs as the work runs them: a split apart only
    assert far.fits["conv"].half_width < 0.1 and far.fits["attn"].half_width < 0.1
    assert far.fits["new-conv"].half_width > math.log(5)
    assert near.fits["new-conv"].half_width < far.fits["new-conv"].half_width / 2
    errors = far.borrowing[False]
    assert far.fits["new-conv"].half_width == pytest.approx(
        tm.conformal_quantile(np.abs(errors), tm.NOMINAL_COVERAGE)
    )
    p = far.predict("g0", "new-conv")
    assert p is not None and p.high / p.low > 25


def test_no_estimate_claims_more_of_its_ceiling_than_a_measured_gpu_reached() -> None:
    gpus, _, obs = world(8, seed=5)
    wls = [tm.WorkloadSpec("conv", "fp16", 2e10, False)]  # conv's tensor work, 2e-2 TFLOP
    conv = [o for o in obs if o.workload == "conv"]
    slow = gpu("slow-tensor", 5.0, 2.0, 5000.0, memory_gb=192.0, tdp_w=300.0)
    model = tm.fit([*gpus, slow], wls, conv)
    specs = {g.slug: g for g in gpus}
    shares = [o.median / tm.compute_ceiling(specs[o.gpu], wls[0]) for o in conv]
    assert model.envelope["conv"] == pytest.approx(max(shares))
    ceiling = tm.compute_ceiling(slow, wls[0])
    truth = true_throughput(slow, "conv")
    assert truth / ceiling > max(shares) + 0.1  # tensor-bound: most of its ceiling, truly
    p = model.predict("slow-tensor", "conv")
    assert p is not None and p.value == pytest.approx(max(shares) * ceiling)
    assert p.low < p.value < p.high <= ceiling
    # the best of a few measured cards bounds nothing
    few = tm.fit([*gpus, slow], wls, conv[: tm.MIN_ENVELOPE_GPUS - 1])
    assert "conv" not in few.envelope


def test_the_same_step_at_fp16_or_fp8_borrows_the_16_bit_fit_and_its_envelope() -> None:
    gpus, _, obs = world(8, seed=5)
    slow = gpu("slow-tensor", 5.0, 2.0, 5000.0, memory_gb=192.0, tdp_w=300.0)

    def at_every_precision(g: tm.GpuSpec) -> tm.GpuSpec:
        t = g.matrix_tflops["fp16"]
        return dataclasses.replace(g, matrix_tflops={"bf16": t, "fp16": t, "fp8": 2 * t})

    specs = [at_every_precision(g) for g in [*gpus, slow]]
    step = {p: tm.WorkloadSpec(f"conv@{p}", p, 2e10, False, step="conv") for p in ("bf16",)}
    conv = [dataclasses.replace(o, workload="conv@bf16") for o in obs if o.workload == "conv"]
    model = tm.fit(specs, list(step.values()), conv)
    bf16 = model.predict("slow-tensor", "conv@bf16")
    assert bf16 is not None and model.envelope["conv@bf16"] > 0
    for precision in ("fp16", "fp8"):
        wl = tm.WorkloadSpec(f"conv@{precision}", precision, 2e10, False, step="conv")
        extended = model.with_workload(wl)
        assert extended.fits[wl.slug].work == model.fits["conv@bf16"].work
        assert extended.envelope[wl.slug] == model.envelope["conv@bf16"]
        p = extended.predict("slow-tensor", wl.slug)
        assert p is not None
        rate = {"fp16": 1.0, "fp8": 2.0}[precision]  # its matrix rate against bf16's
        assert bf16.value * (1 - 1e-9) <= p.value <= rate * bf16.value * (1 + 1e-9)
        ceiling = tm.compute_ceiling(extended.gpus["slow-tensor"], wl)
        assert p.value <= extended.envelope[wl.slug] * ceiling * (1 + 1e-9)


def test_a_borrowed_workload_takes_the_envelope_of_the_workloads_it_borrows_from() -> None:
    gpus, _, obs = world(8, seed=5)
    slow = gpu("slow-tensor", 5.0, 2.0, 5000.0, memory_gb=192.0, tdp_w=300.0)
    wls = [
        tm.WorkloadSpec("conv", "fp16", 2e10, False),
        tm.WorkloadSpec("attn", "fp16", 5e10, False),
    ]
    model = tm.fit([*gpus, slow], wls, [o for o in obs if o.workload in ("conv", "attn")])
    new = tm.WorkloadSpec("new-conv", "fp16", 4e10, False)
    extended = model.with_workload(new)
    assert extended.envelope["new-conv"] == max(model.envelope["conv"], model.envelope["attn"])
    p = extended.predict("slow-tensor", "new-conv")
    ceiling = tm.compute_ceiling(slow, new)
    assert p is not None and p.value <= extended.envelope["new-conv"] * ceiling * (1 + 1e-9)
    bare = dataclasses.replace(extended, envelope=model.envelope)  # as before: no envelope
    q = bare.predict("slow-tensor", "new-conv")
    assert q is not None and q.value > p.value  # the cap bites on this tensor-bound card


def test_spearman() -> None:
    assert ev.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert ev.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert list(ev.rankdata([3.0, 1.0, 3.0])) == [2.5, 1.0, 2.5]
    assert ev.spearman([1, 2], [1, 2]) is None
    assert ev.spearman([1, 2, 3, 4, 5], [1, 2, 3, 5, 4]) == 0.9  # exactly, not 0.8999...


def test_derive_stack() -> None:
    assert tm.derive_stack("amd", "datacenter") == "rocm-instinct"
    assert tm.derive_stack("amd", "consumer") == "rocm-radeon"
    assert tm.derive_stack("nvidia", "consumer") == "cuda"


def test_board_power_slope_is_learned_and_carried_to_a_cold_gpu() -> None:
    """Data where a card holds (TDP / 300 W) ^ 0.25 of its rates: the fit finds the slope from
    the measured GPUs, and a held-out 900 W card is estimated near its truth, where the same
    fit without board powers (every TDP unknown) misses by about its power factor."""
    gpus, wls, obs = world(16, seed=21, noise=0.02, power_slope=0.25)
    hot = gpu("hot", 600.0, 50.0, 2000.0, "a", 80.0, 900.0)
    model = tm.fit([*gpus, hot], wls, obs)
    assert 0.15 < model.efficiency.power_slope < 0.35
    blind = tm.fit([dataclasses.replace(g, tdp_w=None) for g in [*gpus, hot]], wls, obs)
    assert blind.efficiency.power_slope == 0.0
    for w in ("conv", "attn"):
        truth = true_throughput(hot, w, 0.25)
        p, b = model.predict("hot", w), blind.predict("hot", w)
        assert p is not None and b is not None
        assert abs(math.log(p.value / truth)) < 0.5 * abs(math.log(b.value / truth))


def test_no_power_effect_in_the_data_gives_no_slope() -> None:
    gpus, wls, obs = world(16, seed=22, noise=0.02)
    model = tm.fit(gpus, wls, obs)
    assert model.efficiency.power_slope < 0.03
    no_tdp = gpu("x", 100.0, 10.0, 1000.0)
    assert model.efficiency.power(no_tdp) == 0.0


def test_power_slope_never_negative() -> None:
    """Cards that do worse the more power they draw are not physics: the slope stays at 0."""
    gpus, wls, obs = world(16, seed=23, noise=0.02, power_slope=-0.3)
    assert tm.fit(gpus, wls, obs).efficiency.power_slope == 0.0


def test_borrowing_prefers_the_same_unit_over_nearer_flops() -> None:
    """A token-counting training workload borrows from another token-counting one (a language
    model), and a 16-bit one from 16-bit before 32-bit, before FLOPs per unit are compared."""
    images = tm.WorkloadSpec("cnn", "fp16", 1e9, False, "", "images/s")
    tokens32 = tm.WorkloadSpec("lm32", "fp32", 1e12, False, "", "tokens/s")
    tokens16 = tm.WorkloadSpec("lm16", "fp16", 1e12, False, "", "tokens/s")
    new = tm.WorkloadSpec("gpt", "bf16", 1e9, False, "", "tokens/s")
    order = [w.slug for w in tm._similar(new, [images, tokens32, tokens16])]
    assert order == ["lm16", "lm32", "cnn"]


def test_borrowing_prefers_the_same_phase_over_nearer_flops() -> None:
    """A training workload nobody measured borrows from training, not from a prompt-processing
    workload whose FLOPs per unit happen to be closer."""
    train = tm.WorkloadSpec("train-a", "fp16", 1e10, False, "")
    prefill = tm.WorkloadSpec("prefill-a", "fp16", 1e9, False, "prefill")
    new = tm.WorkloadSpec("train-new", "fp16", 1e9, False, "")
    assert [w.slug for w in tm._similar(new, [prefill, train])] == ["train-a", "prefill-a"]


def test_a_per_gpu_share_teaches_the_model_but_is_never_answered_as_measured() -> None:
    gpus, wls, obs = world(8, seed=12)
    shared = [
        dataclasses.replace(o, median=o.median * 0.95, per_gpu_of=8) if o.gpu == "g3" else o
        for o in obs
    ]
    model = tm.fit(gpus, wls, shared)
    for w in WORK:
        p = model.predict("g3", w)
        assert p is not None and p.basis == "estimated"
        share = next(o for o in shared if o.gpu == "g3" and o.workload == w)
        assert p.low <= share.median * 1.06 and p.high >= share.median * 0.94


def test_a_stack_never_measured_at_a_phase_gets_the_spread_between_stacks_in_its_band() -> None:
    """Two stacks measured 0.6x apart in training; a third with no training result gets the
    mean of their terms (not the better one's, nor 0) and its band widens by their spread
    around that mean, and the prediction says its stack is unmeasured. A measured stack's band
    is unchanged."""
    gpus, wls, obs = world(10, seed=21, noise=0.02)
    rocm = [dataclasses.replace(g, slug=f"r{g.slug}", stack="rocm") for g in gpus[:5]]
    obs += [
        dataclasses.replace(o, gpu=f"r{o.gpu}", median=o.median * 0.6)
        for o in obs
        if o.gpu in {g.slug for g in gpus[:5]}
    ]
    twin = gpus[0]
    cold_cuda = dataclasses.replace(twin, slug="cold-cuda")
    cold_oneapi = dataclasses.replace(twin, slug="cold-oneapi", stack="oneapi")
    model = tm.fit([*gpus, *rocm, cold_cuda, cold_oneapi], wls, obs)
    known, unknown = model.predict("cold-cuda", "conv"), model.predict("cold-oneapi", "conv")
    assert known is not None and unknown is not None
    assert known.stack_measured and not unknown.stack_measured
    assert model.efficiency.between_stacks[""] > 0.01
    terms = [model.efficiency.stack_pooled[(s, "")] for s in ("cuda", "rocm")]
    assert terms[1] - terms[0] == pytest.approx(math.log(0.6), abs=0.05)
    centre = sum(terms) / 2
    assert model.efficiency.stack_term("oneapi", "") == pytest.approx(centre, rel=1e-9)
    # the twin of a CUDA card, with the stacks' mean in place of CUDA's stack term and no
    # architecture or (architecture, workload) term (its (stack, architecture) group has no data)
    eff = model.efficiency
    cuda_terms = eff.stack_term("cuda", "") + eff.group[twin.group]
    cuda_terms += eff.workload_group[(twin.group, "conv")]
    expected = known.value * math.exp(centre - cuda_terms)
    assert unknown.value == pytest.approx(expected, rel=1e-9)
    width = math.log(unknown.high / unknown.low) / 2
    known_width = math.log(known.high / known.low) / 2
    spread = tm._z(0.8) * math.sqrt(model.efficiency.between_stacks[""])
    assert width == pytest.approx(math.hypot(known_width, spread), rel=1e-6)
    assert width > known_width


def test_a_measured_stack_keeps_the_conformal_band() -> None:
    """Every GPU of a stack measured at the phase: the band is the workload's conformal (or
    noise) half-width, nothing added; a GPU of another stack at the same phase gets more
    (with one stack measured, its spread is the stack's within variance: noise is needed)."""
    gpus, wls, obs = world(8, seed=22, noise=0.05)
    held = {"g0", "g1"}
    stranger = dataclasses.replace(gpus[0], slug="stranger", stack="metal")
    model = tm.fit([*gpus, stranger], wls, [o for o in obs if o.gpu not in held])
    z = tm._z(model.coverage)
    for g in held:
        for w in WORK:
            p = model.predict(g, w)
            assert p is not None and p.basis == "estimated" and p.stack_measured
            expected = max(model.fits[w].half_width, z * model.noise[w])
            assert math.log(p.high / p.value) == pytest.approx(expected, rel=1e-9)
    p = model.predict("stranger", "conv")
    assert p is not None and not p.stack_measured
    assert math.log(p.high / p.value) > max(model.fits["conv"].half_width, z * model.noise["conv"])


def test_a_gpu_alone_in_its_stack_is_held_out_at_the_other_stacks_mean() -> None:
    """The leave-one-out errors behind the bands predict each GPU as a card nobody measured: a
    GPU alone in its stack then gets the mean of the other stacks' terms, as an unmeasured
    stack's card would, not 0 and not its own stack's term."""
    gpus, wls, obs = world(8, seed=24, noise=0.02)
    rocm = [dataclasses.replace(g, slug=f"r{g.slug}", stack="rocm") for g in gpus[:2]]
    solo = dataclasses.replace(gpus[5], slug="solo", stack="metal", architecture="apple")
    obs += [
        dataclasses.replace(o, gpu=f"r{o.gpu}", median=o.median * 0.5)
        for o in obs
        if o.gpu in {g.slug for g in gpus[:2]}
    ]
    obs += [dataclasses.replace(o, gpu="solo", median=o.median * 0.4) for o in obs if o.gpu == "g5"]
    eff = tm.fit([*gpus, *rocm, solo], wls, obs).efficiency
    others = (eff.stack_pooled[("cuda", "")] + eff.stack_pooled[("rocm", "")]) / 2
    assert abs(others) > 0.05 and eff.stack_pooled[("metal", "")] < others - 0.3
    assert eff.without[("solo", "")] == pytest.approx(others, rel=1e-9)


def test_no_estimate_passes_the_gpus_compute_ceiling() -> None:
    """A memory-bound fit (all work on bandwidth) would put a card with little compute and much
    bandwidth above what its arithmetic units can do; the estimate stops at that ceiling."""
    gpus, wls, obs = world(8, seed=5)
    flops = 2e11  # FLOPs per unit of `decode`: at most a few hundred units/s on these GPUs
    wls = [dataclasses.replace(w, flops_per_unit=flops) if w.slug == "decode" else w for w in wls]
    weak = gpu("weak", tensor=1.0, vector=0.5, memory=4000.0, memory_gb=80.0, tdp_w=300.0)
    model = tm.fit([*gpus, weak], wls, obs)
    p = model.predict("weak", "decode")
    assert p is not None and p.basis == "estimated"
    decode = model.workloads["decode"]
    uncapped = tm._throughput(model.fits["decode"], weak, decode, model.efficiency)
    ceiling = 1.0 * 1e12 / flops
    assert uncapped > ceiling  # the fit alone would pass it
    assert p.value == pytest.approx(ceiling)
    assert p.low <= p.value <= p.high <= ceiling * (1 + 1e-12)
    strong = dataclasses.replace(weak, slug="strong", matrix_tflops={"fp16": 900.0})
    model = tm.fit([*gpus, weak, strong], wls, obs)
    q = model.predict("strong", "decode")  # the same bandwidth, compute to spare: not capped
    assert q is not None and q.value == pytest.approx(uncapped)


def test_no_decode_estimate_passes_the_bandwidth_ceiling_where_bytes_are_stated() -> None:
    """A decode token reads its layer weights at the least: datasheet bandwidth / those bytes
    is a ceiling no estimate passes (value and band), and none applies where none is stated."""
    gpus, wls, obs = world(8, seed=5)
    probe = gpu("probe", tensor=500.0, vector=50.0, memory=1000.0, memory_gb=24.0, tdp_w=300.0)
    free = tm.fit([*gpus, probe], wls, obs)
    uncapped = free.predict("probe", "decode")
    assert uncapped is not None and uncapped.basis == "estimated"
    floor = 1000.0 * 1e9 / (0.9 * uncapped.value)  # bytes a unit reads: 0.9 x the estimate fits
    stated = [
        dataclasses.replace(w, bytes_per_unit=floor) if w.slug == "decode" else w for w in wls
    ]
    capped = tm.fit([*gpus, probe], stated, obs).predict("probe", "decode")
    ceiling = tm.bandwidth_ceiling(probe, stated[[w.slug for w in stated].index("decode")])
    assert capped is not None and ceiling == pytest.approx(0.9 * uncapped.value)
    assert capped.value == pytest.approx(ceiling)
    assert capped.low < capped.value <= capped.high <= ceiling * (1 + 1e-12)
    assert tm.bandwidth_ceiling(probe, wls[0]) == math.inf


def test_die_follows_the_memory_type() -> None:
    hbm = dataclasses.replace(gpu("x", 1.0, 1.0, 1.0), memory_type="HBM2e")
    gddr = dataclasses.replace(gpu("y", 1.0, 1.0, 1.0), memory_type="GDDR6X")
    assert hbm.die == "compute" and gddr.die == "graphics"
    assert gpu("z", 1.0, 1.0, 1.0).die == "graphics"  # no memory type stated
    assert hbm.group != gddr.group and hbm.group[0] == gddr.group[0] == "cuda"


def test_an_architectures_compute_and_graphics_dies_get_their_own_terms() -> None:
    """One architecture name, two dies: the HBM cards hold 0.6 of their rates on every
    workload, the others all of them. With memory types the fit learns that from the measured
    HBM cards and a held-out one is estimated near its truth; without them both dies share one
    term and the held-out card is estimated about 1 / 0.6 too high."""
    gpus, wls, obs = world(16, seed=23, noise=0.02)
    hbm = {g.slug for g in gpus[::3]}
    gpus = [dataclasses.replace(g, memory_type="HBM3" if g.slug in hbm else "GDDR6") for g in gpus]
    obs = [dataclasses.replace(o, median=o.median * 0.6) if o.gpu in hbm else o for o in obs]
    held = sorted(hbm)[0]
    train = [o for o in obs if o.gpu != held]
    model = tm.fit(gpus, wls, train)
    blind = tm.fit([dataclasses.replace(g, memory_type=None) for g in gpus], wls, train)
    spec = next(g for g in gpus if g.slug == held)
    for w in WORK:
        truth = 0.6 * true_throughput(spec, w)
        p, b = model.predict(held, w), blind.predict(held, w)
        assert p is not None and b is not None
        assert abs(math.log(p.value / truth)) < 0.1 < abs(math.log(b.value / truth))


def test_an_architecture_slow_on_one_workload_carries_that_to_a_card_nobody_measured() -> None:
    """The cards of one architecture hold 0.6 of their rates on one workload and all of them
    elsewhere (a kernel that architecture runs badly, or one lab's older software on it). The
    (architecture, workload) term learns that from the measured cards, so a held-out card of
    that architecture is estimated near its truth there, and its other workloads are not pulled
    down with it; the other architecture is untouched."""
    gpus, wls, obs = world(16, seed=29, noise=0.02)
    slow = {g.slug for g in gpus if g.architecture == "a"}
    obs = [
        dataclasses.replace(o, median=o.median * 0.6)
        if o.gpu in slow and o.workload == "attn"
        else o
        for o in obs
    ]
    held = {"g1", "g2"}  # one card of each architecture
    model = tm.fit(gpus, wls, [o for o in obs if o.gpu not in held])
    for g in gpus:
        if g.slug not in held:
            continue
        for w in WORK:
            truth = true_throughput(g, w) * (0.6 if g.slug in slow and w == "attn" else 1.0)
            p = model.predict(g.slug, w)
            assert p is not None and abs(math.log(p.value / truth)) < 0.1, (g.slug, w)


def test_workload_terms_shrink_to_zero_without_a_spread_between_groups() -> None:
    """Residuals that are noise around 0 in every (architecture, workload) cell give no term;
    a cell far from the others gets most of its mean, and each GPU's term without itself is
    its cell-mates' mean, shrunk (0 for a GPU alone in its cell)."""
    specs = {f"a{i}": gpu(f"a{i}", 100, 10, 1000, arch="a") for i in range(4)}
    specs |= {f"b{i}": gpu(f"b{i}", 100, 10, 1000, arch="b") for i in range(4)}
    specs["c0"] = gpu("c0", 100, 10, 1000, arch="c")
    rng = np.random.default_rng(31)
    workloads = [f"w{j}" for j in range(6)]
    beyond = {(g, w): float(rng.normal(0, 0.02)) for g in specs for w in workloads}
    kinds = {w: "" for w in workloads}
    terms, without = tm.pool_workload_terms(beyond, specs, kinds)
    assert max(abs(t) for t in terms.values()) < 0.02
    beyond |= {(f"a{i}", "w0"): math.log(0.6) + float(rng.normal(0, 0.02)) for i in range(4)}
    terms, without = tm.pool_workload_terms(beyond, specs, kinds)
    group_a = specs["a0"].group
    assert terms[(group_a, "w0")] < math.log(0.75)
    assert max(abs(t) for cell, t in terms.items() if cell != (group_a, "w0")) < 0.05
    assert without[("a0", "w0")] < math.log(0.75)
    assert without[("c0", "w0")] == 0.0
