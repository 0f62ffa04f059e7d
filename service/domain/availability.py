"""What can be bought: the GPU counts a buyer can order, and why a GPU cannot be offered.

Design decisions:
- A GPU sold only in units of `unit_gpus` (an 8-GPU HGX baseboard, an 8x OAM platform) is
  offered only in multiples of that unit; its per-GPU price is the unit's price / unit_gpus.
- A GPU sold only as a cloud rental (`sold_as` = cloud) is never offered for purchase.
- The reasons are phrased for the `hint` of an answer, naming what would make it offerable.
"""

from dataclasses import dataclass

CLOUD_ONLY = "cloud"
_UNIT_NAMES = {"hgx-8": "HGX platforms", "oam-8": "OAM platforms", "system": "systems"}


@dataclass(frozen=True)
class Availability:
    status: str = "in_production"  # in_production | discontinued | datacenter_only
    sold_as: str = "card"  # card | hgx-8 | oam-8 | system | cloud
    unit_gpus: int = 1

    @property
    def in_production(self) -> bool:
        return self.status == "in_production"

    @property
    def purchasable(self) -> bool:
        return self.sold_as != CLOUD_ONLY


def purchase_counts(availability: Availability, max_gpus: int) -> list[int]:
    """GPU counts that can be bought with at most `max_gpus` GPUs (multiples of the unit)."""
    if not availability.purchasable:
        return []
    unit = max(availability.unit_gpus, 1)
    return list(range(unit, max_gpus + 1, unit))


def exclusion(slug: str, availability: Availability, max_gpus: int) -> str | None:
    """Why `slug` cannot be offered within `max_gpus`, or None when some count can be bought."""
    if not availability.purchasable:
        return f"{slug} is sold only as a cloud rental, not for purchase"
    if purchase_counts(availability, max_gpus):
        return None
    unit = availability.unit_gpus
    what = _UNIT_NAMES.get(availability.sold_as, "units")
    return f"{slug} is sold only as {unit}-GPU {what}; raise max_gpus to {unit}"
