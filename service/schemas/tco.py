"""Cost-of-ownership query parameters (shared by /recommend, /rankings, /compare, the web page)
and the /compare answer."""

from datetime import date

from pydantic import BaseModel, Field

from service.domain.tco import DEFAULT_USD_PER_KWH, CostSettings
from service.schemas.rankings import PriceInfo


class CostQuery(BaseModel):
    horizon_years: float = Field(3.0, gt=0, le=20, allow_inf_nan=False)
    hours_per_day: float = Field(8.0, gt=0, le=24, allow_inf_nan=False)
    electricity_usd_per_kwh: float = Field(
        DEFAULT_USD_PER_KWH,
        ge=0,
        le=10,
        allow_inf_nan=False,
        description="Default: EIA US residential average, April 2024.",
    )
    resale: float | None = Field(
        None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Fraction of the price recovered; default: yearly retention ** horizon_years "
        "(tco.py).",
    )
    platform_usd: float | None = Field(
        None, ge=0, le=10_000_000, allow_inf_nan=False, description="Replaces the platform table."
    )
    host_power_w: float | None = Field(None, ge=0, le=100_000, allow_inf_nan=False)

    def settings(self) -> CostSettings:
        return CostSettings(
            horizon_years=self.horizon_years,
            hours_per_day=self.hours_per_day,
            usd_per_kwh=self.electricity_usd_per_kwh,
            resale=self.resale,
            platform_usd=self.platform_usd,
            host_power_w=self.host_power_w,
        )


class CloudOfferOut(BaseModel):
    provider: str
    usd_per_hour: float = Field(description="Per GPU-hour.")
    source: str
    observed_at: date


class BuySide(BaseModel):
    unit_price: PriceInfo
    total_price_usd: float
    draw_w: float | None
    energy_kwh: float
    energy_usd: float
    platform_usd: float
    resale_usd: float
    tco_usd: float
    cost_per_million_units: float | None


class Comparison(BaseModel):
    gpu: str
    name: str
    count: int
    workload: str
    unit: str
    throughput: float = Field(description="Of `count` GPUs (parallel scaling).")
    throughput_low: float = Field(description="Its band's low end (nominal coverage `band`).")
    throughput_high: float
    basis: str = Field(description="measured (N-GPU results of this count) or estimated")
    n: int = Field(description="Results behind a measured value; measured GPUs behind an estimate.")
    band: float = Field(description="Nominal coverage of the band.")
    scaling_factor: float = Field(description="`count` GPUs over one.")
    scaling_basis: str = Field(description="single | measured | fitted:... | profile:...")
    hours_over_horizon: float
    buy: BuySide | None = Field(description="None when the GPU has no current price.")
    cheapest_cloud: CloudOfferOut | None
    cloud_offers: list[CloudOfferOut] = Field(description="Newest per provider, cheapest first.")
    rent_usd_over_horizon: float | None = Field(description="count x cheapest rate x hours.")
    break_even_hours: float | None = Field(
        description="Hours of use after which buying costs less than renting."
    )
    why: str
