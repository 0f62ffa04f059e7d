"""The platform table keeps one cost per GPU count: the newest of the sourced rows."""

from datetime import date

from service.catalog.loaders import (
    PlatformSeed,
    load_platform_rows,
    load_platforms,
    newest_per_count,
)


def _row(count: int, usd: float, observed: date | None, source: str = "s") -> PlatformSeed:
    return PlatformSeed(gpu_count=count, host_usd=usd, source=source, observed_at=observed)


def test_newest_row_per_count_wins_and_counts_are_ordered() -> None:
    rows = [
        _row(4, 900.0, date(2025, 9, 3)),
        _row(2, 4665.61, date(2023, 9, 26)),
        _row(2, 1569.95, date(2024, 4, 14)),
        _row(2, 10.0, None),
        _row(1, 675.41, date(2016, 9, 30)),
    ]
    picked = newest_per_count(rows)
    assert [p.gpu_count for p in picked] == [1, 2, 4]
    assert [p.host_usd for p in picked] == [675.41, 1569.95, 900.0]


def test_equal_dates_take_the_later_row() -> None:
    same = date(2024, 1, 1)
    picked = newest_per_count([_row(2, 1.0, same, "a"), _row(2, 2.0, same, "b")])
    assert [p.source for p in picked] == ["b"]


def test_an_undated_row_is_kept_when_it_is_the_only_one() -> None:
    assert [p.host_usd for p in newest_per_count([_row(8, 5.0, None)])] == [5.0]


def test_shipped_table_seeds_one_row_per_count_the_newest() -> None:
    every = load_platform_rows()
    seeded = load_platforms()
    counts = [p.gpu_count for p in seeded]
    assert len(counts) == len(set(counts)) == len({p.gpu_count for p in every})
    assert len(every) > len(seeded), "platforms.csv holds more than one source for some count"
    for p in seeded:
        dates = [r.observed_at for r in every if r.gpu_count == p.gpu_count and r.observed_at]
        assert p.observed_at == max(dates)
