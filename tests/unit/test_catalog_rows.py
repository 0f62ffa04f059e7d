"""Row-level rules for the seed GPU catalog (service/catalog/gpus.csv), read with the csv module.

The file is checked directly rather than through the loader so that the availability columns
(status, discontinued_on, sold_as, stack, availability_source) are covered whether or not the
loader has been wired to them yet.
"""

import csv
from datetime import date
from importlib import resources

import pytest

STATUSES = {"in_production", "discontinued", "datacenter_only"}
STACKS = {"cuda", "rocm-instinct", "rocm-radeon", "oneapi", "metal"}
SOLD_AS = {"card", "hgx-8", "oam-8", "system", "cloud"}
RATE_COLUMNS = (
    "fp32_tflops",
    "fp16_tflops",
    "tf32_tensor_tflops",
    "fp16_tensor_tflops",
    "bf16_tensor_tflops",
    "fp8_tensor_tflops",
    "int8_tops",
)
TENSOR_OVER_VECTOR = (
    ("tf32_tensor_tflops", "fp32_tflops"),
    ("fp16_tensor_tflops", "fp16_tflops"),
    ("bf16_tensor_tflops", "fp16_tflops"),
)


def _text() -> str:
    return resources.files("service.catalog").joinpath("gpus.csv").read_text(encoding="utf-8")


def _rows() -> list[dict[str, str]]:
    return list(csv.DictReader(_text().splitlines()))


ROWS = _rows()
BY_SLUG = {r["slug"]: r for r in ROWS}


def _num(row: dict[str, str], column: str) -> float | None:
    value = row[column].strip()
    return float(value) if value else None


def _normalize(name: str) -> str:
    return " ".join(name.lower().replace("-", " ").replace("_", " ").split())


def test_every_line_has_the_header_column_count() -> None:
    lines = list(csv.reader(_text().splitlines()))
    header = lines[0]
    assert header[-5:] == ["status", "discontinued_on", "sold_as", "stack", "availability_source"]
    assert {len(line) for line in lines} == {len(header)}


def test_at_least_100_gpus_with_unique_slugs() -> None:
    slugs = [r["slug"] for r in ROWS]
    assert len(slugs) >= 100
    assert len(set(slugs)) == len(slugs)


def test_aliases_are_unique_across_rows() -> None:
    owner: dict[str, str] = {}
    for row in ROWS:
        for alias in [row["name"], *row["aliases"].split("|")]:
            key = _normalize(alias)
            assert key, f"{row['slug']}: empty alias"
            assert owner.setdefault(key, row["slug"]) == row["slug"], (
                f"{alias!r} names both {owner[key]} and {row['slug']}"
            )


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["slug"])
def test_row_is_sourced_and_available_fields_are_valid(row: dict[str, str]) -> None:
    assert row["source"].strip()
    assert len(row["source"]) <= 1024
    assert row["availability_source"].strip()
    assert row["status"] in STATUSES
    assert row["stack"] in STACKS
    assert row["sold_as"] in SOLD_AS
    if row["discontinued_on"]:
        assert row["status"] == "discontinued"
        assert date.fromisoformat(row["discontinued_on"]) >= date.fromisoformat(row["launch_date"])
    if row["status"] == "discontinued" and not row["discontinued_on"]:
        assert "no date" in row["availability_source"].lower()


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["slug"])
def test_rates_are_positive_and_tensor_not_below_vector(row: dict[str, str]) -> None:
    for column in RATE_COLUMNS:
        value = _num(row, column)
        assert value is None or value > 0
    assert _num(row, "fp32_tflops") is not None
    for tensor, vector in TENSOR_OVER_VECTOR:
        t, v = _num(row, tensor), _num(row, vector)
        if t is not None and v is not None:
            # 1% slack: published figures are rounded differently (4070 TF32 29.1 vs FP32 29.15)
            assert t >= 0.99 * v, f"{tensor} {t} < {vector} {v}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["slug"])
def test_stack_and_packaging_follow_vendor_and_market(row: dict[str, str]) -> None:
    vendor, market = row["vendor"], row["market"]
    expected = {"nvidia": {"cuda"}, "intel": {"oneapi"}, "apple": {"metal"}}
    expected["amd"] = {"rocm-instinct"} if market == "datacenter" else {"rocm-radeon"}
    assert row["stack"] in expected[vendor]
    if vendor == "apple":
        assert row["sold_as"] == "system"
    if market != "datacenter" and vendor != "apple" and row["slug"] != "nvidia-dgx-spark":
        assert row["sold_as"] == "card"
    if "sxm" in row["slug"] or row["interconnect"] == "infinity-fabric":
        assert row["sold_as"] != "card" or row["slug"] in {"amd-mi100", "amd-mi210"}


