"""Cost of ownership on /recommend and /rankings, and rent or buy on /compare."""

import math
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlmodel import Session, select

from service.catalog import loaders
from service.domain.tco import (
    CIRCUIT_CONTINUOUS_W,
    LARGEST_ATX_PSU_W,
    CostSettings,
    PlatformCost,
    PriceHistory,
    Retention,
    break_even_hours,
    circuits_needed,
    extra_platform_usd,
    ownership,
    power_notes,
    worth_after,
    yearly_retention,
)
from service.models import Gpu, Price

ASK = {"budget": 5000, "horizon_years": 3, "electricity_usd_per_kwh": 0.3, "hours_per_day": 12}
HOURS = 12 * 365 * 3
money = st.floats(min_value=0, max_value=1e7, allow_nan=False, allow_infinity=False)


@given(
    price=money,
    count=st.integers(1, 8),
    tdp=st.one_of(st.none(), st.floats(1, 2000)),
    throughput=st.floats(0, 1e7),
    years=st.floats(0.1, 20),
    hours=st.floats(0.1, 24),
    kwh=st.floats(0, 10),
    resale=st.one_of(st.none(), st.floats(0, 1)),
    yearly=st.one_of(st.none(), st.floats(0, 3)),
    platform=st.one_of(st.none(), money),
    host=st.one_of(st.none(), st.floats(0, 2000)),
)
def test_tco_is_price_plus_platform_plus_energy_minus_resale(
    price, count, tdp, throughput, years, hours, kwh, resale, yearly, platform, host
):
    settings = CostSettings(years, hours, kwh, resale, None, host)
    table = PlatformCost(count, platform, None, "test") if platform is not None else None
    retention = None if yearly is None else Retention(yearly, "test")
    o = ownership(price, count, tdp, throughput, "images/s", settings, table, retention)
    assert o.tco_usd == price + o.platform_usd + o.energy_usd - o.resale_usd
    assert o.platform_usd == (platform if platform is not None else 0.0)
    draw = None if tdp is None else tdp * count + (host or 0.0)
    assert o.draw_w == draw
    assert o.energy_kwh == pytest.approx((draw or 0) * hours * 365 * years / 1000)
    assert o.energy_usd == pytest.approx(o.energy_kwh * kwh)
    kept = 0.0 if yearly is None else min(yearly**years, 1.0)
    fraction = resale if resale is not None else kept
    assert o.resale_usd == pytest.approx(price * fraction)
    assert 0 <= o.resale_usd <= price
    millions = throughput * (hours * 365 * years) * 3600 / 1e6  # the domain's order: hours first
    if millions > 0 and math.isfinite(o.tco_usd / millions):
        assert o.cost_per_million_units == pytest.approx(o.tco_usd / millions)
    else:  # no work, or so little that the cost per million overflows
        assert o.cost_per_million_units is None


@given(fixed=money, draw=st.floats(0, 5000), kwh=st.floats(0, 1), rent=st.floats(0.01, 100))
def test_break_even_is_where_owning_and_renting_cost_the_same(fixed, draw, kwh, rent):
    hours = break_even_hours(fixed, draw, kwh, rent)
    energy_per_hour = draw / 1000 * kwh
    if rent <= energy_per_hour:
        assert hours is None
    else:
        assert hours is not None
        assert fixed + energy_per_hour * hours == pytest.approx(rent * hours, rel=1e-9, abs=1e-6)


def test_power_notes_name_circuit_and_power_supply_limits():
    assert power_notes(CIRCUIT_CONTINUOUS_W) == []
    over_circuit = power_notes(CIRCUIT_CONTINUOUS_W + 1)
    assert len(over_circuit) == 1 and "15 A/120 V" in over_circuit[0]
    over_psu = power_notes(LARGEST_ATX_PSU_W + 1)
    assert len(over_psu) == 2 and any("power supplies" in n for n in over_psu)


@pytest.mark.parametrize(
    ("draw_w", "needs"),
    [
        (1441, "a 20 A/120 V circuit (1,920 W continuous)"),
        (1921, "a 20 A/240 V circuit (3,840 W continuous)"),
        (4025, "a 30 A/240 V circuit (5,760 W continuous)"),  # 7 x RTX 5090
        (14300, "3 30 A/240 V circuits (5,760 W continuous each) or three-phase power"),
    ],
)
def test_the_circuit_named_carries_the_draw(draw_w, needs):
    """The note names the smallest common circuit that carries the draw at 80% continuous
    load, not a 20 A or 240 V circuit for any draw (a 20 A/240 V one carries 3,840 W)."""
    assert circuits_needed(draw_w) == needs
    assert needs in power_notes(draw_w)[-1]


