"""SVG charts drawn by the service (no JavaScript, no CDN): pure functions from numbers to markup.

Styled after the bar charts of Tim Dettmers' GPU guide: one horizontal bar per GPU, sorted, the
value at the end of the bar. Every chart is `role="img"` with a <title> and a <desc> (named by
aria-labelledby) that states the top entries in words, so a screen reader gets the gist. All
text is escaped here; callers pass plain strings.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from html import escape
from itertools import count

_ids = count(1)
WIDTH = 960
LABEL_W = 320
VALUE_W = 150
MAX_LABEL = 44  # characters; longer labels are cut (the full one is in the bar's tooltip)
ROW_H = 22
PALETTE = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b")


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str  # the value as shown
    href: str | None = None
    highlight: bool = False


def _frame(title: str, desc: str, height: float, body: str, css_class: str) -> str:
    n = next(_ids)
    tid, did = f"chart-title-{n}", f"chart-desc-{n}"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css_class}" role="img" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" width="100%" aria-labelledby="{tid} {did}">'
        f'<title id="{tid}">{escape(title)}</title><desc id="{did}">{escape(desc)}</desc>'
        f'<text x="0" y="16" class="chart-heading">{escape(title)}</text>{body}</svg>'
    )


def bar_chart(title: str, bars: Sequence[Bar], summary: str = "") -> str:
    """Horizontal bars, in the order given; bar length proportional to value (0 at the left)."""
    top = 28
    height = top + ROW_H * max(len(bars), 1) + 8
    peak = max((b.value for b in bars), default=0.0)
    span = WIDTH - LABEL_W - VALUE_W
    parts = []
    for i, b in enumerate(bars):
        y = top + i * ROW_H
        w = max(span * b.value / peak, 1.0) if peak > 0 else 1.0
        colour = "#c53030" if b.highlight else PALETTE[0]
        label = escape(_short(b.label))
        if b.href:
            label = f'<a href="{escape(b.href)}">{label}</a>'
        parts.append(
            f'<g class="row"><text x="{LABEL_W - 6}" y="{y + 15}" text-anchor="end" '
            f'class="label">{label}</text>'
            f'<rect class="bar" x="{LABEL_W}" y="{y + 3}" width="{w:.1f}" height="{ROW_H - 6}" '
            f'fill="{colour}"><title>{escape(b.label)}: {escape(b.text)}</title></rect>'
            f'<text x="{LABEL_W + w + 4:.1f}" y="{y + 15}" class="value">{escape(b.text)}</text>'
            "</g>"
        )
    if not bars:
        parts.append(f'<text x="0" y="{top + 15}" class="empty">No data.</text>')
    desc = summary or "; ".join(f"{b.label}: {b.text}" for b in bars[:5])
    return _frame(title, desc, height, "".join(parts), "bar-chart")


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "\u2026"


@dataclass(frozen=True)
class Strip:
    label: str
    values: Sequence[float]
    unit: str


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def strip_chart(title: str, strips: Sequence[Strip]) -> str:
    """One row per group: each value a dot, the median a tick. Each row has its own scale, from
    a little below its lowest to a little above its highest value (units differ by row), and
    names its range, so the spread of repeated results is visible."""
    top = 28
    row_h = 30
    label_w, text_w = 260, 300
    height = top + row_h * max(len(strips), 1) + 8
    span = WIDTH - label_w - text_w
    parts = []
    for i, s in enumerate(strips):
        y = top + i * row_h + row_h / 2
        lo, hi = min(s.values, default=0.0), max(s.values, default=1.0)
        pad = (hi - lo) * 0.1 or abs(hi) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 4:.0f}" text-anchor="end" class="label">'
            f"{escape(_short(s.label))}</text>"
            f'<line x1="{label_w}" x2="{label_w + span}" y1="{y:.0f}" y2="{y:.0f}" class="axis"/>'
        )
        for v in s.values:
            x = label_w + span * (v - lo) / (hi - lo)
            parts.append(
                f'<circle class="dot" cx="{x:.1f}" cy="{y:.0f}" r="4" fill="{PALETTE[0]}" '
                f'fill-opacity="0.6"><title>{v:,.4g} {escape(s.unit)}</title></circle>'
            )
        if s.values:
            med = _median(s.values)
            x = label_w + span * (med - lo) / (hi - lo)
            parts.append(
                f'<line class="median" x1="{x:.1f}" x2="{x:.1f}" y1="{y - 9:.0f}" '
                f'y2="{y + 9:.0f}" stroke="{PALETTE[1]}" stroke-width="3"/>'
                f'<text x="{label_w + span + 8}" y="{y + 4:.0f}" class="value">median '
                f"{med:,.4g} {escape(s.unit)}, n={len(s.values)}, "
                f"{min(s.values):,.4g}-{max(s.values):,.4g}</text>"
            )
    if not strips:
        parts.append(f'<text x="0" y="{top + 15}" class="empty">No measured results yet.</text>')
    desc = "; ".join(
        f"{s.label}: {len(s.values)} results, median {_median(s.values):,.4g} {s.unit}"
        for s in strips
        if s.values
    )
    return _frame(title, desc or "No measured results.", height, "".join(parts), "strip-chart")


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[date, float]]


def line_chart(title: str, series: Sequence[Series], unit: str) -> str:
    """Lines over time, one per series, on shared axes (date left to right, 0..max upwards)."""
    top, bottom, left, right = 28, 30, 70, 120
    height = 220
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    points = [p for s in series for p in s.points]
    parts = []
    if not points:
        parts.append(f'<text x="0" y="{top + 15}" class="empty">No observations.</text>')
        return _frame(title, "No observations.", top + 30, "".join(parts), "line-chart")
    first = min(d for d, _ in points).toordinal()
    last = max(d for d, _ in points).toordinal()
    peak = max(v for _, v in points) or 1.0
    days = max(last - first, 1)

    def xy(d: date, v: float) -> tuple[float, float]:
        return left + plot_w * (d.toordinal() - first) / days, top + plot_h * (1 - v / peak)

    parts.append(
        f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}"/>'
        f'<line class="axis" x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" '
        f'y2="{top + plot_h}"/>'
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" class="tick">'
        f"{peak:,.4g}</text>"
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end" class="tick">0</text>'
        f'<text x="{left}" y="{height - 8}" class="tick">{date.fromordinal(first)}</text>'
        f'<text x="{left + plot_w}" y="{height - 8}" text-anchor="end" class="tick">'
        f"{date.fromordinal(last)}</text>"
    )
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        pts = sorted(s.points)
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(d, v) for d, v in pts))
        parts.append(
            f'<polyline class="line" points="{coords}" fill="none" stroke="{colour}" '
            'stroke-width="2"/>'
        )
        for d, v in pts:
            x, y = xy(d, v)
            parts.append(
                f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                f"<title>{escape(s.name)} {d}: {v:,.4g} {escape(unit)}</title></circle>"
            )
        parts.append(
            f'<text x="{left + plot_w + 8}" y="{top + 14 + 16 * i}" fill="{colour}" '
            f'class="legend">{escape(s.name)}</text>'
        )
    desc = "; ".join(
        f"{s.name}: {len(s.points)} observations, newest {max(s.points)[1]:,.4g} {unit}"
        for s in series
        if s.points
    )
    return _frame(title, desc, height, "".join(parts), "line-chart")
