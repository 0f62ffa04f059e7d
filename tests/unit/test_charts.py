"""The SVG charts: bars proportional to values, text escaped, accessible title and desc."""

from datetime import date
from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st

from service.domain.charts import Bar, Series, Strip, bar_chart, line_chart, strip_chart


class Tags(HTMLParser):
    def __init__(self, svg: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(svg)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@given(st.lists(st.floats(0.001, 1e6), min_size=1, max_size=20))
def test_bar_widths_are_proportional_to_values(values):
    svg = bar_chart("t", [Bar(f"gpu {i}", v, f"{v}") for i, v in enumerate(values)])
    widths = [float(a["width"]) for t, a in Tags(svg).tags if t == "rect"]
    assert len(widths) == len(values)
    top = max(values)
    for w, v in zip(widths, values, strict=True):
        expected = max(widths) * v / top
        assert abs(w - max(expected, 1.0)) <= 0.06 + 1e-9 * expected


def test_text_is_escaped_and_charts_are_labelled():
    svg = bar_chart('<script>"x"</script>', [Bar("a<b & c", 1.0, "1", href="/gpu/a?b=1&c=2")])
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "a&lt;b &amp; c" in svg
    tags = Tags(svg).tags
    root = tags[0][1]
    assert root["role"] == "img"
    title_id, desc_id = root["aria-labelledby"].split()
    assert ("title", {"id": title_id}) in tags and ("desc", {"id": desc_id}) in tags


def test_empty_charts_say_so():
    assert "No data." in bar_chart("t", [])
    assert "No measured results yet." in strip_chart("t", [])
    assert "No observations." in line_chart("t", [], "USD")


def test_strip_and_line_charts_draw_every_point():
    strip = strip_chart("t", [Strip("w", [1.0, 2.0, 3.0], "img/s"), Strip("v", [5.0], "tok/s")])
    assert sum(1 for t, _ in Tags(strip).tags if t == "circle") == 4
    assert "median 2 img/s, n=3" in strip
    points = [(date(2024, 1, 1), 10.0), (date(2024, 6, 1), 8.0), (date(2025, 1, 1), 9.0)]
    line = line_chart("t", [Series("used", points), Series("new", points[:1])], "USD")
    polylines = [a for t, a in Tags(line).tags if t == "polyline"]
    assert len(polylines) == 2 and len(polylines[0]["points"].split()) == 3
