"""Checks on the shipped price tables (service/catalog/prices.csv, sold_as.csv, platforms.csv).

Design: the data files are the product here, so the tests read them as plain CSV with no
service code involved; each rule is one that a hand-edited or regenerated row could break.
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import pytest

CATALOG = Path(__file__).resolve().parents[2] / "service" / "catalog"
KINDS = {"new", "used", "cloud"}
TODAY = dt.date.today()


def _rows(name: str) -> list[dict[str, str]]:
    with (CATALOG / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


PRICES = _rows("prices.csv")


def _date(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def test_prices_header() -> None:
    with (CATALOG / "prices.csv").open(encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
    expected = ["gpu", "kind", "usd", "usd_per_hour", "provider", "source", "observed_at", "note"]
    assert header == expected


def test_prices_not_empty_and_cover_every_kind() -> None:
    assert {r["kind"] for r in PRICES} == KINDS


@pytest.mark.parametrize("row", PRICES, ids=lambda r: f"{r['gpu']}:{r['kind']}:{r['observed_at']}")
def test_price_row_rules(row: dict[str, str]) -> None:
    assert row["gpu"].strip() and row["gpu"] == row["gpu"].lower()
    assert row["kind"] in KINDS
    assert row["source"].strip(), "every row carries its source"
    observed = _date(row["observed_at"])
    assert observed <= TODAY, "observed_at may not be in the future"
    has_usd, has_hour = bool(row["usd"]), bool(row["usd_per_hour"])
    if row["kind"] == "cloud":
        assert has_hour and not has_usd
        assert float(row["usd_per_hour"]) >= 0.01
        assert row["provider"].strip(), "cloud rows name their provider"
    else:
        assert has_usd and not has_hour
        assert float(row["usd"]) >= 1


def test_no_duplicate_observations() -> None:
    keys = [(r["gpu"], r["kind"], r["provider"], r["observed_at"], r["source"]) for r in PRICES]
    assert len(keys) == len(set(keys))


def test_msrp_is_not_repeated_as_a_kind() -> None:
    assert all(r["kind"] != "msrp" for r in PRICES)


def test_sold_as_rows() -> None:
    rows = _rows("sold_as.csv")
    assert rows
    for r in rows:
        assert r["gpu"] and r["sold_as"]
        assert int(r["unit_gpus"]) >= 1
        if r["unit_usd"]:
            assert float(r["unit_usd"]) >= 1
            assert r["source"].strip().startswith("http")
            assert _date(r["observed_at"]) <= TODAY


def test_platform_rows() -> None:
    rows = _rows("platforms.csv")
    assert rows
    for r in rows:
        assert int(r["gpu_count"]) >= 1
        assert r["source"].strip()
        assert _date(r["observed_at"]) <= TODAY
        for col in ("host_usd", "psu_w", "psu_usd", "chassis_usd"):
            if r[col]:
                assert float(r[col]) > 0