@pytest.mark.parametrize(
    ("slug", "column", "dense"),
    [
        ("nvidia-h100-sxm", "bf16_tensor_tflops", 989.4),  # datasheet 1979 is sparse
        ("nvidia-h100-sxm", "fp8_tensor_tflops", 1978.9),
        ("nvidia-h200", "bf16_tensor_tflops", 989.5),
        ("nvidia-b200", "bf16_tensor_tflops", 2250),  # HGX B200 per-GPU 4.5 PF is sparse
        ("nvidia-b300", "fp8_tensor_tflops", 4500),
        ("nvidia-rtx-4090", "fp16_tensor_tflops", 165.2),  # GeForce FP32-accumulate rate
        ("nvidia-rtx-5090", "fp16_tensor_tflops", 209.5),
        ("amd-mi300x", "bf16_tensor_tflops", 1307.4),
        ("amd-mi355x", "bf16_tensor_tflops", 2516.6),
        # datasheet prints 272.8 sparse FP16; dense = 80 SMs x 1665 MHz x 1024
        ("nvidia-rtx-a5500", "fp16_tensor_tflops", 136.4),
        ("nvidia-rtx-a5500", "int8_tops", 272.8),
        # dense = 48 SMs x 2173 MHz x 1024 / 2048; the datasheet's 327.6 is sparse FP8
        ("nvidia-rtx-4000-ada", "bf16_tensor_tflops", 106.8),
        ("nvidia-rtx-4000-ada", "fp8_tensor_tflops", 213.6),
    ],
)
def test_known_dense_rates_not_sparse(slug: str, column: str, dense: float) -> None:
    assert _num(BY_SLUG[slug], column) == pytest.approx(dense, rel=0.005)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["slug"])
def test_no_tensor_figures_on_pascal(row: dict[str, str]) -> None:
    if row["architecture"] == "pascal":
        for column in RATE_COLUMNS[2:6]:
            assert _num(row, column) is None


def test_required_new_gpus_present() -> None:
    wanted = {
        "nvidia-rtx-5060",
        "nvidia-rtx-5060-ti-8gb",
        "nvidia-rtx-5060-ti-16gb",
        "nvidia-rtx-5070",
        "nvidia-rtx-5070-ti",
        "nvidia-rtx-5080",
        "nvidia-rtx-5090",
        "nvidia-rtx-pro-6000-blackwell",
        "nvidia-rtx-pro-6000-blackwell-max-q",
        "nvidia-b300",
        "nvidia-gb300",
        "nvidia-l40s",
        "nvidia-l4",
        "nvidia-h20",
        "amd-mi325x",
        "amd-mi355x",
        "amd-rx-9070",
        "amd-rx-9070-xt",
        "amd-radeon-ai-pro-r9700",
        "intel-arc-b580",
        "intel-arc-pro-b60",
        "apple-m3-ultra",
        "apple-m4-max",
        "nvidia-dgx-spark",
    }
    assert wanted <= set(BY_SLUG)


def test_platform_only_parts_are_not_sold_as_cards() -> None:
    for slug in ("nvidia-h100-sxm", "nvidia-h200", "nvidia-b200", "nvidia-b300"):
        assert BY_SLUG[slug]["sold_as"] == "hgx-8"
    for slug in ("amd-mi300x", "amd-mi325x", "amd-mi355x"):
        assert BY_SLUG[slug]["sold_as"] == "oam-8"
    for slug in ("nvidia-h100-pcie", "nvidia-l40s", "nvidia-a100-pcie-80gb", "nvidia-h200-nvl"):
        assert BY_SLUG[slug]["sold_as"] == "card"


@pytest.mark.parametrize("slug", ["nvidia-rtx-a5500", "nvidia-rtx-4000-ada"])
def test_workstation_tensor_rate_is_four_times_fp32_not_eight(slug: str) -> None:
    """Ampere/Ada pro cards run FP16 tensor (FP32 accumulate) at 1024 FLOP/clk/SM against 256
    FP32: dense = 4 x FP32. The sparse figure datasheets print would be 8 x."""
    row = BY_SLUG[slug]
    fp32 = _num(row, "fp32_tflops")
    assert fp32 and _num(row, "fp16_tensor_tflops") == pytest.approx(4 * fp32, rel=0.01)
    assert _num(row, "tf32_tensor_tflops") == pytest.approx(2 * fp32, rel=0.01)