def test_a_box_holds_gpus_whose_draw_and_the_hosts_its_supplies_carry():
    """7 x RTX 5090 (575 W each, 4,025 W) fit an 8-GPU box on 4,200 W of supplies by their
    TDP alone; with the asker's 300 W host they do not, and no sourced box is counted."""
    boxes = {
        1: PlatformCost(1, 1000.0, 850.0, "pc"),
        8: PlatformCost(8, 5000.0, 4200.0, "rig"),
    }
    assert extra_platform_usd(boxes, 7, 575.0) == 4000.0
    assert extra_platform_usd(boxes, 7, 575.0, host_w=300.0) is None
    assert extra_platform_usd(boxes, 6, 575.0, host_w=300.0) == 4000.0  # 3,750 W


def _add_price(engine, slug, days_ago=0, **fields):
    with Session(engine) as session:
        gpu = session.exec(select(Gpu).where(Gpu.slug == slug)).one()
        today = datetime.now(UTC).date()
        session.add(
            Price(
                gpu_id=gpu.id, source="test", observed_at=today - timedelta(days=days_ago), **fields
            )
        )
        session.commit()


def test_recommend_items_carry_cost_fields_that_add_up(client):
    body = client.get("/recommend", params=ASK).json()
    items = body["recommendations"]
    assert items
    for r in items:
        total = r["total_price_usd"]
        assert r["tco_usd"] == total + r["platform_usd"] + r["energy_usd"] - r["resale_usd"]
        assert r["draw_w"] == pytest.approx(r["tdp_w"])
        assert r["energy_kwh"] == pytest.approx(r["draw_w"] * HOURS / 1000)
        assert r["energy_usd"] == pytest.approx(r["energy_kwh"] * 0.3)
        units = r["throughput"] * HOURS * 3600
        assert r["cost_per_million_units"] == pytest.approx(r["tco_usd"] / (units / 1e6))
        assert "to own over 3 years" in r["why"]
        assert r["break_even_hours"] is None  # no cloud prices in this database


def test_platform_cost_comes_from_the_sourced_table_or_is_zero_and_said(client):
    """The row for the count, else the cheapest sourced box that holds more, else $0 (said)."""
    rows = {p.gpu_count: p for p in loaders.load_platforms()}

    def usd(row):
        return sum(v for v in (row.host_usd, row.psu_usd, row.chassis_usd) if v is not None)

    ask = ASK | {"budget": 20000, "limit": 50, "max_gpus": 8}
    body = client.get("/recommend", params=ask).json()
    counts = set()
    for r in body["recommendations"]:
        n = r["count"]
        if r["sold_as"] == "system" or r["unit_gpus"] > 1:
            continue  # its price includes the box (the next test)
        counts.add(n)
        holds = [row for c, row in rows.items() if c >= n]
        if not holds:
            assert r["platform_usd"] == 0
            assert f"no sourced platform cost for {n} GPU(s)" in r["why"]
            continue
        box = rows.get(n) or min(holds, key=lambda row: (usd(row), row.gpu_count))
        assert r["platform_usd"] == pytest.approx(usd(box))
        assert box.source in r["why"]
        if box.gpu_count != n:
            assert f"the sourced {box.gpu_count}-GPU box for {n} GPU(s)" in r["why"]
    assert len(counts) > 1
    given = client.get("/recommend", params=ASK | {"platform_usd": 777, "resale": 0.5}).json()
    for r in given["recommendations"]:
        assert r["platform_usd"] == 777
        assert r["resale_usd"] == pytest.approx(0.5 * r["total_price_usd"])


