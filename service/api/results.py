"""POST /results (one or a batch), GET /results, GET /results/{id}, admin PATCH /results/{id}."""

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlmodel import Session, col, select

from service.api.deps import MetricsDep, ReadModelDep, RowId, SessionDep, WriteSessionDep
from service.api.pagination import id_page
from service.api.responses import NOT_FOUND, TOO_LARGE, WRITE_AUTH
from service.api.security import AdminKey, SubmitterKey
from service.catalog.lookup import by_slugs
from service.core.errors import InvalidInput, NotFound
from service.ingest import idempotency
from service.ingest.gate import BatchRejected, store_results
from service.ingest.groups import refresh_groups
from service.ingest.importers.convert import read_import
from service.models import ApiKey, Gpu, Result, ResultAudit, Workload, utcnow
from service.schemas.common import Page
from service.schemas.results import (
    ResultBatchIn,
    ResultBatchOut,
    ResultIn,
    ResultOutcome,
    ResultPatch,
    ResultRead,
    ResultStatus,
)

router = APIRouter(prefix="/results", tags=["results"])

_POST_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "anyOf": [
                        {"$ref": "#/components/schemas/ResultIn"},
                        {"$ref": "#/components/schemas/ResultBatchIn"},
                    ]
                }
            }
        },
    }
}
_ERRORS = WRITE_AUTH | TOO_LARGE


def _parse(payload: Any) -> tuple[list[ResultIn], bool]:
    """Validate the body as a batch ({"results": [...]}) or a single result."""
    is_batch = isinstance(payload, dict) and "results" in payload
    try:
        if is_batch:
            return ResultBatchIn.model_validate(payload).results, True
        return [ResultIn.model_validate(payload)], False
    except ValidationError as exc:
        raise InvalidInput(
            [
                {"loc": ["body", *e["loc"]], "msg": e["msg"], "type": e["type"]}
                for e in exc.errors(include_url=False, include_input=False)
            ]
        ) from None


@router.post(
    "",
    status_code=201,
    openapi_extra=_POST_BODY,
    responses={
        201: {"model": ResultBatchOut | ResultOutcome, "description": "stored, with statuses"},
        **_ERRORS,
    },
    summary="Submit one benchmark result or a batch of up to 1000",
)
def post_results(
    metrics: MetricsDep,
    reads: ReadModelDep,
    submitter: SubmitterKey,
    session: WriteSessionDep,
    payload: Annotated[Any, Body(include_in_schema=False)],
    idempotency_key: Annotated[
        str | None, Header(alias="Idempotency-Key", min_length=1, max_length=255)
    ] = None,
    body_format: Annotated[
        Literal["json", "llama-bench", "lambda-csv", "mlperf"],
        Query(
            alias="format",
            description="json (default) or a tool's raw output: llama-bench's JSON or JSONL, "
            "Lambda's table CSV, or the MLPerf submission checker's summary.csv",
        ),
    ] = "json",
) -> JSONResponse:
    provenance = None
    if body_format == "json":
        items, is_batch = _parse(payload)
    else:  # the tool's raw output: sent with --data-binary it arrives as bytes
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else None
        if text is None:  # sent as application/json: FastAPI parsed it already
            text = json.dumps(payload)
        items, provenance = read_import(session, body_format, text)
        is_batch, payload = True, {"format": body_format, "body": text}
    assert submitter.id is not None
    record = None
    if idempotency_key is not None:
        try:
            claimed = idempotency.claim(
                session, submitter.id, idempotency_key, idempotency.fingerprint(payload)
            )
        except idempotency.KeyReused:
            raise InvalidInput.one(
                ("header", "Idempotency-Key"),
                "this Idempotency-Key was already used with a different body",
                "idempotency_key_reused",
            ) from None
        if isinstance(claimed, idempotency.Replay):
            return JSONResponse(
                claimed.body,
                status_code=claimed.status_code,
                headers={"Idempotent-Replayed": "true"},
            )
        record = claimed
    try:
        stored = store_results(session, items, submitter, provenance)
        outcomes = [o.model_dump() for o in stored]
    except BatchRejected as exc:
        session.rollback()
        if not is_batch:  # one posted object: its fields are at the body's top level
            for error in exc.errors:
                error["loc"] = ["body", *error["loc"][3:]]
        raise
    body: Any = {"results": outcomes} if is_batch else outcomes[0]
    if record is not None:
        record.status_code = 201
        record.response = body
        session.add(record)
    session.commit()
    reads.changed()
    ingested = metrics.results
    for outcome in outcomes:
        ingested.labels(outcome["status"]).inc()
    return JSONResponse(body, status_code=201)


