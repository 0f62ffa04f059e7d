"""Current price of a GPU: the newest observation per kind, judged by its age.

Design decisions:
- Kinds (`condition`): `new` (street), `used`, `msrp` (launch list price) and `cloud` (per
  GPU-hour; never a purchase price, so never here). An MSRP stands in for a new street price
  only while the GPU is in production and only within the freshness window; once a GPU is
  discontinued its MSRP never prices it (nobody sells it new at launch price any more).
- A price older than `max_age_days` is *stale*: it is shown, marked, but used for ranking only
  when the caller allows stale prices (then an old street price first, else the MSRP of a GPU
  still in production). A price dated in the future is a typo and ignored.
- Between a fresh street price and a fresh MSRP for `new`, the street price wins (it is what a
  buyer pays today); between usable `new` and `used`, `any` takes the cheaper.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from service.domain.vocabulary import ConditionChoice

PURCHASE_KINDS = ("new", "used", "msrp")


@dataclass(frozen=True)
class PriceObservation:
    usd: float
    condition: str
    source: str
    observed_at: date
    id: int = 0


def bought_used(price: PriceObservation | None) -> bool:
    """Whether a configuration priced at `price` is bought used: a used card never beats a new
    one (llm_fit)."""
    return price is not None and price.condition == "used"


def age_days(obs: PriceObservation, today: date) -> int:
    return (today - obs.observed_at).days


def is_stale(obs: PriceObservation, today: date, max_age_days: int) -> bool:
    return age_days(obs, today) > max_age_days


def newest_by_kind(
    observations: Iterable[PriceObservation], today: date
) -> dict[str, PriceObservation]:
    """The newest observation of each purchase kind (ties: the later id), future dates dropped."""
    newest: dict[str, PriceObservation] = {}
    for obs in observations:
        if obs.observed_at > today or obs.condition not in PURCHASE_KINDS:
            continue
        best = newest.get(obs.condition)
        if best is None or (obs.observed_at, obs.id) > (best.observed_at, best.id):
            newest[obs.condition] = obs
    return newest


def _new_price(
    newest: dict[str, PriceObservation],
    today: date,
    max_age_days: int,
    in_production: bool,
    allow_stale: bool,
) -> PriceObservation | None:
    street = newest.get("new")
    msrp = newest.get("msrp") if in_production else None
    fresh = [o for o in (street, msrp) if o is not None and not is_stale(o, today, max_age_days)]
    if fresh:
        return fresh[0]  # street first
    if allow_stale:
        # an old street price first; else, for a GPU still made, its list price: what a
        # workstation card (RTX 6000 Ada, Radeon PRO W7900) is sold at, and what the caller
        # allowed by asking for older prices (a discontinued GPU's MSRP never prices it)
        return street or msrp
    return None


def current_price(
    observations: Iterable[PriceObservation],
    condition: ConditionChoice,
    today: date,
    max_age_days: int,
    in_production: bool = True,
    allow_stale: bool = False,
) -> PriceObservation | None:
    """The price a configuration is ranked at, or None when no usable price exists."""
    newest = newest_by_kind(observations, today)
    new = _new_price(newest, today, max_age_days, in_production, allow_stale)
    used = newest.get("used")
    if used is not None and not allow_stale and is_stale(used, today, max_age_days):
        used = None
    if condition == "new":
        return new
    if condition == "used":
        return used
    return min((o for o in (new, used) if o is not None), key=lambda o: o.usd, default=None)


def shown_price(
    observations: Iterable[PriceObservation],
    condition: ConditionChoice,
    today: date,
    in_production: bool = True,
) -> PriceObservation | None:
    """The newest price of the asked condition whatever its age (what an answer shows when no
    usable price exists); a discontinued GPU's MSRP is never shown as its price."""
    newest = newest_by_kind(observations, today)
    kinds = {"new": ("new", "msrp"), "used": ("used",), "any": ("new", "msrp", "used")}[condition]
    found = [newest[k] for k in kinds if k in newest and (k != "msrp" or in_production)]
    return max(found, key=lambda o: (o.observed_at, o.id), default=None)
