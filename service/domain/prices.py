"""Current price of a GPU: the newest observation per condition, within a maximum age."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from service.domain.vocabulary import ConditionChoice


@dataclass(frozen=True)
class PriceObservation:
    usd: float
    condition: str
    source: str
    observed_at: date
    id: int = 0


def current_price(
    observations: Iterable[PriceObservation],
    condition: ConditionChoice,
    today: date,
    max_age_days: int,
) -> PriceObservation | None:
    """Newest fresh observation of the condition; for `any`, the cheaper of new and used."""
    newest: dict[str, PriceObservation] = {}
    for obs in observations:
        if (today - obs.observed_at).days > max_age_days or obs.observed_at > today:
            continue
        best = newest.get(obs.condition)
        if best is None or (obs.observed_at, obs.id) > (best.observed_at, best.id):
            newest[obs.condition] = obs
    if condition != "any":
        return newest.get(condition)
    return min(newest.values(), key=lambda o: o.usd, default=None)
