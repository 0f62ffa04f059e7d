"""Cost of ownership of a GPU configuration, and rent-or-buy break-even: pure, no I/O.

tco_usd = price + platform + energy - resale, over `horizon_years` of `hours_per_day` use.
Design decisions:
- Draw = TDP x count (+ host draw when the caller gives one): TDP is the sourced figure we have;
  a host's draw has no sourced default, so it counts 0 unless stated and `why` says so.
- Energy is priced at a flat $/kWh; the default is the EIA's US residential average
  (DEFAULT_USD_PER_KWH), overridable per request.
- Resale is a fraction of the purchase price at the end of the horizon: the caller's, else
  yearly retention ** horizon_years, new or used alike: a card loses value with age whoever owns
  it. Yearly retention is the GPU's own where it has been on sale at least the horizon
  (newest used price / launch price, to the power 1 / years since launch), else the median of
  the cards on sale at least that long, else 0 (stated in `why`). The used/new price ratio it
  replaces said what a card loses by becoming used, not by ageing, and whatever the horizon:
  a new RTX 5090 was credited 91% back after 3 years (TCO $2,179 on $5,258) while the same card
  bought used at $4,795 got nothing back (TCO $6,511). On the shipped prices (2026-12-06, the
  default 180-day window) the median over the 10 cards on sale 3+ years whose used price is
  below launch (RTX 30 and 40, RX 7900) is 0.880 a year: 68% after 3 (0.885 over 11 with the
  A10). The A10 (used = launch) counts for neither: a short market is not ageing, and it had
  been credited 100% back after any horizon, a TCO below its price. A card bought above its
  launch price (a shortage: an RTX 5090 used at $4,795 against $1,999 at launch) resells for
  no more than it will be worth then by its launch price and that retention (`worth_after`:
  launch price x yearly ** (its age at the horizon's end)); it would otherwise get its spike
  back, $3,266 after 3 years, and rank first on cost of ownership. At or below its launch
  price, a card keeps its fraction of what it cost.
- Platform (host + PSU + chassis) comes from a sourced table by GPU count: the row for that
  count, else the cheapest sourced box that holds more (3 GPUs go in the 4-GPU box: a figure
  that exists, never an interpolated one), of those whose stated power supplies carry the
  GPUs' TDP (and, for a budget, the caller's host draw: `powers`); no box that holds them means
  0 and `why` says so
  (/recommend does not offer such a count: recommend.within_budget); a
  caller's `platform_usd` replaces the table.
- Budget: a buyer of one card puts it in the PC they have; N cards need an N-GPU box. So a
  configuration of N > 1 cards fits a budget only with the box's extra cost over the one-GPU
  PC (`extra_platform_usd`) on top of the GPUs. Unknown for counts no sourced box holds (stated,
  counted 0); 0 when the caller gives `platform_usd` (they price the box themselves) and for GPUs
  sold as whole platforms (HGX/OAM units, whose price is the platform's) or complete computers
  (a Mac, a DGX Spark): their cost of ownership counts no platform either (`included`).
- Break-even hours compare buying (fixed cost price + platform - resale, plus energy per hour)
  with renting `count` GPUs at the cheapest cloud rate: fixed / (rent per hour - energy per hour).
"""

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

HOURS_PER_YEAR = 365 * 24
# EIA Electricity Monthly Update, data for April 2024 (released 2024-06-26): US residential
# average revenue per kWh 16.88 cents. https://www.eia.gov/electricity/monthly/update/end-use.php
DEFAULT_USD_PER_KWH = 0.1688
ELECTRICITY_SOURCE = "EIA Electricity Monthly Update, residential average, April 2024"
# A 15 A / 120 V branch circuit carries 1,800 W; a continuous load (3 h or more) may use 80% of
# it (NFPA 70 / NEC 210.20(A)): 1,440 W.
CONTINUOUS_LOAD_SHARE = 0.8
CIRCUIT_CONTINUOUS_W = 15 * 120 * CONTINUOUS_LOAD_SHARE
# Common North American branch circuits (amps, volts), smallest first: a wall outlet, a 20 A
# kitchen-style one, and the 240 V circuits servers plug into (NEMA L6-20, L6-30). Each carries
# amps x volts x CONTINUOUS_LOAD_SHARE of continuous load: 1,440, 1,920, 3,840 and 5,760 W.
CIRCUITS: tuple[tuple[int, int], ...] = ((15, 120), (20, 120), (20, 240), (30, 240))
# The largest ATX power supplies sold for desktops are rated 1,600 W (e.g. Corsair AX1600i,
# Seasonic PRIME TX-1600).
LARGEST_ATX_PSU_W = 1600.0


