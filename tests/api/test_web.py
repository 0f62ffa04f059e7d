"""The HTML pages, checked server-side on the test database (SQLite or Postgres): the form and
its labels, the results table against /recommend's JSON, the charts, a GPU's page."""

import re
from datetime import date
from html.parser import HTMLParser

from sqlmodel import Session, select

from service.models import Gpu, Price

ASK = {"budget": 5000, "horizon_years": 3, "electricity_usd_per_kwh": 0.3, "hours_per_day": 12}


class Page(HTMLParser):
    """Tags with their attributes, in document order (enough to check structure)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def all(self, tag, **attrs):
        return [
            a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())
        ]


def test_front_page_has_a_labelled_get_form_and_accessible_charts(client):
    response = client.get("/")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    page = Page(response.text)
    (form,) = page.all("form", id="ask")
    assert form["method"] == "get" and form["action"] == "/"
    labelled = {a["for"] for a in page.all("label")}
    fields = [a for a in page.all("input") + page.all("select") if a.get("name")]
    names = {a["name"] for a in fields}
    assert {"budget", "workload", "mode", "condition", "horizon_years", "hours_per_day"} <= names
    assert {"electricity_usd_per_kwh", "resale", "max_power_w", "platform_usd"} <= names
    assert all(a.get("id") in labelled for a in fields), "every field has a <label for=...>"
    charts = page.all("svg", role="img")
    assert len(charts) >= 4
    assert "Performance per watt" in response.text and "per W of TDP" in response.text
    for chart in charts:
        title_id, desc_id = chart["aria-labelledby"].split()
        assert page.all("title", id=title_id) and page.all("desc", id=desc_id)
    assert len(page.all("rect", **{"class": "bar"})) > 0
    assert "<script" not in response.text and "http://" not in response.text.split("<main>")[0]


def test_a_model_ask_on_the_page_shows_what_recommend_answers_for_it(client):
    """The form's model fields ask what /recommend?model=... answers (the workload select,
    which the form always sends, gives way to the model), named in the table's caption."""
    ask = {"budget": 5000, "model": "llama-3.1-70b", "task": "inference", "quant": "q4_k_m"}
    response = client.get("/", params=ask | {"workload": "llm-train", "context": ""})
    assert response.status_code == 200
    api = client.get("/recommend", params=ask).json()["recommendations"]
    assert api
    shown = re.findall(r'<td>(\d+) x <a href="/gpu/([a-z0-9-]+)">', response.text)
    assert shown == [(str(r["count"]), r["gpu"]) for r in api]
    assert "for llama-3.1-70b inference (q4_k_m" in response.text
    page = Page(response.text)
    assert {"model", "task", "quant", "context", "batch"} <= {
        a["name"] for a in page.all("input") + page.all("select") if a.get("name")
    }
    assert any("selected" in a for a in page.all("option", value="llama-3.1-70b"))
    typo = client.get("/", params=ask | {"model": "lama-3.1-70b"})
    assert typo.status_code == 404 and "llama-3.1-70b" in typo.text


def test_results_table_shows_what_recommend_answers(client):
    html = client.get("/", params=ASK).text
    api = client.get("/recommend", params=ASK).json()["recommendations"]
    assert api
    shown = re.findall(r'<td>(\d+) x <a href="/gpu/([a-z0-9-]+)">', html)
    assert shown == [(str(r["count"]), r["gpu"]) for r in api]
    for r in api:
        assert r["why"].split(";")[0].replace("&", "&amp;") in html.replace("&#39;", "'")
        assert f"${r['tco_usd']:,.0f}" in html
    assert "Likely band" in html and "estimated" in html


def test_bad_form_input_is_shown_not_raised(client):
    response = client.get("/", params={"budget": "-5"})
    assert response.status_code == 422 and 'role="alert"' in response.text
    unknown = client.get("/", params={"budget": "500", "workload": "no-such-workload"})
    assert unknown.status_code == 422 and "no-such-workload" in unknown.text
    empty_optional = client.get("/", params=ASK | {"resale": "", "max_power_w": ""})
    assert empty_optional.status_code == 200 and 'id="results"' in empty_optional.text


def test_gpu_page_shows_specs_results_prices_and_calibrations(client, db, keys):
    slug = "nvidia-rtx-4090"
    values = [100.0, 104.0, 98.0, 101.0]
    rows = [
        {"gpu": slug, "workload": "resnet50-train", "value": v, "precision": "fp16",
         "framework": "pytorch", "gpu_count": 1}
        for v in values
    ]  # fmt: skip
    posted = client.post("/results", json={"results": rows}, headers=keys.auth(keys.submitter))
    assert posted.status_code == 201, posted.text
    with Session(db) as session:
        gpu = session.exec(select(Gpu).where(Gpu.slug == slug)).one()
        for day, usd in ((date(2023, 1, 31), 1700.0), (date(2023, 6, 30), 1600.0)):
            session.add(
                Price(gpu_id=gpu.id, usd=usd, condition="used", source="t", observed_at=day)
            )
        session.commit()
        source = gpu.source
    response = client.get(f"/gpu/{slug}")
    assert response.status_code == 200
    page = Page(response.text)
    assert page.all("table", id="specs") and source.split()[0] in response.text
    strip = [a for a in page.all("circle") if a.get("class") == "dot"]
    assert len(strip) >= len(values)
    assert "resnet50-train fp16" in response.text and "n=4" in response.text
    assert len(page.all("polyline")) >= 2  # msrp (new) and used series
    assert "Calibration history" in response.text
    assert client.get("/gpu/no-such-gpu").status_code == 404
    typo = client.get("/gpu/nvidia-rtx-4091")
    assert typo.status_code == 404 and 'href="/gpu/nvidia-rtx-4090"' in typo.text


def test_html_routes_are_not_in_the_api_schema(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and "/gpu/{slug}" not in paths and "/compare" in paths


def test_perf_per_dollar_chart_speaks_the_answers_unit(client):
    from html import escape

    from service.api.web.index import fmt

    html = client.get("/").text
    ranked = client.get("/rankings", params={"sort": "perf_per_dollar"}).json()
    top = ranked["items"][0]
    assert top["perf_per_dollar"] is not None
    assert f"({ranked['unit']} per USD of current price)" in html
    assert f"{escape(top['name'])} {fmt(top['perf_per_dollar'])} per USD" in html
    assert "$1,000" not in html and "$1k" not in html


def test_relative_chart_names_and_shows_its_reference(client):
    from html import escape

    ranked = client.get("/rankings").json()
    reference = ranked["reference_gpu"]
    ref = next(i for i in ranked["items"] if i["gpu"] == reference)
    faster = [i for i in ranked["items"] if i["throughput"] > ref["throughput"]]
    assert len(faster) > 15, "the reference is below the chart's top GPUs on the default ask"
    html = client.get("/").text
    chart = html.partition(f"Relative performance, {ranked['workload']} (")[2].split("</svg>")[0]
    assert chart.startswith(f"{escape(ref['name'])} = 1.0)")
    assert f'href="/gpu/{reference}"' in chart and f"{escape(ref['name'])}</" in chart
    assert "1.00x" in chart
