"""QueryModel validates and documents a query model exactly as FastAPI's own
`Annotated[Model, Query()]` does, only in one call (service/api/query_model.py)."""

from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI, Query
from fastapi.testclient import TestClient
from pydantic import BaseModel

from service.api.memory import MemoryQuery
from service.api.query_model import QueryModel, document_query_models
from service.core.errors import install_error_handlers
from service.core.middleware import every_route
from service.schemas.queries import RecommendQuery
from service.schemas.tco import CostQuery

MODELS = [RecommendQuery, CostQuery, MemoryQuery]


def apps(model: type[BaseModel]) -> tuple[FastAPI, FastAPI]:
    """The same route, once with FastAPI's query model handling, once with QueryModel."""
    classic, fast = FastAPI(), FastAPI()
    for app in (classic, fast):
        install_error_handlers(app)

    @classic.get("/q", name="route")
    async def classic_route(q: Annotated[model, Query()]) -> dict[str, Any]:  # type: ignore[valid-type]
        return q.model_dump(mode="json")  # type: ignore[attr-defined,no-any-return]

    @fast.get("/q", name="route")
    async def fast_route(q: Annotated[model, Depends(QueryModel(model))]) -> dict[str, Any]:  # type: ignore[valid-type]
        return q.model_dump(mode="json")  # type: ignore[attr-defined,no-any-return]

    return classic, fast


QUERIES = [
    "",
    "budget=800",
    "budget=abc",
    "budget=",
    "budget=nan",
    "budget=-1&max_gpus=99&limit=0",
    "budget=800&precision=zz&mode=nope",
    "budget=800&allow_stale=yes&condition=used&sort=tco",
    "budget=800&allow_stale=maybe",
    "budget=1e309",
    "budget=800&budget=900",
    "horizon_years=0&hours_per_day=25&resale=2",
    "horizon_years=5&electricity_usd_per_kwh=0.3&platform_usd=1000",
    "model=llama-3-8b&task=qlora&context=0",
    "model=llama-3-8b&task=inference&batch=4&gpus=2",
    "model=&quant=q4_k_m",
    "budget=800&unknown=1",
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_answers_and_errors_equal_fastapis_own(model):
    classic, fast = (TestClient(app) for app in apps(model))
    for query in QUERIES:
        want, got = classic.get(f"/q?{query}"), fast.get(f"/q?{query}")
        assert (got.status_code, got.json()) == (want.status_code, want.json()), query


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_documented_parameters_and_422_equal_fastapis_own(model):
    classic, fast = apps(model)
    want = classic.openapi()
    schema = fast.openapi()
    assert "parameters" not in schema["paths"]["/q"]["get"]  # FastAPI cannot see them
    assert "422" not in schema["paths"]["/q"]["get"]["responses"]
    document_query_models(schema, every_route(fast.router))
    got_op, want_op = schema["paths"]["/q"]["get"], want["paths"]["/q"]["get"]
    assert got_op["parameters"] == want_op["parameters"]
    assert got_op["responses"] == want_op["responses"]
    assert schema["components"]["schemas"] == want["components"]["schemas"]


def test_a_model_with_a_list_field_is_refused():
    class Many(BaseModel):
        gpu: list[str] = []

    with pytest.raises(TypeError, match="several values"):
        QueryModel(Many)


def test_the_service_documents_the_routes_query_models(client):
    operations = client.get("/openapi.json").json()["paths"]
    names = {p["name"] for p in operations["/recommend"]["get"]["parameters"]}
    assert names == {f.alias or n for n, f in RecommendQuery.model_fields.items()}
    assert {"horizon_years", "workload"} <= {
        p["name"] for p in operations["/rankings"]["get"]["parameters"]
    }