@dataclass(frozen=True)
class CostSettings:
    """What the asker assumes about use; None = the stated default."""

    horizon_years: float = 3.0
    hours_per_day: float = 8.0
    usd_per_kwh: float = DEFAULT_USD_PER_KWH
    resale: float | None = None  # fraction of the purchase price; None = yearly retention
    platform_usd: float | None = None  # replaces the platform table
    host_power_w: float | None = None  # added to the GPUs' TDP

    @property
    def hours(self) -> float:
        return self.hours_per_day * 365 * self.horizon_years


@dataclass(frozen=True)
class PlatformCost:
    """A sourced row of the platform table: host + PSU + chassis for `gpu_count` GPUs."""

    gpu_count: int
    usd: float
    psu_w: float | None
    source: str
    host_w: float | None = None  # its host CPU's TDP, where the source names the CPU


@dataclass(frozen=True)
class PriceHistory:
    """A GPU's newest used price as a fraction of its launch price, `age_years` after launch."""

    fraction: float
    age_years: float

    @property
    def yearly(self) -> float:
        return self.fraction ** (1 / self.age_years)


@dataclass(frozen=True)
class Retention:
    """The fraction of its value a card keeps per year, and what that rests on."""

    yearly: float
    basis: str


def yearly_retention(
    history: Mapping[str, PriceHistory], slug: str, horizon_years: float
) -> Retention | None:
    """The GPU's own yearly retention where it has been on sale at least `horizon_years`,
    else the median of the cards that have; None where none has. Only a used price below the
    launch price speaks for ageing: one at or above it (the A10's used $2,800 against $2,800 at
    launch) says the market is short, and had credited a card with 100% of its value back
    after any horizon (a TCO below its price)."""
    own = history.get(slug)
    if own is not None and own.age_years >= horizon_years and own.fraction < 1:
        return Retention(
            own.yearly,
            f"its used price {own.age_years:.1f} years after launch is {own.fraction:.0%} "
            "of its launch price",
        )
    long = [h.yearly for h in history.values() if h.age_years >= horizon_years and h.fraction < 1]
    if not long:
        return None
    return Retention(
        statistics.median(long),
        f"median of the {len(long)} cards on sale {horizon_years:g}+ years whose newest used "
        "price is below their launch price, against it",
    )


@dataclass(frozen=True)
class Ownership:
    draw_w: float | None
    energy_kwh: float
    energy_usd: float
    platform_usd: float
    resale_fraction: float
    resale_usd: float
    tco_usd: float
    cost_per_million_units: float | None
    notes: tuple[str, ...] = field(default=())


def powers(box: PlatformCost, count: int, tdp_w: float | None, host_w: float | None = None) -> bool:
    """Whether the box's power supplies (where the source states them) carry `count` GPUs of
    `tdp_w` each (where stated) and the host: the asker's `host_w` (host_power_w) where given,
    else the box's own CPU TDP (PlatformCost.host_w). 7 x RTX 5090 (4,025 W) had been put in
    the 8-GPU box, whose 4,200 W of supplies then leave 175 W for its 200 W EPYC 7443P, its
    memory and its fans; they need a bigger box, and none is sourced."""
    host = host_w if host_w is not None else (box.host_w or 0.0)
    return box.psu_w is None or not tdp_w or box.psu_w >= tdp_w * count + host


def platform_for(
    platforms: Mapping[int, PlatformCost],
    count: int,
    tdp_w: float | None = None,
    host_w: float | None = None,
) -> PlatformCost | None:
    """The sourced box for `count` GPUs of `tdp_w` each: its own row, else the cheapest that
    holds more, of those whose stated power supplies carry their draw. 8 x RTX 5090 (4,600 W)
    get no 8-GPU box built for 3090s on 4,200 W of supplies."""
    own = platforms.get(count)
    if own is not None and powers(own, count, tdp_w, host_w):
        return own
    bigger = [p for n, p in platforms.items() if n > count and powers(p, count, tdp_w, host_w)]
    return min(bigger, key=lambda p: (p.usd, p.gpu_count), default=None)


def extra_platform_usd(
    platforms: Mapping[int, PlatformCost],
    count: int,
    tdp_w: float | None = None,
    host_w: float | None = None,
) -> float | None:
    """What `count` GPUs of `tdp_w` each cost in platform beyond a one-GPU PC: 0 for one GPU;
    None when no sourced box holds `count` (and carries their draw) or no one-GPU PC is
    sourced to compare with."""
    if count <= 1:
        return 0.0
    box, pc = platform_for(platforms, count, tdp_w, host_w), platforms.get(1)
    if box is None or pc is None:
        return None
    return max(box.usd - pc.usd, 0.0)


