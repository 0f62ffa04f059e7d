"""The shipped catalog: complete, sourced, and free of the known spec traps."""

import itertools
import re

import pytest

from service.catalog import loaders as catalog
from service.domain.plausibility import PeakRates, fp16_accumulate_tflops, peak_tflops

REQUIRED = [
    "nvidia-gtx-1070",
    "nvidia-gtx-1080",
    "nvidia-gtx-1080-ti",
    "nvidia-titan-xp",
    "nvidia-rtx-2080-ti",
    "nvidia-rtx-3090",
    "nvidia-rtx-4090",
    "nvidia-rtx-5090",
    "nvidia-rtx-a4000",
    "nvidia-rtx-a6000",
    "nvidia-rtx-6000-ada",
    "nvidia-p100-pcie-16gb",
    "nvidia-t4",
    "nvidia-a10",
    "nvidia-a100-40gb",
    "nvidia-a100-80gb",
    "nvidia-l4",
    "nvidia-l40s",
    "nvidia-h100-pcie",
    "nvidia-h100-sxm",
    "nvidia-h200",
    "nvidia-b200",
    "amd-rx-7900-xtx",
    "amd-mi100",
    "amd-mi210",
    "amd-mi250x",
    "amd-mi300x",
]


@pytest.fixture(scope="module")
def gpus():
    return {g.slug: g for g in catalog.load_gpus()}


def test_at_least_60_unique_kebab_case_gpus_each_with_a_source(gpus):
    rows = catalog.load_gpus()
    assert len(rows) >= 60
    assert len(rows) == len(gpus)
    for gpu in rows:
        assert re.fullmatch(r"(nvidia|amd|intel|apple)-[a-z0-9]+(-[a-z0-9]+)*", gpu.slug)
        assert gpu.slug.startswith(gpu.vendor + "-")
        assert len(gpu.source) > 10


def test_required_gpus_are_present(gpus):
    assert [s for s in REQUIRED if s not in gpus] == []
    assert any(s.startswith("nvidia-v100") for s in gpus)
    for series in ("nvidia-rtx-20", "nvidia-rtx-30", "nvidia-rtx-40", "nvidia-rtx-50"):
        assert sum(s.startswith(series) for s in gpus) >= 3, series


def test_tensor_rates_are_dense_not_sparse_nor_shader(gpus):
    assert gpus["nvidia-h100-sxm"].bf16_tensor_tflops == pytest.approx(989, rel=0.01)
    assert gpus["nvidia-a100-80gb"].bf16_tensor_tflops == pytest.approx(312, rel=0.01)
    # GeForce: FP16 tensor with FP32 accumulate, not the 82.6 shader rate nor 330 FP16-acc.
    assert gpus["nvidia-rtx-4090"].fp16_tensor_tflops == pytest.approx(165.2, rel=0.01)
    assert gpus["nvidia-rtx-3090"].fp16_tensor_tflops == pytest.approx(71, rel=0.02)
    for gpu in gpus.values():
        if gpu.fp16_tensor_tflops and gpu.fp16_tflops:
            assert gpu.fp16_tensor_tflops != gpu.fp16_tflops or gpu.vendor == "amd", gpu.slug
        if gpu.bf16_tensor_tflops and gpu.fp16_tensor_tflops:
            assert gpu.bf16_tensor_tflops <= gpu.fp16_tensor_tflops * 1.01 + 1e-9, gpu.slug
        if gpu.fp16_tensor_tflops:
            # Dense tensor throughput is never more than ~40x the FP32 rate; sparse would break it.
            assert gpu.fp16_tensor_tflops <= 40 * gpu.fp32_tflops, gpu.slug


def test_pascal_has_no_tensor_cores(gpus):
    for slug in ("nvidia-gtx-1080-ti", "nvidia-titan-xp", "nvidia-p100-pcie-16gb"):
        gpu = gpus[slug]
        assert gpu.fp16_tensor_tflops is None and gpu.bf16_tensor_tflops is None
        assert gpu.tf32_tensor_tflops is None and gpu.fp8_tensor_tflops is None


def test_specs_are_in_sane_ranges(gpus):
    for gpu in gpus.values():
        assert 2 <= gpu.memory_gb <= 600, gpu.slug  # unified-memory Macs reach 512
        assert 100 <= gpu.memory_bandwidth_gbs <= 10_000, gpu.slug
        assert 1 <= gpu.fp32_tflops <= 200, gpu.slug


def test_launch_prices_become_msrp_observations(gpus):
    prices = {p.gpu: p for p in catalog.load_launch_prices()}
    assert prices["nvidia-rtx-4090"].usd == pytest.approx(1599)
    assert prices["nvidia-rtx-4090"].observed_at.year == 2022
    assert all(p.source_detail for p in prices.values())
    assert sum(g.launch_price_usd is not None for g in gpus.values()) == len(prices)


def test_workloads_cover_the_named_ones():
    workloads = {w.slug: w for w in catalog.load_workloads()}
    for slug in ("resnet50-train", "bert-large-train", "llm-train", "llm-inference"):
        assert slug in workloads
        assert workloads[slug].min_memory_gb > 0
        assert workloads[slug].source
    assert workloads["llm-inference"].memory_bound
    assert not workloads["resnet50-train"].memory_bound


def test_scaling_profiles_never_superlinear_and_non_increasing():
    profiles = catalog.load_scaling_profiles()
    curves: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for p in profiles:
        curves.setdefault((p.framework, p.interconnect), []).append((p.gpu_count, p.efficiency))
    assert ("pytorch", "pcie") in curves and ("default", "pcie") in curves
    for key, points in curves.items():
        points.sort()
        assert points[0] == (1, 1.0), key
        effs = [e for _, e in points]
        assert all(a >= b for a, b in itertools.pairwise(effs)), key


# FP16-accumulate tensor rates as NVIDIA's whitepapers state them (dense): Ada Appendix A (RTX
# 4090 330.3), GA102 (RTX 3090 142; RTX A6000 154.8, full rate), RTX Blackwell GB202 (RTX 5090
# 419), TITAN RTX product page (130.5 at its boost clock, full rate), V100 datasheet (125).
FP16_ACCUMULATE = {
    "nvidia-rtx-4090": 330.3,
    "nvidia-rtx-3090": 142.0,
    "nvidia-rtx-5090": 419.0,
    "nvidia-rtx-a6000": 154.8,
    "nvidia-titan-rtx": 130.5,
    "nvidia-v100-sxm2-16gb": 125.0,
}


def test_fp16_accumulate_rate_is_the_whitepapers_figure(gpus):
    for slug, stated in FP16_ACCUMULATE.items():
        g = gpus[slug]
        rates = PeakRates(
            g.fp32_tflops, g.fp16_tflops, g.tf32_tensor_tflops, g.fp16_tensor_tflops,
            g.bf16_tensor_tflops, g.fp8_tensor_tflops, g.int8_tops,
        )  # fmt: skip
        assert fp16_accumulate_tflops(rates) == pytest.approx(stated, rel=0.005), slug
    # no int8 rate twice the fp16 one: the fp16 rate stands (RDNA3's int8 equals its fp16)
    xtx = gpus["amd-rx-7900-xtx"]
    rates = PeakRates(xtx.fp32_tflops, xtx.fp16_tflops, fp16_tensor=xtx.fp16_tensor_tflops,
                      int8=xtx.int8_tops)  # fmt: skip
    assert fp16_accumulate_tflops(rates) == peak_tflops(rates, "fp16")
