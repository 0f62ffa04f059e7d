"""DirectRoute calls a plain route without FastAPI's dependency solver and answers exactly as
FastAPI's own handler does (service/api/direct_route.py)."""

from collections.abc import Iterator
from typing import Annotated

import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi import routing as fastapi_routing
from fastapi.responses import Response
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from service.api.deps import get_read_model
from service.api.direct_route import AnswerDirectly, DirectRoute, direct_plan
from service.api.query_model import QueryModel
from service.core.errors import install_error_handlers
from service.schemas.queries import RecommendQuery


async def read_settings(request: Request) -> str:
    return "settings"


def sync_dependency(request: Request) -> str:
    return "sync"


async def with_a_query_parameter(flag: int = 0) -> int:
    return flag


def with_yield() -> Iterator[str]:
    yield "session"


async def nested(inner: Annotated[str, Depends(read_settings)]) -> str:
    return inner


def _app_with(endpoint) -> tuple[FastAPI, APIRoute]:
    router = APIRouter(route_class=DirectRoute)
    router.get("/r")(endpoint)
    app = FastAPI()
    app.include_router(router)
    route = router.routes[0]
    assert isinstance(route, DirectRoute)
    return app, route


def test_a_route_of_plain_request_dependencies_gets_a_plan():
    async def endpoint(
        request: Request,
        settings: Annotated[str, Depends(read_settings)],
        q: Annotated[RecommendQuery, Depends(QueryModel(RecommendQuery))],
    ) -> Response:
        return Response(f"{settings} {q.budget}")

    _, route = _app_with(endpoint)
    plan = direct_plan(route.dependant)
    assert plan is not None
    assert [name for name, _ in plan] == ["settings", "q"]


@pytest.mark.parametrize(
    "dependency", [sync_dependency, with_a_query_parameter, with_yield, nested], ids=str
)
def test_anything_fastapi_must_resolve_keeps_fastapis_handler(dependency):
    async def endpoint(value: Annotated[object, Depends(dependency)]) -> Response:
        return Response(str(value))

    _, route = _app_with(endpoint)
    assert direct_plan(route.dependant) is None


def test_an_endpoint_that_returns_data_for_fastapi_to_serialize_keeps_fastapis_handler():
    async def endpoint(settings: Annotated[str, Depends(read_settings)]) -> dict[str, str]:
        return {"settings": settings}

    app, route = _app_with(endpoint)
    assert direct_plan(route.dependant) is None
    with TestClient(app) as client:
        assert client.get("/r").json() == {"settings": "settings"}


def test_the_direct_handler_answers_without_the_solver_and_errors_read_the_same(monkeypatch):
    async def endpoint(
        q: Annotated[RecommendQuery, Depends(QueryModel(RecommendQuery))],
    ) -> Response:
        if q.budget == 404:
            raise HTTPException(404, "no such budget")
        return Response(f"{q.budget:g}")

    app, _ = _app_with(endpoint)
    install_error_handlers(app)
    with TestClient(app) as client:
        answers_via_fastapi = {}
        app.dependency_overrides[read_settings] = read_settings  # non-empty: FastAPI's handler
        for query in ("budget=800", "budget=abc", "budget=404", "budget=-1"):
            r = client.get(f"/r?{query}")
            answers_via_fastapi[query] = (r.status_code, r.text)
        app.dependency_overrides.clear()

        def no_solver(*args, **kwargs):
            raise AssertionError("FastAPI's dependency solver was called")

        monkeypatch.setattr(fastapi_routing, "solve_dependencies", no_solver)
        for query, expected in answers_via_fastapi.items():
            r = client.get(f"/r?{query}")
            assert (r.status_code, r.text) == expected, query
    assert answers_via_fastapi["budget=800"] == (200, "800")
    assert answers_via_fastapi["budget=abc"][0] == 422
    assert answers_via_fastapi["budget=404"][0] == 404


QUERIES = [
    "budget=800",
    "budget=800&workload=resnet50-train&max_gpus=4",
    "budget=5000&horizon_years=3&electricity_usd_per_kwh=0.3",
    "budget=800&format=csv",
    "budget=abc",
    "budget=800&vram=24",
    "budget=800&budget=900",
    "budget=800&workload=no-such-workload",
    "model=llama-3-8b&budget=3000",
    "model=no-such-model&budget=3000",
]


def test_recommend_answers_the_same_as_through_fastapis_solver(client, monkeypatch):
    """The service's /recommend (a DirectRoute): every answer and error, byte for byte, equals
    the one FastAPI's own handler gives (forced by a non-empty dependency_overrides)."""
    app = client.app
    via_solver = {}
    app.dependency_overrides[get_read_model] = get_read_model
    try:
        for query in QUERIES:
            r = client.get(f"/recommend?{query}&limit=3")
            via_solver[query] = (r.status_code, r.headers.get("content-type"), r.content)
    finally:
        app.dependency_overrides.clear()
    calls = []
    real = fastapi_routing.solve_dependencies

    async def counting(*args, **kwargs):
        calls.append(kwargs.get("dependant"))
        return await real(*args, **kwargs)

    monkeypatch.setattr(fastapi_routing, "solve_dependencies", counting)
    app.state.read_model.changed()  # stored answers out: each one is computed again
    for query in QUERIES:
        r = client.get(f"/recommend?{query}&limit=3")
        answer = (r.status_code, r.headers.get("content-type"), r.content)
        assert answer == via_solver[query], query
    assert calls == []
    statuses = {query: answer[0] for query, answer in via_solver.items()}
    assert statuses["budget=800"] == 200 and statuses["budget=abc"] == 422
    assert statuses["budget=800&vram=24"] == 422 and statuses["budget=800&budget=900"] == 422
    assert statuses["budget=800&workload=no-such-workload"] == 422  # with suggestions
    assert statuses["model=no-such-model&budget=3000"] == 404


def test_answer_directly_answers_before_routing_and_errors_by_the_apps_handlers():
    """AnswerDirectly answers a DirectRoute's GET before the layers inside it (a recorder
    stands for FastAPI's routing here); a handled error gets the app's own answer, a HEAD
    or a route FastAPI must resolve goes on inside."""
    routed: list[str] = []

    class Recorder:
        def __init__(self, app):
            self.app = app

        async def __call__(self, scope, receive, send):
            if scope["type"] == "http":
                routed.append(scope["method"] + " " + scope["path"])
            await self.app(scope, receive, send)

    async def endpoint(
        q: Annotated[RecommendQuery, Depends(QueryModel(RecommendQuery))],
    ) -> Response:
        if q.budget == 404:
            raise HTTPException(404, "no such budget")
        if q.budget == 500:
            raise RuntimeError("a bug")
        return Response(f"{q.budget:g}")

    async def resolved(flag: int = 0) -> Response:
        return Response(str(flag))

    app, _ = _app_with(endpoint)
    app.get("/resolved")(resolved)
    install_error_handlers(app)
    app.add_middleware(Recorder)
    app.add_middleware(AnswerDirectly, router=app.router)
    with TestClient(app, raise_server_exceptions=False) as client:
        client.get("/r")  # FastAPI builds the route's handlers on its first request
        routed.clear()
        assert client.get("/r?budget=800").text == "800"
        bad = client.get("/r?budget=abc")
        missing = client.get("/r?budget=404")
        assert routed == []
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "budget"]
        assert missing.status_code == 404 and "no such budget" in missing.text
        assert client.get("/r?budget=500").status_code == 500
        assert client.get("/resolved?flag=3").text == "3"
        assert routed == ["GET /resolved"]