def affordable_count(
    usd: float, counts: Sequence[int], budget: float, box: Callable[[int], float | None]
) -> int:
    """The largest of `counts` (ascending, the first a single unit) of GPUs at `usd` each that
    a budget buys with the box they need beyond a one-GPU PC (`box(n)`, as a recommendation
    counts it: budget_extra_usd; None: no sourced box holds them); the first where no more
    fit. Counted as the budget over the price alone, 3 x Arc Pro B60 at $499 were named as
    beating the first answer for $1,500, where the box for 3 GPUs adds $1,079."""
    for n in sorted(counts, reverse=True):
        if n <= 1:
            break
        extra = box(n)
        if extra is not None and n * usd + extra <= budget:
            return n
    return counts[0]


def budget_extra_usd(
    platforms: Mapping[int, PlatformCost],
    count: int,
    settings: CostSettings | None,
    included: str | None,
    tdp_w: float | None = None,
) -> float | None:
    """What a budget pays beyond the GPUs: nothing when their price includes the box
    (`included`, availability.platform_included) or the caller prices the platform
    (`platform_usd`), else the box's extra over a one-GPU PC (`extra_platform_usd`) for
    `count` GPUs of `tdp_w` each."""
    if included is not None or (settings is not None and settings.platform_usd is not None):
        return 0.0
    host_w = settings.host_power_w if settings is not None else None
    return extra_platform_usd(platforms, count, tdp_w, host_w)


def no_box_phrase(count: int, tdp_w: float | None) -> str:
    """Why no sourced box is counted for `count` GPUs of `tdp_w` each."""
    draw = f" drawing {tdp_w * count:,.0f} W" if tdp_w else ""
    return f"no sourced box for {count} GPUs{draw}"


def per_watt(throughput: float, tdp_w: float | None, count: int) -> float | None:
    """Throughput per watt of the GPUs' TDP (the guide's "per watt" beside "per dollar"); the
    host is not counted, as no default host draw is sourced. None without a stated TDP."""
    if tdp_w is None or not tdp_w > 0 or count < 1:
        return None
    return throughput / (tdp_w * count)


def tco(price: float, platform: float, energy: float, resale: float) -> float:
    """The sum, in one place so every answer adds up the same way."""
    return price + platform + energy - resale


def ownership(
    price_usd: float,
    count: int,
    tdp_w: float | None,
    throughput: float,
    unit: str,
    settings: CostSettings,
    platform: PlatformCost | None,
    retention: Retention | None,
    included: str | None = None,
    worth_at_end: float | None = None,
) -> Ownership:
    """Cost of owning `count` GPUs bought for `price_usd` in all, over the settings' horizon;
    `included` says why the price already pays for the platform (none is added);
    `worth_at_end`: what the `count` cards will be worth then (worth_after), which resale
    never passes."""
    notes: list[str] = []
    draw = _draw(count, tdp_w, settings, notes)
    energy_kwh = (draw or 0.0) * settings.hours / 1000
    energy_usd = energy_kwh * settings.usd_per_kwh
    if included is not None:
        platform_usd = 0.0
        notes.append(f"no platform counted: {included}")
    else:
        platform_usd = _platform(count, settings, platform, notes)
    fraction = _resale_fraction(settings, retention, notes)
    resale_usd = price_usd * fraction
    if settings.resale is None and worth_at_end is not None and resale_usd > worth_at_end:
        resale_usd, fraction = worth_at_end, worth_at_end / price_usd
        notes.append(
            f"resale held to ${worth_at_end:,.0f}, what the cards will be worth by their launch "
            "price and that retention (bought above their launch price)"
        )
    total = tco(price_usd, platform_usd, energy_usd, resale_usd)
    units = throughput * settings.hours * 3600
    millions = units / 1e6
    per_million = total / millions if millions > 0 and math.isfinite(total / millions) else None
    if per_million is not None:
        notes.insert(
            0,
            f"${total:,.0f} to own over {settings.horizon_years:g} years at "
            f"{settings.hours_per_day:g} h/day and ${settings.usd_per_kwh:g}/kWh: "
            f"${per_million:,.4g} per million {_unit_noun(unit)}",
        )
    return Ownership(
        draw,
        energy_kwh,
        energy_usd,
        platform_usd,
        fraction,
        resale_usd,
        total,
        per_million,
        tuple(notes),
    )


def break_even_hours(
    fixed_usd: float, draw_w: float | None, usd_per_kwh: float, rent_usd_per_hour: float
) -> float | None:
    """Hours of use after which owning is cheaper than renting; None when renting never
    costs more (the rent per hour does not exceed the owner's energy per hour)."""
    energy_per_hour = (draw_w or 0.0) / 1000 * usd_per_kwh
    margin = rent_usd_per_hour - energy_per_hour
    if margin <= 0:
        return None
    return max(fixed_usd, 0.0) / margin


