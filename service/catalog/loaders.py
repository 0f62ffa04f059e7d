"""Loaders of the seed catalog shipped with the package: GPU specs, workloads, scaling profiles.

Each CSV row names its source (see SOURCES.md beside the files). Rows are parsed through the
same schemas as the admin API, so a bad seed row fails loudly instead of landing in the database.
"""

import csv
from dataclasses import dataclass
from datetime import date
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field

from service.catalog.peaks import CALIBRATED_RATE
from service.schemas.catalog import GpuCreate, WorkloadCreate


class ScalingProfileSeed(BaseModel):
    framework: str = Field(min_length=1, max_length=32)
    interconnect: str = Field(min_length=1, max_length=32)
    gpu_count: int = Field(ge=1, le=64)
    efficiency: float = Field(gt=0, le=1)
    source: str = Field(min_length=1)


class PlatformSeed(BaseModel):
    """A row of platforms.csv: what the box around `gpu_count` GPUs costs (see PRICES.md)."""

    gpu_count: int = Field(ge=1, le=64)
    host_usd: float | None = Field(None, ge=0)
    psu_w: float | None = Field(None, gt=0)
    psu_usd: float | None = Field(None, ge=0)
    # the host's CPU TDP, W: what the supplies carry beside the GPUs (PRICES.md)
    host_w: float | None = Field(None, gt=0, le=10_000)
    host_w_source: str | None = Field(None, max_length=1024)
    chassis_usd: float | None = Field(None, ge=0)
    source: str = Field(min_length=1, max_length=1024)
    observed_at: date | None = None


@dataclass(frozen=True)
class LaunchPrice:
    gpu: str
    usd: float
    observed_at: date
    source_detail: str


def _rows(filename: str) -> list[dict[str, Any]]:
    text = resources.files("service.catalog").joinpath(filename).read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(text.splitlines()):
        rows.append({k: (v.strip() or None) if isinstance(v, str) else v for k, v in row.items()})
    return rows


def _gpu_fields(row: dict[str, Any]) -> dict[str, Any]:
    fields = {k: v for k, v in row.items() if k != "price_source" and v is not None}
    fields["aliases"] = [a.strip() for a in (row.get("aliases") or "").split("|") if a.strip()]
    if fields.get("sold_as") in ("hgx-8", "oam-8"):
        fields.setdefault("unit_gpus", 8)
    return fields


def load_gpus() -> list[GpuCreate]:
    return [GpuCreate.model_validate(_gpu_fields(row)) for row in _rows("gpus.csv")]


def load_launch_prices() -> list[LaunchPrice]:
    """Launch MSRPs, recorded as price observations of kind (condition) `msrp`, source `msrp`,
    on the launch date."""
    prices = []
    for row in _rows("gpus.csv"):
        gpu = GpuCreate.model_validate(_gpu_fields(row))
        if gpu.launch_price_usd is not None and gpu.launch_date is not None:
            prices.append(
                LaunchPrice(
                    gpu.slug, gpu.launch_price_usd, gpu.launch_date, row["price_source"] or ""
                )
            )
    return prices


@dataclass(frozen=True)
class PriceSeed:
    """One row of prices.csv: `kind` is the stored condition (new | used | msrp | cloud)."""

    gpu: str
    kind: str
    usd: float | None
    usd_per_hour: float | None
    provider: str | None
    source: str
    observed_at: date
    note: str | None


@dataclass(frozen=True)
class SoldAsSeed:
    """One row of sold_as.csv: the unit a platform GPU is bought in, with its price if public."""

    gpu: str
    sold_as: str
    unit_gpus: int
    unit_usd: float | None
    source: str
    observed_at: date | None


def _number(value: str | None) -> float | None:
    return float(value) if value else None


PRICE_KINDS = ("new", "used", "msrp", "cloud")


def load_prices() -> list[PriceSeed]:
    """prices.csv; a row with an unknown kind, no date or the wrong price column fails loudly."""
    out = []
    for row in _rows("prices.csv"):
        seed = PriceSeed(
            row["gpu"],
            row["kind"],
            _number(row.get("usd")),
            _number(row.get("usd_per_hour")),
            row.get("provider"),
            row["source"],
            date.fromisoformat(row["observed_at"]),
            row.get("note"),
        )
        cloud = seed.kind == "cloud"
        if seed.kind not in PRICE_KINDS or (seed.usd is None) != cloud:
            raise ValueError(f"prices.csv: bad row for {seed.gpu} ({seed.kind})")
        if cloud and (seed.usd_per_hour is None or not seed.provider):
            raise ValueError(f"prices.csv: cloud row for {seed.gpu} needs usd_per_hour, provider")
        out.append(seed)
    return out