def _read(result: Result, gpu: str, workload: str, submitter: str | None) -> ResultRead:
    return ResultRead.model_validate(
        {**result.model_dump(), "gpu": gpu, "workload": workload, "submitter": submitter}
    )


def _query() -> Any:
    return (
        select(Result, Gpu.slug, Workload.slug, ApiKey.prefix)
        .join(Gpu, col(Gpu.id) == Result.gpu_id)
        .join(Workload, col(Workload.id) == Result.workload_id)
        .outerjoin(ApiKey, col(ApiKey.id) == Result.submitter_id)
    )


@router.get("", response_model=Page[ResultRead])
def list_results(
    session: SessionDep,
    gpu: Annotated[str | None, Query(max_length=64)] = None,
    workload: Annotated[str | None, Query(max_length=64)] = None,
    status: ResultStatus | None = None,
    submitter: Annotated[str | None, Query(max_length=16, description="key prefix")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Page[ResultRead]:
    query = _query()
    if gpu is not None:
        _refuse_unknown("gpu", by_slugs(session, Gpu, [gpu])[1])
        query = query.where(Gpu.slug == gpu)
    if workload is not None:
        _refuse_unknown("workload", by_slugs(session, Workload, [workload])[1])
        query = query.where(Workload.slug == workload)
    if status is not None:
        query = query.where(Result.status == status)
    if submitter is not None:
        query = query.where(ApiKey.prefix == submitter)
    page, next_cursor = id_page(session, query, col(Result.id), cursor, limit)
    items = [_read(*row) for row in page]
    return Page[ResultRead](items=items, next_cursor=next_cursor)


def _refuse_unknown(name: str, unknown: dict[str, list[str]]) -> None:
    """A filter naming no catalog row is a 422 with the closest slugs, not an empty page that
    reads as 'no results yet'."""
    for slug, suggestions in unknown.items():
        raise InvalidInput.one(
            ("query", name), f"unknown {name} {slug!r}", f"unknown_{name}", suggestions=suggestions
        )


def _one(session: Session, result_id: int) -> ResultRead:
    row = session.exec(_query().where(Result.id == result_id)).first()
    if row is None:
        raise NotFound(f"no result with id {result_id}")
    return _read(*row)


@router.get("/{result_id}", response_model=ResultRead, responses=NOT_FOUND)
def get_result(result_id: RowId, session: SessionDep) -> ResultRead:
    return _one(session, result_id)


@router.patch(
    "/{result_id}",
    response_model=ResultRead,
    responses=NOT_FOUND | _ERRORS,
    summary="Admin: set a result's status by hand (audited; never re-evaluated after)",
)
def patch_result(
    result_id: RowId,
    change: ResultPatch,
    admin: AdminKey,
    session: WriteSessionDep,
    reads: ReadModelDep,
) -> ResultRead:
    result = session.get(Result, result_id)
    if result is None:
        raise NotFound(f"no result with id {result_id}")
    session.add(
        ResultAudit(
            result_id=result_id,
            old_status=result.status,
            new_status=change.status,
            reason=change.reason,
            actor_id=admin.id,
        )
    )
    result.status = change.status
    result.reason = f"admin: {change.reason}"
    result.status_locked = True
    result.updated_at = utcnow()
    session.add(result)
    session.flush()
    refresh_groups(
        session, [(result.gpu_id, result.workload_id, result.precision, result.gpu_count)]
    )
    session.commit()
    reads.changed()
    return _one(session, result_id)