def power_notes(draw_w: float | None) -> list[str]:
    """What a configuration's draw means for a desktop: circuit and power-supply limits."""
    if draw_w is None:
        return []
    notes = []
    if draw_w > LARGEST_ATX_PSU_W:
        notes.append(
            f"draws {draw_w:,.0f} W: beyond the largest common ATX power supplies "
            f"({LARGEST_ATX_PSU_W:,.0f} W); needs dual PSUs or a server chassis"
        )
    if draw_w > CIRCUIT_CONTINUOUS_W:
        notes.append(
            f"draws {draw_w:,.0f} W: beyond a 15 A/120 V circuit's {CIRCUIT_CONTINUOUS_W:,.0f} W "
            f"continuous load (80% rule, NEC 210.20(A)); needs {circuits_needed(draw_w)}"
        )
    return notes


def continuous_w(amps: int, volts: int) -> float:
    """The continuous load a branch circuit may carry (NEC 210.20(A))."""
    return amps * volts * CONTINUOUS_LOAD_SHARE


def circuits_needed(draw_w: float) -> str:
    """The smallest common circuit whose continuous load carries `draw_w`, else how many of
    the largest: 4,025 W is beyond one 20 A/240 V circuit's 3,840 W, which the note had
    offered for any draw over 1,440 W (an 8-GPU server's 8,000 W too)."""
    for amps, volts in CIRCUITS:
        if draw_w <= continuous_w(amps, volts):
            return f"a {amps} A/{volts} V circuit ({continuous_w(amps, volts):,.0f} W continuous)"
    amps, volts = CIRCUITS[-1]
    n = math.ceil(draw_w / continuous_w(amps, volts))
    return (
        f"{n} {amps} A/{volts} V circuits ({continuous_w(amps, volts):,.0f} W continuous "
        "each) or three-phase power"
    )


def _draw(
    count: int, tdp_w: float | None, settings: CostSettings, notes: list[str]
) -> float | None:
    if tdp_w is None:
        notes.append("no TDP known: energy not counted")
        return None
    draw = tdp_w * count
    if settings.host_power_w is not None:
        draw += settings.host_power_w
    else:
        notes.append("draw counts the GPUs' TDP only (pass host_power_w for the host)")
    return draw


def _platform(
    count: int, settings: CostSettings, platform: PlatformCost | None, notes: list[str]
) -> float:
    if settings.platform_usd is not None:
        notes.append(f"platform ${settings.platform_usd:,.0f} as given")
        return settings.platform_usd
    if platform is None:
        notes.append(f"no sourced platform cost for {count} GPU(s): platform counted as $0")
        return 0.0
    if platform.gpu_count != count:
        notes.append(
            f"platform ${platform.usd:,.0f}: the sourced {platform.gpu_count}-GPU box for "
            f"{count} GPU(s), none sourced for {count} ({platform.source})"
        )
    else:
        notes.append(f"platform ${platform.usd:,.0f} for {count} GPU(s) ({platform.source})")
    return platform.usd


def worth_after(
    paid_usd: float,
    launch_usd: float | None,
    age_years: float,
    retention: Retention | None,
    horizon_years: float,
) -> float | None:
    """What one card bought for `paid_usd` above its launch price, `age_years` past its launch,
    is worth `horizon_years` on: its launch price x yearly retention ** its age then; None for
    a card bought at or below its launch price (it keeps its fraction of what it cost), or
    without a launch price or a retention."""
    if not launch_usd or launch_usd <= 0 or retention is None or paid_usd <= launch_usd:
        return None
    kept = max(retention.yearly, 0.0) ** (max(age_years, 0.0) + horizon_years)
    return launch_usd * min(kept, 1.0)


def _resale_fraction(
    settings: CostSettings, retention: Retention | None, notes: list[str]
) -> float:
    if settings.resale is not None:
        return settings.resale
    years = settings.horizon_years
    if retention is None:
        notes.append(f"no card on sale {years:g}+ years with a used price: resale counted as $0")
        return 0.0
    fraction = min(max(retention.yearly, 0.0) ** years, 1.0)
    notes.append(
        f"resale {fraction:.0%} of the price after {years:g} years (keeps "
        f"{retention.yearly:.1%} a year: {retention.basis})"
    )
    return fraction


def _unit_noun(unit: str) -> str:
    """'images/s' -> 'images': the thing a million of which is priced."""
    return unit.split("/")[0] or unit
