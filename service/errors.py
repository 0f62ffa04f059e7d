"""Errors the API raises on purpose, and the handlers that turn them into JSON answers."""

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError


class ApiError(Exception):
    status_code = 400

    def __init__(self, detail: str, suggestions: list[str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.suggestions = suggestions or []


class NotFound(ApiError):
    status_code = 404


class Conflict(ApiError):
    status_code = 409


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return JSONResponse(
        {"detail": exc.detail, "suggestions": exc.suggestions}, status_code=exc.status_code
    )


async def _database_unavailable(_request: Request, _exc: Exception) -> JSONResponse:
    # A lost connection is the database's outage, not a bug: tell clients to retry.
    return JSONResponse(
        {"detail": "database unavailable, retry later", "suggestions": []},
        status_code=503,
        headers={"Retry-After": "5"},
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(PoolTimeoutError, _database_unavailable)