def test_a_complete_computer_or_whole_platform_carries_no_platform_cost(client):
    """A Mac, a DGX Spark or a GH200 node is a computer and an HGX unit is its own box: no PC
    is added to what they cost to own, and a budget adds no multi-GPU box for several. Cards
    keep the sourced box."""
    costs = {k: v for k, v in ASK.items() if k != "budget"}
    ranked = client.get("/rankings", params=costs | {"workload": "llama-3-8b-q4_k_m-tg512"}).json()
    priced = [r for r in ranked["items"] if r["tco_usd"] is not None]
    boxed = {r["gpu"] for r in priced if r["sold_as"] == "system" or r["unit_gpus"] > 1}
    assert boxed and any(r["sold_as"] == "card" for r in priced)
    for r in priced:
        if r["gpu"] in boxed:
            assert r["platform_usd"] == 0
        else:
            assert r["platform_usd"] > 0
    ask = {"model": "llama-3.1-70b", "quant": "q4_k_m", "budget": 500000, "max_gpus": 8}
    recs = client.get("/recommend", params=ask | {"limit": 50}).json()["recommendations"]
    systems = [r for r in recs if r["sold_as"] == "system"]
    assert systems and any(r["sold_as"] == "card" for r in recs)
    for r in systems:
        assert r["platform_usd"] == 0
        assert "no platform counted: sold as a complete computer" in r["why"]
        assert "GPUs over a one-GPU PC" not in r["why"]


def test_a_four_gpu_configuration_carries_the_sourced_four_gpu_platform(client):
    """The 4-GPU box (board with four x16 slots, big PSU, frame) is priced, not free."""
    row = next(p for p in loaders.load_platforms() if p.gpu_count == 4)
    table_usd = sum(v for v in (row.host_usd, row.psu_usd, row.chassis_usd) if v is not None)
    ask = ASK | {"workload": "resnet50-train", "max_gpus": 4, "limit": 50}
    body = client.get("/recommend", params=ask).json()
    fours = [r for r in body["recommendations"] if r["count"] == 4]
    assert fours, "a $5,000 budget should reach some 4-GPU configuration"
    for r in fours:
        assert r["platform_usd"] > 0
        assert r["platform_usd"] == pytest.approx(table_usd)
        assert "platform counted as $0" not in r["why"]
        assert f"for 4 GPU(s) ({row.source})" in r["why"]
        assert r["tco_usd"] >= r["total_price_usd"] + r["platform_usd"] - r["resale_usd"]


RESALE_GPU = "nvidia-rtx-4090"


def _row(client, **params):
    items = client.get("/rankings", params=params).json()["items"]
    return next(i for i in items if i["gpu"] == RESALE_GPU)


def test_resale_is_yearly_retention_over_the_horizon_new_or_used_alike(db, client):
    """A card keeps its own yearly retention (newest used price / launch price, per year since
    launch) where it has been on sale at least the horizon, new or used; the horizon counts.
    Bought new at $2,000, above what ageing leaves of its $1,599 launch price, it resells for
    what the used card will be worth then, as one bought used does: its age counts, not who
    owned it."""
    gpu = next(g for g in loaders.load_gpus() if g.slug == RESALE_GPU)
    _add_price(db, RESALE_GPU, usd=2000.0, condition="new")
    _add_price(db, RESALE_GPU, usd=1200.0, condition="used")
    client.app.state.read_model.changed()  # written behind the app's back
    age = (datetime.now(UTC).date() - gpu.launch_date).days / 365.25
    assert age >= 4  # launched 2022: its own retention counts at 3 and 4 years
    yearly = (1200.0 / gpu.launch_price_usd) ** (1 / age)
    new, used = _row(client, condition="new"), _row(client, condition="used")
    assert (new["price"]["usd"], used["price"]["usd"]) == (2000.0, 1200.0)
    assert used["resale_usd"] == pytest.approx(1200.0 * min(yearly**3, 1.0))
    worth = gpu.launch_price_usd * yearly ** (age + 3)
    assert new["resale_usd"] == pytest.approx(worth, rel=1e-3)
    assert worth < 2000.0 * yearly**3
    assert new["resale_usd"] == pytest.approx(used["resale_usd"], rel=1e-3)
    assert 0 < used["resale_usd"] < 1200.0
    four = _row(client, condition="used", horizon_years=4)
    assert four["resale_usd"] == pytest.approx(1200.0 * min(yearly**4, 1.0))
    assert four["resale_usd"] < used["resale_usd"]
    told = _row(client, condition="used", resale=0.4)
    assert told["resale_usd"] == pytest.approx(480.0)


