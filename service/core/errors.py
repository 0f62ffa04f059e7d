"""Errors the API raises on purpose, and the handlers that turn them into JSON answers."""

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException


class ApiError(Exception):
    """Base of the errors services raise on purpose; each subclass is one documented answer.

    Answered as {"detail": ..., "suggestions": [...]} with `status_code` and `headers`.
    """

    status_code = 400

    def __init__(
        self,
        detail: str,
        suggestions: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.suggestions = suggestions or []
        self.headers = headers


class NotFound(ApiError):
    status_code = 404


SHOWN_SLUG_CHARS = 80  # catalog slugs are at most 64 characters


class UnknownSlug(NotFound):
    """A slug that names no catalog row; `suggestions` are the closest known slugs."""

    def __init__(self, kind: str, slug: str, suggestions: list[str]) -> None:
        # a path segment has no length limit: echo the start of one, not 60,000 characters
        shown = slug if len(slug) <= SHOWN_SLUG_CHARS else f"{slug[:SHOWN_SLUG_CHARS]}..."
        super().__init__(f"unknown {kind} '{shown}'", suggestions)
        self.kind = kind
        self.slug = slug


class Conflict(ApiError):
    status_code = 409


class Unauthorized(ApiError):
    status_code = 401

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(ApiError):
    status_code = 403


class RateLimited(ApiError):
    status_code = 429

    def __init__(self, detail: str, retry_after_s: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(retry_after_s)})


class InvalidInput(Exception):
    """Request input that fails a check beyond its schema: answered 422 in the same shape as
    FastAPI's validation errors ({"detail": [{"loc", "msg", "type", ...}]})."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} invalid fields")
        self.errors = errors

    @classmethod
    def one(cls, loc: tuple[str | int, ...], msg: str, kind: str, **extra: Any) -> "InvalidInput":
        return cls([{"loc": list(loc), "msg": msg, "type": kind, **extra}])


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return JSONResponse(
        {"detail": exc.detail, "suggestions": exc.suggestions},
        status_code=exc.status_code,
        headers=exc.headers,
    )


async def _invalid_input(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InvalidInput)
    return JSONResponse({"detail": exc.errors}, status_code=422)


def _clean_error(error: Any) -> dict[str, Any]:
    """One validation error without the offending input: it may be huge, secret, or not
    representable in JSON at all (NaN, infinity), which would turn a 422 into a 500."""
    clean = {k: v for k, v in dict(error).items() if k not in ("input", "ctx", "url")}
    if "ctx" in error:
        clean["ctx"] = {k: str(v) for k, v in error["ctx"].items()}
    return clean


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": [_clean_error(e) for e in exc.errors()]}, status_code=422)


async def _http_error(request: Request, exc: Exception) -> Any:
    """FastAPI answers 400 for a body it cannot decode (not UTF-8); to clients that is just
    another invalid body, so it gets the same 422 as malformed JSON."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:
        error = {"loc": ["body"], "msg": "body is not valid UTF-8 JSON", "type": "json_invalid"}
        return JSONResponse({"detail": [error]}, status_code=422)
    return await http_exception_handler(request, exc)


async def _database_unavailable(_request: Request, exc: Exception) -> JSONResponse:
    # A lost connection is the database's outage, not a bug: tell clients to retry.
    unavailable = isinstance(exc, OperationalError | InterfaceError | PoolTimeoutError) or (
        isinstance(exc, DBAPIError) and exc.connection_invalidated
    )
    if not unavailable:
        raise exc
    return JSONResponse(
        {"detail": "database unavailable, retry later", "suggestions": []},
        status_code=503,
        headers={"Retry-After": "5"},
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(InvalidInput, _invalid_input)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(DBAPIError, _database_unavailable)
    app.add_exception_handler(PoolTimeoutError, _database_unavailable)