def load_sold_as() -> list[SoldAsSeed]:
    return [
        SoldAsSeed(
            row["gpu"],
            row["sold_as"],
            int(row["unit_gpus"]),
            _number(row.get("unit_usd")),
            row["source"],
            date.fromisoformat(row["observed_at"]) if row.get("observed_at") else None,
        )
        for row in _rows("sold_as.csv")
    ]


def load_workloads() -> list[WorkloadCreate]:
    """workloads.csv, then llm_workloads.csv (one per model + quant + phase + token count)."""
    rows = _rows("workloads.csv") + _rows("llm_workloads.csv")
    for row in rows:
        row["memory_bound"] = (row.get("memory_bound") or "false").lower() == "true"
        row["description"] = row.get("description") or ""
        row["source"] = row.get("source") or ""
    return [
        WorkloadCreate.model_validate({k: v for k, v in r.items() if v is not None}) for r in rows
    ]


def load_scaling_profiles() -> list[ScalingProfileSeed]:
    return [ScalingProfileSeed.model_validate(row) for row in _rows("scaling_profiles.csv")]


_PLATFORM_DOC_COLUMNS = ("note", "cards")  # documentation and test input, not stored


def load_platform_rows() -> list[PlatformSeed]:
    """Every row of platforms.csv, several per GPU count where several sources were found."""
    return [
        PlatformSeed.model_validate(
            {k: v for k, v in row.items() if k not in _PLATFORM_DOC_COLUMNS}
        )
        for row in _rows("platforms.csv")
    ]


def newest_per_count(rows: list[PlatformSeed]) -> list[PlatformSeed]:
    """One row per GPU count: the newest observation (an undated row loses to a dated one; on
    equal dates the later row in the file wins), ordered by count. The platform table holds one
    cost per count, so older sources stay in the CSV as documentation only."""
    newest: dict[int, tuple[tuple[date, int], PlatformSeed]] = {}
    for index, row in enumerate(rows):
        key = (row.observed_at or date.min, index)
        if row.gpu_count not in newest or key >= newest[row.gpu_count][0]:
            newest[row.gpu_count] = (key, row)
    return [row for _count, (_key, row) in sorted(newest.items())]


def load_platforms() -> list[PlatformSeed]:
    """platforms.csv reduced to the newest row per GPU count (what the seed stores)."""
    return newest_per_count(load_platform_rows())


CALIBRATION_DTYPES = tuple(CALIBRATED_RATE)  # the dtypes a calibration measures
SHAPE_DTYPES = ("bf16", "fp8")  # the published MAMF table names its best shape for these


@dataclass(frozen=True)
class PublishedCalibration:
    gpu: str
    host: str  # `public:<source>`: one retired host per publisher (seed_calibrations.py)
    device_name: str
    tflops: dict[str, float]  # dtype -> measured TFLOPS (only the dtypes measured)
    bandwidth_gbs: float | None  # device copy, bytes read + written
    h2d_gbs: float | None
    torch_version: str
    best_shapes: dict[str, str]
    source: str
    observed_at: date
    note: str


def load_calibrations() -> list[PublishedCalibration]:
    """calibrations.csv: published matmul measurements (seed_calibrations.py)."""
    out = []
    for row in _rows("calibrations.csv"):
        tflops = {d: float(row[f"{d}_tflops"]) for d in CALIBRATION_DTYPES if row[f"{d}_tflops"]}
        shapes = {d: row[f"best_shape_{d}"] for d in SHAPE_DTYPES if row[f"best_shape_{d}"]}
        out.append(
            PublishedCalibration(
                row["gpu"],
                row["host"],
                row["device_name"],
                tflops,
                _number(row["bandwidth_gbs"]),
                _number(row["h2d_gbs"]),
                row["torch_version"],
                shapes,
                row["source"],
                date.fromisoformat(row["observed_at"]),
                row["note"] or "",
            )
        )
    return out
