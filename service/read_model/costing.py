"""Cost-of-ownership fields of a ranking or recommendation row, from the ownership data.

One function fills both row kinds, so `tco_usd`, `cost_per_million_units` and
`break_even_hours` mean the same in /rankings, /recommend, /compare and the web page.
"""

from dataclasses import dataclass
from typing import Any

from service.domain.tco import (
    CostSettings,
    Ownership,
    break_even_hours,
    ownership,
    platform_for,
    power_notes,
    worth_after,
    yearly_retention,
)
from service.read_model.ownership import CloudOffer, OwnershipData
from service.schemas.rankings import AnswerRow, RankingItem, Recommendation


@dataclass(frozen=True)
class Costed:
    ownership: Ownership
    cloud: CloudOffer | None
    break_even_hours: float | None
    notes: tuple[str, ...]

    def fields(self) -> dict[str, Any]:
        o = self.ownership
        return {
            "draw_w": o.draw_w,
            "energy_kwh": o.energy_kwh,
            "energy_usd": o.energy_usd,
            "platform_usd": o.platform_usd,
            "resale_usd": o.resale_usd,
            "tco_usd": o.tco_usd,
            "cost_per_million_units": o.cost_per_million_units,
            "break_even_hours": self.break_even_hours,
        }

    def sentence(self) -> str:
        text = "; ".join(self.notes)
        return text[:1].upper() + text[1:] + "." if text else ""


def costed(
    data: OwnershipData,
    unit: str,
    slug: str,
    price_usd: float,
    count: int,
    tdp_w: float | None,
    throughput: float,
    costs: CostSettings,
    included: str | None,
) -> Costed:
    """`count` of GPU `slug` bought for `price_usd` in all, each drawing `tdp_w`, doing
    `throughput` `unit` per second: cost of ownership, cloud break-even and their account.
    `included`: why the price already pays for the platform (availability.platform_included),
    required so that no caller forgets a Mac's or an HGX unit's box is in its price."""
    retention = yearly_retention(data.history, slug, costs.horizon_years)
    launch_usd, age_years = data.launch.get(slug, (None, 0.0))
    paid = price_usd / count if count > 0 else 0.0
    worth = worth_after(paid, launch_usd, age_years, retention, costs.horizon_years)
    o = ownership(
        price_usd,
        count,
        tdp_w,
        throughput,
        unit,
        costs,
        platform_for(data.platforms, count, tdp_w, costs.host_power_w),
        retention,
        included,
        None if worth is None else worth * count,
    )
    notes = [*o.notes, *power_notes(o.draw_w)]
    offer = data.cheapest_cloud(slug)
    hours = None
    if offer is not None:
        rent = offer.usd_per_hour * count
        fixed = price_usd + o.platform_usd - o.resale_usd
        hours = break_even_hours(fixed, o.draw_w, costs.usd_per_kwh, rent)
        where = f"{offer.provider} ${offer.usd_per_hour:g}/GPU-hour, {offer.observed_at}"
        if hours is None:
            notes.append(f"renting ({where}) costs less than the power to own")
        else:
            notes.append(
                f"buying beats renting ({where}) after {hours:,.0f} hours "
                f"(~{hours / max(costs.hours_per_day, 1e-9) / 365:.1f} years at "
                f"{costs.hours_per_day:g} h/day)"
            )
    return Costed(o, offer, hours, tuple(notes))


def fits_power(
    tdp_w: float | None, count: int, costs: CostSettings, max_power_w: float | None
) -> bool:
    """A configuration's draw is within `max_power_w`. Under a limit a GPU that states no
    TDP (Apple's SoCs) is left out: nothing says it keeps to it, and its draw is not counted."""
    if max_power_w is None:
        return True
    if tdp_w is None:
        return False
    return tdp_w * count + (costs.host_power_w or 0.0) <= max_power_w


def cost_key(row: AnswerRow) -> tuple[bool, float, str]:
    """Order by cost of ownership per unit of work, rows without one last (/rankings)."""
    return row.cost_per_million_units is None, row.cost_per_million_units or 0.0, row.gpu


def per_dollar_key(row: AnswerRow) -> tuple[bool, float, str]:
    """Order by throughput per USD, unpriced rows last (/rankings)."""
    return row.perf_per_dollar is None, -(row.perf_per_dollar or 0.0), row.gpu


def per_watt_key(row: RankingItem) -> tuple[bool, float, str]:
    """Order by throughput per watt of TDP, rows without a TDP last (/rankings)."""
    return row.perf_per_watt is None, -(row.perf_per_watt or 0.0), row.gpu


def ranked_by_cost(items: list[Recommendation], limit: int, per: str) -> list[Recommendation]:
    """The `limit` recommendations cheapest per unit of work (more throughput first among equal
    costs), renumbered, each `why` saying it was ranked so ('#1 by cost of ownership per
    `per`; ' before its account, which keeps its place by throughput)."""
    ordered = sorted(items, key=lambda r: (*cost_key(r)[:2], -r.throughput, r.gpu))[:limit]
    for rank, item in enumerate(ordered, 1):
        item.rank = rank
        item.why = f"#{rank} by cost of ownership per {per}; " + item.why
    return ordered
