"""Application factory: create_app(settings) wires engine, routers and error handlers."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from service import __version__
from service.api import (
    accuracy,
    admin_catalog,
    agent,
    calibrations,
    compare,
    gpus,
    health,
    hosts,
    keys,
    memory,
    models,
    rankings,
    recommend,
    results,
    workloads,
)
from service.api.direct_route import AnswerDirectly
from service.api.http_cache import HttpCaching
from service.api.preauth import bearer_checker
from service.api.query import reject_unknown_query
from service.api.query_model import document_query_models
from service.api.web import pages as web_pages
from service.core.db import make_engine
from service.core.errors import install_error_handlers
from service.core.middleware import BodySizeLimit, HttpMethods, RejectNulInUrl, every_route
from service.core.migrations import head_revision
from service.core.observability import Metrics, RequestContext, configure_logging
from service.core.settings import Settings, get_settings
from service.read_model import estimates
from service.read_model.accuracy import AccuracyService
from service.read_model.answer_cache import AnswerCache, ServeCachedAnswers
from service.read_model.reads import ReadModel
from service.read_model.snapshot_cache import SnapshotCache
from service.schemas.common import Problem
from service.schemas.results import ResultBatchIn, ResultIn


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.log_level, only_if_unconfigured=True)  # uvicorn worker processes
    engine = make_engine(settings.database_url)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if settings.warm_on_start:
            estimates.warm(engine)
        yield
        app.state.accuracy.close()
        engine.dispose()

    app = FastAPI(
        title="gpu-advisor",
        version=__version__,
        description="Which GPU(s) to buy for deep learning, for a budget and a workload.",
        lifespan=lifespan,
        dependencies=[Depends(reject_unknown_query)],  # unknown query parameters: 422
        responses={503: {"model": Problem, "description": "database unavailable; see Retry-After"}},
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.head_revision = head_revision(settings.database_url)
    snapshots = SnapshotCache(settings.cache_ttl_s)
    answers = AnswerCache(snapshots)
    app.state.read_model = ReadModel(engine, settings, snapshots, answers)
    app.state.metrics = Metrics()
    app.state.accuracy = AccuracyService(
        engine, settings.price_max_age_days, settings.accuracy_min_interval_s
    )
    install_error_handlers(app)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_body_bytes,
        authenticate=bearer_checker(engine),
        max_inflight_bytes=settings.max_inflight_body_bytes,
        timeout_s=settings.body_timeout_s,
    )
    app.add_middleware(AnswerDirectly, router=app.router)  # before routing, after the cache
    app.add_middleware(ServeCachedAnswers, answers=answers)
    app.add_middleware(HttpCaching, max_age_s=settings.cache_ttl_s)  # outside: hits get ETags
    app.add_middleware(HttpMethods, router=app.router)
    app.add_middleware(RejectNulInUrl)
    app.add_middleware(RequestContext, metrics=app.state.metrics)  # outermost: sees every answer
    # Routes are matched in order, each tried at ~3 us (FastAPI 0.165): the answers clients ask
    # for most, computed per request, go first.
    routers = (
        recommend,
        rankings,
        health,
        gpus,
        workloads,
        models,
        memory,
        compare,
        accuracy,
        admin_catalog,
        results,
        keys,
        hosts,
        agent,
        calibrations,
        web_pages,
    )
    for module in routers:
        app.include_router(module.router)
    app.openapi = lambda: openapi_with_body_models(app)  # type: ignore[method-assign]
    return app


def openapi_with_body_models(app: FastAPI) -> dict[str, Any]:
    """The generated schema plus the body models POST /results validates by hand and the query
    models routes validate in one call (api/query_model.py)."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        _, defs = models_json_schema(
            [(ResultIn, "validation"), (ResultBatchIn, "validation")],
            ref_template="#/components/schemas/{model}",
        )
        schema.setdefault("components", {}).setdefault("schemas", {}).update(defs["$defs"])
        document_query_models(schema, every_route(app.router))
        app.openapi_schema = schema
    return app.openapi_schema
