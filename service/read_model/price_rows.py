"""Price rows of the database as the domain's price observations."""

from service.domain.prices import PriceObservation
from service.models import Price


def observation(p: Price) -> PriceObservation:
    """A stored purchase price (its `usd` set) as an observation. A launch MSRP seeded from the
    catalog is stored with source `msrp` (the seed's marker) and its citation in `reference`;
    answers show the citation ("AMD Radeon PRO W7000 announcement 2023-04-13 ($3999)")."""
    assert p.usd is not None
    source = p.reference if p.source == "msrp" and p.reference else p.source
    return PriceObservation(p.usd, p.condition, source, p.observed_at, p.id or 0)
