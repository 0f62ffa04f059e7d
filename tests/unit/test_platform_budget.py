"""Platform rules: the box N GPUs go in, and what a budget pays beyond the GPUs."""

import pytest

from service.domain.tco import (
    PlatformCost,
    affordable_count,
    extra_platform_usd,
    per_watt,
    platform_for,
    powers,
)

BOXES = {
    1: PlatformCost(1, 865.0, 850, "pc"),
    2: PlatformCost(2, 2030.0, 1650, "two"),
    4: PlatformCost(4, 2485.0, None, "four"),
}


def test_a_count_without_a_row_takes_the_cheapest_box_that_holds_it():
    assert platform_for(BOXES, 2).source == "two"
    assert platform_for(BOXES, 3).source == "four"  # no 3-GPU row: the 4-GPU box, not $0
    assert platform_for(BOXES, 5) is None  # nothing sourced holds five


def test_the_cheapest_of_several_bigger_boxes():
    boxes = {**BOXES, 8: PlatformCost(8, 2100.0, None, "eight-cheap")}
    assert platform_for(boxes, 3).source == "eight-cheap"


def test_a_box_whose_stated_supplies_cannot_carry_the_cards_is_not_theirs():
    boxes = {**BOXES, 8: PlatformCost(8, 5242.0, 4200, "eight")}
    assert platform_for(boxes, 8, 350).source == "eight"  # 8 x 350 W: 2,800 W
    assert platform_for(boxes, 8, 575) is None  # 8 x 575 W: 4,600 W > 4,200 W
    assert platform_for(boxes, 2, 900).source == "four"  # 1,800 W > 1,650: the next box
    assert platform_for(boxes, 2, None).source == "two"  # no TDP stated: as before
    assert extra_platform_usd(boxes, 8, 575) is None


@pytest.mark.parametrize(
    ("count", "extra"), [(1, 0.0), (2, 2030.0 - 865.0), (3, 2485.0 - 865.0), (4, 1620.0)]
)
def test_extra_over_a_one_gpu_pc(count, extra):
    assert extra_platform_usd(BOXES, count) == pytest.approx(extra)


def test_extra_unknown_without_a_box_or_a_pc():
    assert extra_platform_usd(BOXES, 6) is None
    assert extra_platform_usd({4: BOXES[4]}, 2) is None  # no one-GPU PC to compare with
    assert extra_platform_usd({}, 1) == 0.0


def test_per_watt_counts_every_gpu_and_needs_a_stated_tdp() -> None:
    assert per_watt(900.0, 450.0, 1) == 2.0
    assert per_watt(900.0, 450.0, 2) == 1.0  # two cards draw twice the TDP
    assert per_watt(900.0, None, 1) is None and per_watt(900.0, 0.0, 1) is None


def test_a_count_the_budget_buys_counts_the_box_it_needs():
    """3 x $499 fit $1,500 by price alone; with the $1,079 box three GPUs need beyond a PC
    they do not, and neither do two ($998 + $624). Counts are those the ask runs, which may
    skip some (tensor-parallel decode: 1, 2, 4, 8)."""

    def box(n: int) -> float | None:
        return extra_platform_usd(BOXES, n)

    assert affordable_count(499.0, [1, 2, 3, 4], 1500.0, box) == 1
    assert affordable_count(499.0, [1, 2, 3, 4], 5000.0, box) == 4  # 4 x $499 + $1,620
    assert affordable_count(499.0, [1, 2], 5000.0, box) == 2  # at most the largest count
    assert affordable_count(1000.0, list(range(1, 9)), 5000.0, box) == 3  # no box holds five
    assert affordable_count(499.0, [1, 2, 4, 8], 3000.0, box) == 2  # 4 x $499 + $1,620 > $3,000
    assert affordable_count(499.0, [1, 2, 3, 4], 5000.0, lambda n: None) == 1  # no box


def test_the_supplies_carry_the_hosts_cpu_too():
    """The box's own CPU TDP counts beside the GPUs unless the asker states the host's power:
    7 x RTX 5090 (4,025 W) and an EPYC 7443P (200 W) are more than 4,200 W of supplies."""
    eight = PlatformCost(8, 5242.0, 4200, "eight", host_w=200.0)
    assert not powers(eight, 7, 575)
    assert powers(eight, 6, 575)  # 3,450 + 200 W
    assert powers(eight, 7, 575, host_w=150.0)  # the asker's host_power_w instead of the box's
    assert powers(eight, 7, 575, host_w=0.0)  # an asker's 0 W is theirs to state
    assert powers(PlatformCost(8, 5242.0, 4200, "eight"), 7, 575)  # no CPU named: GPUs only