def test_a_card_younger_than_the_horizon_takes_the_median_of_older_cards():
    history = {
        "old-a": PriceHistory(0.5, 4.0),
        "old-b": PriceHistory(0.8, 3.0),
        "old-c": PriceHistory(0.9, 5.0),
        "young": PriceHistory(2.0, 1.5),  # above its launch price: too young to say
    }
    olds = sorted(h.yearly for k, h in history.items() if k != "young")
    found = yearly_retention(history, "young", 3.0)
    assert found is not None and found.yearly == pytest.approx(olds[1])
    assert "median of the 3 cards on sale 3+ years" in found.basis
    own = yearly_retention(history, "old-a", 3.0)
    assert own is not None and own.yearly == pytest.approx(0.5**0.25)
    assert yearly_retention(history, "young", 10.0) is None
    o = ownership(1000.0, 1, 300.0, 1.0, "images/s", CostSettings(), None, None)
    assert o.resale_usd == 0 and any("resale counted as $0" in n for n in o.notes)


def test_a_used_price_at_or_above_launch_says_nothing_of_ageing():
    """The A10's used price equals its launch price: its own history would keep 100% a year
    (a TCO below its price). It takes the median of the cards whose used price is below their
    launch price instead, and it does not pull that median up either."""
    history = {
        "a10": PriceHistory(1.0, 5.4),
        "old-a": PriceHistory(0.5, 4.0),
        "old-b": PriceHistory(0.8, 3.0),
        "old-c": PriceHistory(0.9, 5.0),
    }
    found = yearly_retention(history, "a10", 3.0)
    assert found is not None and found.yearly == pytest.approx(0.8 ** (1 / 3))
    assert found.yearly < 1 and "median of the 3 cards" in found.basis


def test_sort_tco_ranks_by_cost_per_unit_of_work(client):
    recs = client.get("/recommend", params=ASK | {"sort": "tco", "limit": 10}).json()
    costs = [r["cost_per_million_units"] for r in recs["recommendations"]]
    assert costs and costs == sorted(costs)
    assert recs["recommendations"][0]["why"].startswith("#1 by cost of ownership")
    ranked = client.get("/rankings", params={"sort": "tco"}).json()
    assert ranked["sort"] == "tco"
    known = [i["cost_per_million_units"] for i in ranked["items"]]
    priced = [c for c in known if c is not None]
    assert priced == sorted(priced) and known[: len(priced)] == priced


def test_max_power_w_limits_draw_and_big_draws_say_so(client):
    limited = client.get("/recommend", params=ASK | {"max_power_w": 500, "limit": 20}).json()
    assert limited["recommendations"]
    assert all(r["draw_w"] is not None and r["draw_w"] <= 500 for r in limited["recommendations"])
    none = client.get("/recommend", params=ASK | {"max_power_w": 1}).json()
    assert none["recommendations"] == []
    named = re.search(
        r"max_power_w=1 counts each GPU's TDP.*the lowest .* is (\S+) at (\d+) W", none["hint"]
    )
    assert named, none["hint"]
    assert client.get(f"/gpus/{named.group(1)}").json()["tdp_w"] == float(named.group(2))
    macs = {"budget": 50000, "stack": "metal", "max_power_w": 5000, "allow_stale": True}
    unstated = client.get("/recommend", params=macs).json()
    assert unstated["recommendations"] == [] and "states a TDP" in unstated["hint"]
    big = client.get(
        "/recommend", params={"budget": 100000, "max_gpus": 8, "limit": 50, "mode": "independent"}
    ).json()["recommendations"]
    loud = [r for r in big if r["draw_w"] and r["draw_w"] > LARGEST_ATX_PSU_W]
    assert loud
    for r in big:
        assert ("15 A/120 V" in r["why"]) == (r["draw_w"] is not None and r["draw_w"] > 1440)


