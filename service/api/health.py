"""Liveness (/healthz) and readiness (/readyz: database reachable and migrated)."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy.exc import SQLAlchemyError

from service.api.deps import EngineDep, HeadRevisionDep, MetricsDep
from service.core.migrations import current_revision
from service.schemas.common import Health, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    return Health(status="ok")


@router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
def metrics(metrics: MetricsDep) -> Response:
    """Prometheus exposition of this process's metrics."""
    return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
def readyz(head: HeadRevisionDep, engine: EngineDep) -> JSONResponse:
    try:
        revision = current_revision(engine)
    except SQLAlchemyError:
        body = Readiness(status="unavailable", database="unreachable", revision=None, head=head)
        return JSONResponse(body.model_dump(), status_code=503)
    if revision != head:
        body = Readiness(
            status="unavailable", database="not migrated", revision=revision, head=head
        )
        return JSONResponse(body.model_dump(), status_code=503)
    return JSONResponse(
        Readiness(status="ready", database="ok", revision=revision, head=head).model_dump()
    )
