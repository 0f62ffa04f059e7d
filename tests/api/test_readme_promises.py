"""What the README promises a new user (issue 10 section 4), held against the running app:
the /rankings parameters and sort values, the submit file's required fields, the prior band."""

from pathlib import Path
from typing import get_args

import pytest

from service.schemas.rankings import RankingSort
from service.schemas.results import ResultIn

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def paragraph(starting: str) -> str:
    return README.split(starting, 1)[1].split("\n\n", 1)[0]


def test_readme_names_every_rankings_parameter_and_sort_value(client):
    text = paragraph("`/rankings` parameters:")
    declared = client.get("/openapi.json").json()["paths"]["/rankings"]["get"]["parameters"]
    assert [p["name"] for p in declared if f"`{p['name']}`" not in text] == []
    values = get_args(RankingSort)
    assert [v for v in values if f"`{v}`" not in text] == []
    refused = client.get("/rankings", params={"sort": "throughput"})
    assert refused.status_code == 422
    assert all(v in refused.text for v in values) and "sort" in refused.text


def test_readme_names_the_submit_formats_and_every_required_field():
    text = paragraph("`gpu-advisor submit FILE` reads")
    required = [n for n, f in ResultIn.model_fields.items() if f.is_required()]
    assert required and [n for n in required if f"`{n}`" not in text.split("optional:")[0]] == []
    optional = [n for n, f in ResultIn.model_fields.items() if not f.is_required()]
    assert [n for n in optional if f"`{n}`" not in text.split("optional:")[1]] == []
    assert "`.json`" in text and "`.csv`" in text


def test_prior_band_is_value_divided_and_multiplied_by_one_and_a_half(client):
    assert "value / 1.5 to value x 1.5" in README and "not +-50%" in README
    rows = client.get("/rankings", params={"workload": "resnet50-train"}).json()["items"]
    prior = [r for r in rows if r["model"] == "roofline-prior"]
    assert prior
    for r in prior:
        assert r["throughput_high"] == pytest.approx(r["throughput"] * 1.5)
        assert r["throughput_low"] == pytest.approx(r["throughput"] / 1.5)


@pytest.mark.parametrize("route", ["/gpus", "/rankings", "/recommend"])
def test_readme_lists_the_csv_columns_in_order(client, route):
    line = next(x for x in README.splitlines() if x.startswith(f"- `{route}`: `"))
    listed = line.split("`")[3]
    params = {"budget": 3000} if route == "/recommend" else {}
    header = client.get(route, params=params | {"format": "csv"}).text.splitlines()[0]
    assert listed == header
