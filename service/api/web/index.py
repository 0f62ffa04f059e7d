"""The charts of the front page, from ranking rows (the same rows /rankings answers)."""

from service.domain.charts import Bar, bar_chart
from service.schemas.rankings import RankingItem
from service.schemas.tco import CostQuery

TOP = 15


def fmt(value: float | None, digits: int = 3) -> str:
    """A figure for people: thousands separated above 100, else `digits` significant digits."""
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{digits}g}"


def charts_for(
    rows: list[RankingItem], unit: str, costs: CostQuery, workload: str, reference: str = ""
) -> list[str]:
    """Relative performance, performance per dollar (units/s per USD, the unit of every
    answer), performance per watt of TDP, and cost per million units over the horizon: the
    top GPUs of each (estimated and measured alike; the table says which). The reference
    GPU's bar is drawn in red, as the guide marks its reference, and the relative-performance
    chart always shows it (after the top GPUs where it is not among them)."""

    def _bar(row: RankingItem, value: float, text: str) -> Bar:
        return Bar(row.name, value, text, href=f"/gpu/{row.gpu}", highlight=row.gpu == reference)

    relative = sorted(
        (r for r in rows if r.relative_performance is not None), key=lambda r: -r.throughput
    )
    perf = relative[:TOP]
    shown_top = len(perf)
    # the reference's own bar (1.0x) stays in the chart, in its place by throughput, so that
    # "x times the reference" can be read off the bars: the top GPUs are often all faster
    ref_row = next((r for r in relative if r.gpu == reference), None)
    if ref_row is not None and all(r.gpu != reference for r in perf):
        perf.append(ref_row)
    ref_name = ref_row.name if ref_row is not None else "reference"
    perf_bars = [
        _bar(r, r.relative_performance or 0, f"{r.relative_performance or 0:.2f}x") for r in perf
    ]
    per_dollar = sorted(
        (r for r in rows if r.perf_per_dollar is not None), key=lambda r: -(r.perf_per_dollar or 0)
    )[:TOP]
    dollar_bars = [
        _bar(r, r.perf_per_dollar or 0, f"{fmt(r.perf_per_dollar)} per USD") for r in per_dollar
    ]
    per_watt = sorted(
        (r for r in rows if r.perf_per_watt is not None), key=lambda r: -(r.perf_per_watt or 0)
    )[:TOP]
    watt_bars = [_bar(r, r.perf_per_watt or 0, f"{fmt(r.perf_per_watt)} per W") for r in per_watt]
    cheapest = sorted(
        (r for r in rows if r.cost_per_million_units is not None),
        key=lambda r: r.cost_per_million_units or 0,
    )[:TOP]
    noun = unit.split("/")[0]
    cost_bars = [
        _bar(r, r.cost_per_million_units or 0, f"${fmt(r.cost_per_million_units)}")
        for r in cheapest
    ]
    horizon = (
        f"{costs.horizon_years:g} years at {costs.hours_per_day:g} h/day, "
        f"${costs.electricity_usd_per_kwh:g}/kWh"
    )
    return [
        bar_chart(
            f"Relative performance, {workload} ({ref_name} = 1.0)",
            perf_bars,
            f"Top {shown_top} GPUs by throughput in {unit} relative to {ref_name}: "
            + "; ".join(f"{b.label} {b.text}" for b in perf_bars[:5]),
        ),
        bar_chart(
            f"Performance per dollar, {workload} ({unit} per USD of current price)",
            dollar_bars,
            "Most throughput per dollar first: "
            + "; ".join(f"{b.label} {b.text}" for b in dollar_bars[:5]),
        ),
        bar_chart(
            f"Performance per watt, {workload} ({unit} per W of TDP)",
            watt_bars,
            "Most throughput per watt of board power first: "
            + "; ".join(f"{b.label} {b.text}" for b in watt_bars[:5]),
        ),
        bar_chart(
            f"Cost per million {noun} over {horizon} (lower is better)",
            cost_bars,
            "Cheapest cost of ownership per unit of work first: "
            + "; ".join(f"{b.label} {b.text}" for b in cost_bars[:5]),
        ),
    ]
