"""What can be bought: the GPU counts a buyer can order, and why a GPU cannot be offered.

Design decisions:
- A GPU sold only in units of `unit_gpus` (an 8-GPU HGX baseboard, an 8x OAM platform) is
  offered only in multiples of that unit; its per-GPU price is the unit's price / unit_gpus.
- A GPU sold only as a cloud rental (`sold_as` = cloud) is never offered for purchase.
- A GPU sold as a complete computer (`system`: a Mac Studio, a DGX Spark, a GH200 node) or as a
  whole platform (`unit_gpus` > 1) comes with its box: its cost of ownership adds no PC and a
  budget adds no multi-GPU box for it (`platform_included`).
- A complete computer is one unit of a job that runs on several GPUs together (data or tensor
  parallel): several are linked by a network (Thunderbolt, Ethernet, ConnectX) that no scaling
  profile here measures, and the PCIe box profile assumed for them put 4 Mac Studios at 3.72x
  one. Several of them still run independent jobs (`mode=independent`).
- The reasons are phrased for the `hint` of an answer, naming what would make it offerable.
"""

from dataclasses import dataclass
from functools import cached_property

CLOUD_ONLY = "cloud"
SYSTEM = "system"  # sold as a complete computer
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

    @cached_property  # read for every configuration an ask prices
    def platform_included(self) -> str | None:
        """Why the price already pays for the box around the GPU; None for a card."""
        return platform_included(self.sold_as, self.unit_gpus)


def platform_included(sold_as: str, unit_gpus: int) -> str | None:
    """Why a GPU sold as `sold_as` in units of `unit_gpus` needs no box bought beside it."""
    if sold_as == SYSTEM:
        return "sold as a complete computer, whose price includes it"
    if unit_gpus > 1:
        return f"sold as {unit_gpus}-GPU platforms, whose price includes the box"
    return None


def most_on_one_job(sold_as: str, max_gpus: int) -> int:
    """The most GPUs sold as `sold_as` that one job may run on together: a complete computer
    alone (module docstring), anything else up to `max_gpus`."""
    return min(max_gpus, 1) if sold_as == SYSTEM else max_gpus


def purchase_counts(availability: Availability, max_gpus: int, one_job: bool = False) -> list[int]:
    """GPU counts that can be bought with at most `max_gpus` GPUs (multiples of the unit); for
    `one_job` (GPUs that run one job together) as many as `most_on_one_job` allows."""
    if not availability.purchasable:
        return []
    if one_job:
        max_gpus = most_on_one_job(availability.sold_as, max_gpus)
    unit = max(availability.unit_gpus, 1)
    return list(range(unit, max_gpus + 1, unit))


def exclusion(slug: str, availability: Availability, max_gpus: int) -> str | None:
    """Why `slug` cannot be offered within `max_gpus`, or None when some count can be bought."""
    if not availability.purchasable:
        return f"{slug} is sold only as a cloud rental, not for purchase"
    if max(availability.unit_gpus, 1) <= max_gpus:  # purchase_counts is not empty
        return None
    unit = availability.unit_gpus
    what = _UNIT_NAMES.get(availability.sold_as, "units")
    return f"{slug} is sold only as {unit}-GPU {what}; raise max_gpus to {unit}"