def test_compare_answers_cheapest_cloud_offer_and_break_even(db, client):
    slug = client.get("/recommend", params=ASK).json()["recommendations"][0]["gpu"]
    _add_price(db, slug, usd_per_hour=0.9, provider="alpha", condition="cloud", days_ago=30)
    _add_price(db, slug, usd_per_hour=0.5, provider="alpha", condition="cloud")  # newest wins
    _add_price(db, slug, usd_per_hour=0.7, provider="beta", condition="cloud")
    client.app.state.read_model.changed()  # written behind the app's back
    costs = {k: v for k, v in ASK.items() if k != "budget"}  # /compare takes no budget
    body = client.get("/compare", params={"gpu": slug, "count": 2, **costs}).json()
    assert [o["provider"] for o in body["cloud_offers"]] == ["alpha", "beta"]
    cheapest = body["cheapest_cloud"]
    assert cheapest["usd_per_hour"] == 0.5 and cheapest["source"] and cheapest["observed_at"]
    buy = body["buy"]
    fixed = buy["total_price_usd"] + buy["platform_usd"] - buy["resale_usd"]
    energy_per_hour = buy["draw_w"] / 1000 * 0.3
    expected = fixed / (2 * 0.5 - energy_per_hour)
    assert body["break_even_hours"] == pytest.approx(expected)
    assert body["rent_usd_over_horizon"] == pytest.approx(2 * 0.5 * HOURS)
    assert "2 x the cheapest per-GPU offer" in body["why"]  # a 2-GPU node may rent for more
    assert (
        buy["tco_usd"]
        == buy["total_price_usd"] + buy["platform_usd"] + buy["energy_usd"] - (buy["resale_usd"])
    )
    recs = client.get("/recommend", params=ASK).json()
    for r in recs["recommendations"]:
        if r["gpu"] == slug:
            assert r["break_even_hours"] is not None and "buying beats renting" in r["why"]
        else:
            assert r["break_even_hours"] is None
    assert any(r["gpu"] == slug for r in recs["recommendations"])


def test_compare_says_when_it_buys_at_a_price_older_than_the_window(db, client):
    priced = {p.gpu for p in loaders.load_prices() if p.kind != "cloud"}
    slug = next(g.slug for g in loaders.load_gpus() if g.slug not in priced and g.tdp_w)
    _add_price(db, slug, usd=900.0, condition="used", days_ago=36_600)  # the tests window: 36,500
    client.app.state.read_model.changed()
    old = client.get("/compare", params={"gpu": slug, "workload": "resnet50-train"}).json()
    assert old["buy"]["unit_price"]["stale"] and "36600 days old" in old["why"]
    _add_price(db, slug, usd=950.0, condition="used", days_ago=3)
    client.app.state.read_model.changed()
    fresh = client.get("/compare", params={"gpu": slug, "workload": "resnet50-train"}).json()
    assert not fresh["buy"]["unit_price"]["stale"] and "days old" not in fresh["why"]


def test_compare_counts_a_measured_multi_gpu_value_for_an_unpriced_gpu_too(client, keys):
    """/compare answers throughput as /recommend counts it: 2 x a GPU measured at 2 is its
    measured median, priced or not (it took the scaling profile where no current price was)."""
    priced = {p.gpu for p in loaders.load_prices() if p.kind != "cloud"}
    slug = next(g.slug for g in loaders.load_gpus() if g.slug not in priced and g.tdp_w)
    rows = [
        {
            "gpu": slug,
            "workload": "resnet50-train",
            "value": v,
            "precision": "fp16",
            "framework": "pytorch",
            "gpu_count": n,
        }
        for n, values in ((1, (300.0, 305.0, 310.0)), (2, (530.0, 540.0, 550.0)))
        for v in values
    ]
    posted = client.post("/results", json={"results": rows}, headers=keys.auth(keys.submitter))
    assert posted.status_code == 201, posted.text
    body = client.get("/compare", params={"gpu": slug, "count": 2, "workload": "resnet50-train"})
    assert body.json()["throughput"] == pytest.approx(540.0)


def test_compare_without_cloud_prices_or_for_an_unknown_gpu(client):
    rented = {p.gpu for p in loaders.load_prices() if p.kind == "cloud"}  # shipped cloud prices
    gpu = next(g.slug for g in loaders.load_gpus() if g.slug not in rented)
    body = client.get("/compare", params={"gpu": gpu}).json()
    assert body["cheapest_cloud"] is None and body["break_even_hours"] is None
    assert "No current cloud price" in body["why"]
    unknown = client.get("/compare", params={"gpu": "nvidia-rtx-4091"})
    assert unknown.status_code == 422
    (error,) = unknown.json()["detail"]
    assert error["loc"] == ["query", "gpu"] and "nvidia-rtx-4090" in error["suggestions"]


