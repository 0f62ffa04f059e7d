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
    """Launch MSRPs, recorded as price observations with source `msrp` on the launch date."""
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


def load_platforms() -> list[PlatformSeed]:
    """platforms.csv (the `note` column is documentation, not stored)."""
    return [
        PlatformSeed.model_validate({k: v for k, v in row.items() if k != "note"})
        for row in _rows("platforms.csv")
    ]
