"""Checks on the shipped price tables (service/catalog/prices.csv, sold_as.csv, platforms.csv).

Design: the data files are the product here, so the tests read them as plain CSV with no
service code involved; each rule is one that a hand-edited or regenerated row could break.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
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


PLATFORMS = _rows("platforms.csv")
TDP_W = {r["slug"]: float(r["tdp_w"]) for r in _rows("gpus.csv") if r["tdp_w"]}
PLATFORM_PARTS = ("host_usd", "psu_usd", "chassis_usd")


def test_platforms_header() -> None:
    with (CATALOG / "platforms.csv").open(encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
    expected = ["gpu_count", "host_usd", "psu_w", "psu_usd", "host_w", "chassis_usd", "cards"]
    assert header == [*expected, "source", "observed_at", "note", "host_w_source"]


def test_platforms_cover_the_multi_gpu_counts() -> None:
    counts = {int(r["gpu_count"]) for r in PLATFORMS}
    assert {1, 2, 4} <= counts


def test_no_duplicate_platform_observations() -> None:
    keys = [(r["gpu_count"], r["source"], r["observed_at"]) for r in PLATFORMS]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("row", PLATFORMS, ids=lambda r: f"{r['gpu_count']}gpu:{r['observed_at']}")
def test_platform_row_rules(row: dict[str, str]) -> None:
    count = int(row["gpu_count"])
    assert count >= 1
    assert row["source"].strip(), "every row carries its source"
    assert _date(row["observed_at"]) <= TODAY, "observed_at may not be in the future"
    assert row["note"].strip(), "the note says how host_usd was summed and what was left out"
    for col in ("host_usd", "psu_w", "psu_usd", "chassis_usd"):
        if row[col]:
            assert float(row[col]) > 0
    assert any(row[c] for c in PLATFORM_PARTS), "a row prices at least one part"
    if row["psu_usd"]:
        assert row["psu_w"], "a priced power supply names its rating"
    if row["host_w"]:
        assert row["host_w_source"].strip(), "a host power names the CPU and its source"
        assert 0 < float(row["host_w"]) < 1000, "one host CPU's TDP, not the box's"


@pytest.mark.parametrize("row", PLATFORMS, ids=lambda r: f"{r['gpu_count']}gpu:{r['observed_at']}")
def test_platform_cards_are_catalog_gpus_one_per_slot(row: dict[str, str]) -> None:
    cards = row["cards"].split("|")
    assert len(cards) == int(row["gpu_count"])
    assert all(card in TDP_W for card in cards), cards


@pytest.mark.parametrize("row", PLATFORMS, ids=lambda r: f"{r['gpu_count']}gpu:{r['observed_at']}")
def test_platform_psu_covers_the_cards_or_the_note_says_why(row: dict[str, str]) -> None:
    """The power supply carries the TDP of the cards the box was built for (gpus.csv tdp_w);
    a row without a rating must say in its note that the power supply was not priced."""
    draw = sum(TDP_W[card] for card in row["cards"].split("|"))
    if row["psu_w"]:
        assert float(row["psu_w"]) >= draw, (row["psu_w"], draw)
    else:
        note = row["note"].lower()
        assert "power suppl" in note and "not priced" in note


@pytest.mark.parametrize("row", PLATFORMS, ids=lambda r: f"{r['gpu_count']}gpu:{r['observed_at']}")
def test_platform_host_is_the_sum_of_the_parts_in_the_note(row: dict[str, str]) -> None:
    """The note lists host parts as 'host = part $x + part $y ...;' (asides in parentheses);
    host_usd must be their sum, so a mistyped figure or a dropped part shows."""
    assert "host = " in row["note"]
    listed = row["note"].split("host = ", 1)[1].split(";", 1)[0]
    listed = re.sub(r"\([^)]*\)", "", listed)
    figures = [float(x.replace(",", "")) for x in re.findall(r"\$([\d,]+(?:\.\d+)?)", listed)]
    assert figures
    assert sum(figures) == pytest.approx(float(row["host_usd"]), abs=0.005)
