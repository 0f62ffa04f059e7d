"""What cost of ownership needs from the database, loaded once per snapshot: the platform table,
each GPU's newest used price against its launch price (tco.PriceHistory, what resale is
estimated from), and its current cloud offers (newest per provider)."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from sqlmodel import Session, select

from service.domain.tco import PlatformCost, PriceHistory
from service.models import Gpu, Platform, Price

DAYS_PER_YEAR = 365.25


@dataclass(frozen=True)
class CloudOffer:
    provider: str
    usd_per_hour: float
    source: str
    observed_at: date


@dataclass
class OwnershipData:
    platforms: dict[int, PlatformCost] = field(default_factory=dict)
    history: dict[str, PriceHistory] = field(default_factory=dict)
    cloud: dict[str, list[CloudOffer]] = field(default_factory=dict)  # cheapest first
    # slug -> (launch price, years since launch on the day the data is read as of)
    launch: dict[str, tuple[float, float]] = field(default_factory=dict)

    def cheapest_cloud(self, slug: str) -> CloudOffer | None:
        offers = self.cloud.get(slug)
        return offers[0] if offers else None


def platform_costs(session: Session) -> dict[int, PlatformCost]:
    """gpu_count -> host + PSU + chassis, for rows that price at least one part."""
    out: dict[int, PlatformCost] = {}
    for p in session.exec(select(Platform)).all():
        parts = [v for v in (p.host_usd, p.psu_usd, p.chassis_usd) if v is not None]
        if parts:
            out[p.gpu_count] = PlatformCost(p.gpu_count, sum(parts), p.psu_w, p.source, p.host_w)
    return out


def load_ownership(
    session: Session, today: date, max_age_days: int, prices: Sequence[Price] | None = None
) -> OwnershipData:
    """The ownership data as of `today`, from `prices` where the caller has already read every
    price row (the result does not depend on their order), else read here."""
    gpus = session.exec(select(Gpu)).all()
    slug_of = {g.id: g.slug for g in gpus}
    newest: dict[tuple[str, str], tuple[date, int, float]] = {}  # (slug, condition) -> newest usd
    cloud: dict[tuple[str, str], tuple[date, int, CloudOffer]] = {}  # (slug, provider)
    rows = prices if prices is not None else session.exec(select(Price)).all()
    for p in rows:
        slug = slug_of.get(p.gpu_id)
        age = (today - p.observed_at).days
        if slug is None or age < 0 or age > max_age_days:
            continue
        if p.usd_per_hour is not None and p.usd_per_hour > 0:
            offer = CloudOffer(p.provider or "unknown", p.usd_per_hour, p.source, p.observed_at)
            key = (slug, offer.provider)
            if key not in cloud or (p.observed_at, p.id or 0) >= cloud[key][:2]:
                cloud[key] = (p.observed_at, p.id or 0, offer)
        elif p.usd is not None and p.condition in ("new", "used"):
            ckey = (slug, p.condition)
            if ckey not in newest or (p.observed_at, p.id or 0) >= newest[ckey][:2]:
                newest[ckey] = (p.observed_at, p.id or 0, p.usd)
    history = {}
    for g in gpus:
        used = newest.get((g.slug, "used"))
        if used is None or not g.launch_price_usd or g.launch_date is None:
            continue
        age_years = (used[0] - g.launch_date).days / DAYS_PER_YEAR
        if age_years > 0 and used[2] > 0:
            history[g.slug] = PriceHistory(used[2] / g.launch_price_usd, age_years)
    offers: dict[str, list[CloudOffer]] = {}
    for (slug, _provider), (_d, _i, offer) in cloud.items():
        offers.setdefault(slug, []).append(offer)
    for listed in offers.values():
        listed.sort(key=lambda o: (o.usd_per_hour, o.provider))
    launch = {
        g.slug: (g.launch_price_usd, (today - g.launch_date).days / DAYS_PER_YEAR)
        for g in gpus
        if g.launch_price_usd and g.launch_date is not None
    }
    return OwnershipData(platform_costs(session), history, offers, launch)
