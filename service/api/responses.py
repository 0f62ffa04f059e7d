"""OpenAPI declarations of the error answers routers share."""

from typing import Any

from service.schemas.common import Problem

Responses = dict[int | str, dict[str, Any]]

AUTH: Responses = {
    401: {"model": Problem, "description": "missing, invalid or revoked credentials"},
    403: {"model": Problem, "description": "the credentials lack the role"},
}
RATE_LIMITED: Responses = {
    429: {"model": Problem, "description": "write rate limit exceeded; see Retry-After"}
}
WRITE_AUTH: Responses = AUTH | RATE_LIMITED
NOT_FOUND: Responses = {404: {"model": Problem, "description": "unknown id or slug"}}
CONFLICT: Responses = {409: {"model": Problem, "description": "already exists"}}
TOO_LARGE: Responses = {413: {"model": Problem, "description": "body over the size limit"}}
NO_CONTENT: Responses = {204: {"description": "nothing to do"}}
REPEAT: Responses = {200: {"description": "a repeat: the stored answer, not stored again"}}