def test_the_budget_pays_for_the_box_several_cards_need(client):
    """N > 1 cards fit a budget only with their box's extra cost over a one-GPU PC on top; a
    caller who prices the platform (platform_usd) gets a budget for the GPUs alone."""
    rows = {p.gpu_count: p for p in loaders.load_platforms()}

    def usd(row):
        return sum(v for v in (row.host_usd, row.psu_usd, row.chassis_usd) if v is not None)

    def extra(n):
        holds = [r for c, r in rows.items() if c >= n]
        box = rows.get(n) or min(holds, key=lambda r: (usd(r), r.gpu_count))
        return usd(box) - usd(rows[1])

    ask = ASK | {"workload": "resnet50-train", "budget": 3000, "max_gpus": 4, "limit": 50}
    recs = client.get("/recommend", params=ask).json()["recommendations"]
    multi = [r for r in recs if r["count"] > 1]
    assert multi, "a $3,000 budget should still reach a 2-GPU configuration of cheap cards"
    for r in recs:
        assert r["total_price_usd"] + (extra(r["count"]) if r["count"] > 1 else 0) <= 3000
    for r in multi:
        assert f"for the box of {r['count']} GPUs over a one-GPU PC" in r["why"]
    gpus_only = client.get("/recommend", params=ask | {"platform_usd": 0}).json()
    widest = max(r["total_price_usd"] for r in gpus_only["recommendations"])
    assert widest > max(r["total_price_usd"] for r in recs)  # the box no longer eats budget


def test_a_model_split_over_several_cards_pays_for_their_box(client):
    """LLM asks too: a 70B model on two 24 GB cards needs the 2-GPU box within the budget."""
    ask = {"model": "llama-3.1-70b", "quant": "q4_k_m", "budget": 20000, "max_gpus": 4}
    ask |= {"limit": 50}  # one 48 GB card ranks above two 24 GB ones in its tier
    recs = client.get("/recommend", params=ask).json()["recommendations"]
    multi = [r for r in recs if r["count"] > 1]
    assert multi
    for r in multi:
        assert f"for the box of {r['count']} GPUs over a one-GPU PC" in r["why"]
    tight = client.get("/recommend", params=ask | {"budget": multi[-1]["total_price_usd"]})
    body = tight.json()
    assert all(
        r["count"] == 1 or r["total_price_usd"] < multi[-1]["total_price_usd"]
        for r in body["recommendations"]
    )


@pytest.mark.parametrize(
    ("params", "field", "kind"),
    [
        # a 12 GB card cannot hold a 40 GB model file (llama.cpp splits it by layers over N)
        (
            {"gpu": "nvidia-rtx-3060", "workload": "llama-3-70b-q4_k_m-tg512"},
            "count",
            "does_not_fit",
        ),
        # a complete computer runs a job alone; several run independent jobs
        ({"gpu": "apple-m3-ultra", "count": 4}, "count", "count_not_available"),
        # sold as 8-GPU platforms only
        ({"gpu": "nvidia-b200", "count": 3}, "count", "count_not_available"),
    ],
)
def test_compare_refuses_what_recommend_would_never_offer(client, params, field, kind):
    response = client.get("/compare", params=params)
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert (error["loc"], error["type"]) == (["query", field], kind)


def test_compare_takes_a_split_that_holds_the_model_and_a_whole_platform(client):
    held = {"gpu": "nvidia-rtx-3090", "count": 2, "workload": "llama-3-70b-q4_k_m-tg512"}
    assert client.get("/compare", params=held).status_code == 200
    assert client.get("/compare", params={"gpu": "nvidia-b200", "count": 8}).status_code == 200
    assert client.get("/compare", params={"gpu": "apple-m3-ultra"}).status_code == 200


def test_rankings_of_a_model_file_keep_its_memory_whatever_min_memory_gb_asks(client):
    ask = {"workload": "llama-3-70b-q4_k_m-tg512"}
    own = client.get("/rankings", params=ask).json()["items"]
    loose = client.get("/rankings", params=ask | {"min_memory_gb": 0}).json()["items"]
    assert own and [i["gpu"] for i in loose] == [i["gpu"] for i in own]
    need = client.get("/workloads/llama-3-70b-q4_k_m-tg512").json()["min_memory_gb"]
    assert all(i["memory_gb"] >= need for i in loose)
    wider = client.get("/rankings", params={"workload": "resnet50-train", "min_memory_gb": 0})
    assert len(wider.json()["items"]) > len(
        client.get("/rankings", params={"workload": "resnet50-train"}).json()["items"]
    )


