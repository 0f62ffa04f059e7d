"""Device names -> catalog GPUs: a fuzzy match must agree on the model number and variant.

The names are as the tools print them: nvidia-smi / NVML (calibration, with memory in GB),
llama-bench's gpu_info (CUDA, ROCm, Vulkan and SYCL builds; no memory), rocm-smi.
"""

import pytest

from service.catalog import loaders as catalog
from service.domain.matching import map_device, model_tokens, suggest

CATALOG = [(g.slug, [g.name, *g.aliases], g.memory_gb) for g in catalog.load_gpus()]


def without(*slugs: str) -> list[tuple[str, list[str], float]]:
    assert all(any(s == c[0] for c in CATALOG) for s in slugs)
    return [c for c in CATALOG if c[0] not in slugs]


def test_model_tokens_keep_numbers_and_variants_not_memory_or_form_factor():
    assert model_tokens("Intel(R) Arc(TM) Pro B70 Graphics") == {"pro", "b70"}
    assert model_tokens("NVIDIA A100-SXM4-80GB") == {"a100"}
    assert model_tokens("NVIDIA H100 80GB HBM3") == {"h100"}
    assert model_tokens("AMD Radeon RX 7900 XTX (RADV NAVI31)") == {"7900", "xtx"}
    assert model_tokens("NVIDIA GeForce RTX 4070 Ti SUPER") == {"4070", "ti", "super"}
    assert model_tokens("H100 80GB PCIe Gen5") == {"h100"}


@pytest.mark.parametrize(
    ("device", "memory_gb"),
    [
        ("Intel(R) Arc(TM) Pro B70 Graphics", None),  # llama-bench SYCL gpu_info
        ("Intel Arc Pro B70", None),
        ("Arc Pro B70", 32.0),
        ("NVIDIA GeForce RTX 4090 D", None),  # a different chip configuration than the 4090
        ("NVIDIA GeForce RTX 4090 Laptop GPU", None),
        ("NVIDIA GeForce RTX 5090 D", None),
        ("NVIDIA A800-SXM4-80GB", 79.2),  # nvidia-smi; not an A100
        ("NVIDIA H800", 79.6),
        ("AMD Instinct MI308X", 192.0),  # rocm-smi; not an MI300X
        ("Apple M4 Pro", None),  # llama-bench Metal; not an M4 Max
    ],
)
def test_near_misses_of_shipped_gpus_are_unmapped(device, memory_gb):
    slug, why = map_device(device, memory_gb, CATALOG)
    assert slug is None, (device, slug)
    assert "no catalog GPU matches" in why


@pytest.mark.parametrize(
    ("device", "memory_gb", "missing", "not_this"),
    [
        ("AMD Radeon RX 7900 XT", None, "amd-rx-7900-xt", "amd-rx-7900-xtx"),
        ("AMD Radeon RX 7900 XT (RADV NAVI31)", 20.0, "amd-rx-7900-xt", "amd-rx-7900-xtx"),
        ("Radeon RX 7900 XTX", None, "amd-rx-7900-xtx", "amd-rx-7900-xt"),
        ("NVIDIA GeForce RTX 4080", None, "nvidia-rtx-4080", "nvidia-rtx-4080-super"),
        ("NVIDIA GeForce RTX 4080 SUPER", 16.0, "nvidia-rtx-4080-super", "nvidia-rtx-4080"),
        ("NVIDIA GeForce RTX 4090", 23.99, "nvidia-rtx-4090", "nvidia-rtx-5090"),
        ("Intel(R) Arc(TM) Pro B60 Graphics", None, "intel-arc-pro-b60", "intel-arc-b580"),
        ("AMD Instinct MI300X", 192.0, "amd-mi300x", "amd-mi325x"),
    ],
)
def test_a_gpu_missing_from_the_catalog_never_maps_to_its_neighbour(
    device, memory_gb, missing, not_this
):
    assert map_device(device, memory_gb, CATALOG)[0] == missing  # present: found
    slug, _why = map_device(device, memory_gb, without(missing))
    assert slug is None and slug != not_this


def test_b60_and_b70_in_both_directions():
    b70_only = [("intel-arc-pro-b70", ["Intel Arc Pro B70"], 32.0)]
    assert map_device("Intel(R) Arc(TM) Pro B70 Graphics", None, b70_only) == (
        "intel-arc-pro-b70",
        "fuzzy",
    )
    assert map_device("Intel(R) Arc(TM) Pro B60 Graphics", None, b70_only)[0] is None
    both = [*b70_only, ("intel-arc-pro-b60", ["Intel Arc Pro B60"], 24.0)]
    assert map_device("Intel(R) Arc(TM) Pro B60 Graphics", 24.0, both)[0] == "intel-arc-pro-b60"
    assert map_device("Intel(R) Arc(TM) Pro B70 Graphics", 32.0, both)[0] == "intel-arc-pro-b70"


@pytest.mark.parametrize(
    ("device", "memory_gb", "slug"),
    [
        ("AMD Radeon RX 7900 XTX (RADV NAVI31)", None, "amd-rx-7900-xtx"),  # llama-bench Vulkan
        ("AMD Radeon RX 7900 XT (RADV NAVI31)", None, "amd-rx-7900-xt"),
        ("AMD Instinct MI300X VF", 191.5, "amd-mi300x"),  # a virtual function of the same GPU
        ("NVIDIA GeForce RTX 4090 (NVIDIA)", None, "nvidia-rtx-4090"),
    ],
)
def test_decorated_names_of_the_same_model_still_map(device, memory_gb, slug):
    assert map_device(device, memory_gb, CATALOG) == (slug, "fuzzy")


SLUGS = [slug for slug, _names, _mem in CATALOG]


@pytest.mark.parametrize(
    ("typed", "first"),
    [
        ("rtx4090", "nvidia-rtx-4090"),  # scored as written, tied with the Quadro RTX 4000
        ("4070tisuper", "nvidia-rtx-4070-ti-super"),  # as written, the 4070 Super came first
        ("rtx4070ti", "nvidia-rtx-4070-ti"),
        ("a10", "nvidia-a10"),  # before the A100s, which contain it
        ("nvidia-rtx-4091", "nvidia-rtx-4090"),
        ("rx7900xtx", "amd-rx-7900-xtx"),
    ],
)
def test_suggestions_put_the_card_a_user_typed_first(typed, first):
    assert suggest(typed, SLUGS)[0] == first


def test_suggestions_stay_empty_when_nothing_is_close():
    assert suggest("zzz", SLUGS) == []
    assert suggest("llama-3-8b", SLUGS) == []
