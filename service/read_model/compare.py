"""Rent or buy for one GPU configuration, from a snapshot: the same costing as /recommend."""

from service.core.errors import InvalidInput
from service.domain.availability import SYSTEM, purchase_counts
from service.domain.estimate import figure
from service.domain.matching import suggest
from service.domain.recommend import Candidate, basis_phrase, scaling_phrase
from service.domain.tco import CostSettings
from service.read_model.rows import price_info
from service.read_model.snapshot import Snapshot
from service.schemas.queries import MAX_GPUS
from service.schemas.tco import BuySide, CloudOfferOut, Comparison


def _check_holds(snapshot: Snapshot, cand: Candidate, count: int) -> None:
    """422 on a configuration /recommend would never offer: a count that cannot be bought (not
    a multiple of the unit a GPU is sold in; several complete computers on one job) or GPUs
    that cannot hold the workload (a model file split by layers over them, else each GPU the
    workload's memory)."""
    avail = cand.availability
    allowed = purchase_counts(avail, MAX_GPUS, one_job=True)
    if avail.purchasable and count not in allowed:
        why = (
            "a complete computer runs a job alone (several run independent jobs: "
            "/recommend?mode=independent)"
            if avail.sold_as == SYSTEM
            else f"it is sold in units of {avail.unit_gpus} GPUs"
        )
        raise InvalidInput.one(
            ("query", "count"),
            f"{count} x {cand.slug} cannot be bought to run one job: {why}; count may be "
            + ", ".join(str(n) for n in allowed),
            "count_not_available",
            allowed=allowed,
        )
    if not snapshot.splits_over("parallel", count):
        splits = snapshot.job_counts(avail, MAX_GPUS, "parallel")
        raise InvalidInput.one(
            ("query", "count"),
            f"{snapshot.workload.slug} decodes {snapshot.workload.model} tensor-parallel, which "
            f"needs its heads divisible among the GPUs; count may be "
            + ", ".join(str(n) for n in splits),
            "count_not_splittable",
            allowed=splits,
        )
    need = snapshot.min_memory_gb
    held = cand.memory_gb * count if snapshot.layer_split else cand.memory_gb
    if held < need:
        over = (
            f"{count} x {cand.memory_gb:g} GB" if snapshot.layer_split else f"{cand.memory_gb:g} GB"
        )
        raise InvalidInput.one(
            ("query", "count" if snapshot.layer_split else "gpu"),
            f"{snapshot.workload.slug} needs {need:g} GB"
            + (" over its GPUs" if snapshot.layer_split else " per GPU")
            + f"; {over} cannot hold it",
            "does_not_fit",
            needed_gb=need,
        )


def comparison(snapshot: Snapshot, slug: str, count: int, costs: CostSettings) -> Comparison:
    cand = snapshot.by_slug.get(slug)
    if cand is None:
        raise InvalidInput.one(
            ("query", "gpu"),
            f"no GPU {slug!r} with an estimate for {snapshot.workload.slug}",
            "unknown_gpu",
            suggestions=suggest(slug, snapshot.by_slug),
        )
    _check_holds(snapshot, cand, count)
    config = snapshot.configuration("parallel", "pytorch", cand, count)
    throughput = config.throughput
    offers = [
        CloudOfferOut(
            provider=o.provider,
            usd_per_hour=o.usd_per_hour,
            source=o.source,
            observed_at=o.observed_at,
        )
        for o in snapshot.ownership.cloud.get(slug, [])
    ]
    cheapest = offers[0] if offers else None
    hours = costs.hours
    rent = cheapest.usd_per_hour * count * hours if cheapest else None
    unit = snapshot.workload.unit
    what = slug if count == 1 else f"{count} x {slug}"
    buy, break_even = None, None
    notes = [
        f"{what}{scaling_phrase(config)} gives ~{figure(throughput)} {unit} "
        f"({basis_phrase(config, unit)})."
    ]
    unit_price = price_info(cand, snapshot)
    if unit_price is not None:
        total = unit_price.usd * count
        cost = snapshot.costed(
            slug,
            total,
            count,
            cand.tdp_w,
            throughput,
            costs,
            cand.availability.platform_included,
        )
        o = cost.ownership
        buy = BuySide(
            unit_price=unit_price,
            total_price_usd=total,
            draw_w=o.draw_w,
            energy_kwh=o.energy_kwh,
            energy_usd=o.energy_usd,
            platform_usd=o.platform_usd,
            resale_usd=o.resale_usd,
            tco_usd=o.tco_usd,
            cost_per_million_units=o.cost_per_million_units,
        )
        break_even = cost.break_even_hours
        if unit_price.stale:
            notes.append(
                f"Bought at the newest price, ${unit_price.usd:,.0f} {unit_price.condition} from "
                f"{unit_price.observed_at} ({unit_price.age_days} days old, older than the "
                f"{snapshot.max_price_age_days}-day window /recommend ranks at): today's may "
                "differ."
            )
        notes.append(cost.sentence())
    else:
        notes.append(f"{slug} has no current price: buying cannot be costed.")
    if cheapest is None:
        notes.append(f"No current cloud price for {slug}: renting cannot be costed.")
    elif rent is not None and buy is not None:
        cheaper = "buying" if buy.tco_usd < rent else "renting"
        notes.append(
            f"Over {hours:,.0f} hours, renting {count} GPU(s) at {cheapest.provider} costs "
            f"${rent:,.0f} against ${buy.tco_usd:,.0f} to own: {cheaper} is cheaper."
        )
        if count > 1:  # the feed prices single GPUs; a node of several may rent for more
            notes.append(
                f"The rent is {count} x the cheapest per-GPU offer; a {count}-GPU node with its "
                "interconnect may rent for more."
            )
    return Comparison(
        gpu=slug,
        name=cand.name,
        count=count,
        workload=snapshot.workload.slug,
        unit=snapshot.workload.unit,
        throughput=throughput,
        throughput_low=config.low,
        throughput_high=config.high,
        basis=config.basis,
        n=config.n,
        band=cand.estimate.band,
        scaling_factor=config.speedup,
        scaling_basis=config.scaling_basis,
        hours_over_horizon=hours,
        buy=buy,
        cheapest_cloud=cheapest,
        cloud_offers=offers,
        rent_usd_over_horizon=rent,
        break_even_hours=break_even,
        why=" ".join(n for n in notes if n),
    )
