"""Freshness, MSRP and availability rules (pure domain)."""

from datetime import date

from service.domain.availability import Availability, exclusion, purchase_counts
from service.domain.prices import PriceObservation, current_price, shown_price

TODAY = date(2026, 12, 1)


def _obs(usd: float, kind: str, day: date, i: int = 0) -> PriceObservation:
    return PriceObservation(usd, kind, f"src-{i}", day, i)


def test_stale_prices_are_shown_but_ranked_only_when_allowed():
    obs = [_obs(700, "used", date(2023, 10, 31), 1)]
    assert current_price(obs, "used", TODAY, 180) is None
    assert current_price(obs, "used", TODAY, 180, allow_stale=True) == obs[0]
    assert shown_price(obs, "used", TODAY) == obs[0]
    fresh = [*obs, _obs(650, "used", date(2026, 11, 1), 2)]
    assert current_price(fresh, "used", TODAY, 180) == fresh[1]


def test_msrp_counts_only_in_production_and_fresh():
    msrp = [_obs(1999, "msrp", date(2026, 10, 1), 1)]
    assert current_price(msrp, "new", TODAY, 180, in_production=True) == msrp[0]
    assert current_price(msrp, "new", TODAY, 180, in_production=False) is None
    assert shown_price(msrp, "any", TODAY, in_production=False) is None
    old = [_obs(1599, "msrp", date(2022, 10, 12), 1)]
    assert current_price(old, "new", TODAY, 180) is None
    # asked for older prices: a GPU still made is sold at list, a discontinued one is not
    assert current_price(old, "new", TODAY, 180, allow_stale=True) == old[0]
    assert current_price(old, "new", TODAY, 180, False, allow_stale=True) is None
    stale_street = [*old, _obs(1799, "new", date(2023, 1, 1), 2)]
    assert current_price(stale_street, "new", TODAY, 180, allow_stale=True) == stale_street[1]
    street = [*msrp, _obs(2200, "new", date(2026, 9, 1), 2)]
    assert current_price(street, "new", TODAY, 180) == street[1]  # street beats MSRP


def test_any_takes_the_cheaper_usable_price():
    obs = [_obs(1999, "new", date(2026, 11, 1), 1), _obs(1300, "used", date(2026, 10, 1), 2)]
    assert current_price(obs, "any", TODAY, 180) == obs[1]
    assert current_price(obs, "any", TODAY, 45) == obs[0]


def test_platform_gpus_come_in_whole_units_and_cloud_only_never():
    hgx = Availability("datacenter_only", "hgx-8", 8)
    assert purchase_counts(hgx, 4) == []
    assert purchase_counts(hgx, 8) == [8]
    assert purchase_counts(Availability(), 3) == [1, 2, 3]
    assert "raise max_gpus to 8" in (exclusion("x", hgx, 4) or "")
    assert exclusion("x", hgx, 8) is None
    cloud = Availability("datacenter_only", "cloud", 1)
    assert purchase_counts(cloud, 8) == [] and "cloud" in (exclusion("x", cloud, 8) or "")


def test_a_complete_computer_runs_one_job_alone_and_independent_jobs_in_copies():
    mac = Availability("in_production", "system", 1)
    assert purchase_counts(mac, 4, one_job=True) == [1]
    assert purchase_counts(mac, 4) == [1, 2, 3, 4]  # independent experiments
    assert purchase_counts(Availability(), 4, one_job=True) == [1, 2, 3, 4]  # cards share a box


def test_a_gpu_is_excluded_exactly_when_no_count_can_be_bought():
    for sold_as in ("card", "hgx-8", "system", "cloud"):
        for unit in (0, 1, 2, 4, 8):
            for max_gpus in range(1, 9):
                a = Availability(sold_as=sold_as, unit_gpus=unit)
                excluded = exclusion("x", a, max_gpus) is not None
                assert excluded == (not purchase_counts(a, max_gpus)), (sold_as, unit, max_gpus)