def test_no_configuration_without_a_sourced_box_is_offered_unless_the_box_is_priced(client):
    """8 x RTX 5090 draw 4,600 W, more than the sourced 8-GPU rig's supplies: counted at $0 of
    platform, the eighth card lowered the cost of ownership below seven's. It is offered only
    when the asker prices the box (`platform_usd`)."""
    ask = {"budget": 60000, "max_gpus": 8, "limit": 50}
    rows = client.get("/recommend", params=ask).json()["recommendations"]
    assert rows
    assert all("no sourced box" not in r["why"] for r in rows), [r["why"] for r in rows]
    assert not any(r["gpu"] == "nvidia-rtx-5090" and r["count"] == 8 for r in rows)
    priced = client.get("/recommend", params={**ask, "platform_usd": 8000}).json()
    eight = [r for r in priced["recommendations"] if r["gpu"] == "nvidia-rtx-5090"]
    assert any(r["count"] == 8 for r in eight), [(r["gpu"], r["count"]) for r in eight]


def test_compare_states_its_figures_basis_band_and_scaling(db, client):
    """/compare says where its throughput comes from, as /recommend's rows do: basis, n, band
    and scaling, and in `why` a measured N-GPU median above N x one GPU (Lambda's 8 x RTX 3090
    BERT-base fp16, 1,402 against one GPU's 166) is flagged as no scaling to count on."""
    from service.catalog.seed import seed

    seed(db)  # the whole corpus, multi-GPU rows too
    r = client.get(
        "/compare",
        params={
            "gpu": "nvidia-rtx-3090",
            "count": 8,
            "workload": "bert-base-squad-finetune",
            "precision": "fp16",
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["basis"] == "measured" and body["scaling_basis"] == "measured"
    assert body["throughput_low"] <= body["throughput"] <= body["throughput_high"]
    assert body["scaling_factor"] > 8 and "above 8x linear" in body["why"]
    one = client.get(
        "/compare", params={"gpu": "nvidia-rtx-4090", "count": 4, "workload": "resnet50-train"}
    ).json()
    assert one["basis"] == "estimated" and one["scaling_factor"] > 1
    assert one["why"].startswith("4 x nvidia-rtx-4090, ")


def test_resale_never_passes_what_the_card_will_be_worth_by_its_launch_price():
    """An RTX 5090 bought used at $4,795 (a shortage; $1,999 at launch, 1.85 years before):
    keeping 88% a year of its purchase price, it had been credited $3,266 back after 3 years
    and ranked first on cost of ownership; what ageing leaves of its launch price by then is
    $1,999 x 0.88 ** 4.85 = $1,075. A card bought below that keeps its own fraction."""
    retention = Retention(0.88, "median")
    worth = worth_after(4795.0, 1999.0, 1.85, retention, 3.0)
    assert worth == pytest.approx(1999.0 * 0.88**4.85)
    spiked = ownership(
        4795.0, 1, 575.0, 1.0, "images/s", CostSettings(), None, retention, None, worth
    )
    assert spiked.resale_usd == pytest.approx(worth)
    assert any("resale held to $1,075" in n for n in spiked.notes)
    cheap = ownership(
        900.0, 1, 575.0, 1.0, "images/s", CostSettings(), None, retention, None, worth
    )
    assert cheap.resale_usd == pytest.approx(900.0 * 0.88**3)
    told = ownership(
        4795.0, 1, 575.0, 1.0, "images/s", CostSettings(resale=0.5), None, retention, None, worth
    )
    assert told.resale_usd == pytest.approx(2397.5)  # the caller's fraction is theirs
    assert worth_after(4795.0, None, 1.85, retention, 3.0) is None
    assert worth_after(4795.0, 1999.0, 1.85, None, 3.0) is None
    assert worth_after(1999.0, 1999.0, 1.85, retention, 3.0) is None  # at launch price


@pytest.mark.parametrize("host_power_w", [None, 0, 150, 600])
def test_a_row_is_costed_in_the_box_its_budget_counted(fresh_client, host_power_w):
    """The box a configuration's budget counts (with the asker's host_power_w, else the box's
    own CPU) is the one its cost of ownership counts: with host_power_w=150 the 8-GPU box's
    supplies carry 7 x RTX 5090 beside it, and the row had said '+ $3,836 for the box' and
    then 'no sourced platform cost for 7 GPU(s): platform counted as $0'."""
    ask = {"workload": "resnet50-train", "budget": 40000, "max_gpus": 8}
    if host_power_w is not None:
        ask["host_power_w"] = host_power_w
    rows = fresh_client.get("/recommend", params=ask).json()["recommendations"]
    assert rows
    for r in rows:
        if r["count"] > 1 and "for the box of" in r["why"]:
            assert "no sourced platform cost" not in r["why"], r["why"]
            assert r["platform_usd"] > 0, r
