"""HTTP caching of read answers: `ETag`, `Cache-Control` and 304 for a matching If-None-Match.

A route opts in once, with the `http_cached` decorator; the `HttpCaching` middleware does the
rest for every answer of such a route, including repeats the answer cache serves before routing
(it sets `scope["route"]` to the route that first answered). Declared per route, applied in one
place: a route cannot send the headers without the 304, or the other way round.

The ETag is a hash of the request (path, raw query string, CSV or JSON) and of the body the
snapshot produced (answer_cache.answer_etag; a stored answer brings the one hashed when it was
stored). It is computed from the answer rather than from this process's snapshot generation,
so that several API processes behind one proxy give the same answer the same tag
(a generation counter is per process: two processes could tag different data alike).
`max-age` is GPU_ADVISOR_CACHE_TTL_S: no longer than a process itself reuses a snapshot.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.read_model.answer_cache import ETAG_SCOPE_KEY, accept_asks_for_csv, answer_etag

F = TypeVar("F", bound=Callable[..., Any])
MARK = "__http_cached__"


def http_cached(endpoint: F) -> F:
    """Mark a GET route's answers as cacheable by clients and proxies (ETag, Cache-Control)."""
    setattr(endpoint, MARK, True)
    return endpoint


def is_http_cached(route: Any) -> bool:
    return bool(getattr(getattr(route, "endpoint", None), MARK, False))


def etag_for(scope: Scope, body: bytes) -> bytes:
    known: bytes | None = scope.get(ETAG_SCOPE_KEY)
    if known is not None:
        return known
    query = scope.get("query_string", b"")
    return answer_etag(scope["path"], query, accept_asks_for_csv(scope), body)


def _if_none_match(scope: Scope) -> bytes | None:
    return next((v for n, v in scope["headers"] if n == b"if-none-match"), None)


def matches(if_none_match: bytes, etag: bytes) -> bool:
    if if_none_match.strip() == b"*":
        return True
    tags = (t.strip().removeprefix(b"W/") for t in if_none_match.split(b","))
    return etag in tags


class HttpCaching:
    """ASGI middleware: for 200 answers of `http_cached` routes, add ETag and Cache-Control
    and answer a matching If-None-Match with 304 and no body."""

    def __init__(self, app: ASGIApp, max_age_s: float) -> None:
        self.app = app
        self.cache_control = f"public, max-age={int(max_age_s)}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if message["status"] == 200 and is_http_cached(scope.get("route")):
                    start = message  # held back until the whole body is known
                    return
                await send(message)
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    await self._finish(scope, start, b"".join(chunks), send)
            else:
                await send(message)

        await self.app(scope, receive, capture)

    async def _finish(self, scope: Scope, start: Message, body: bytes, send: Send) -> None:
        etag = etag_for(scope, body)
        headers = [(n, v) for n, v in start["headers"] if n not in (b"etag", b"cache-control")]
        headers += [(b"etag", etag), (b"cache-control", self.cache_control)]
        wanted = _if_none_match(scope)
        if wanted is not None and matches(wanted, etag):
            kept = [(n, v) for n, v in headers if n not in (b"content-length", b"content-type")]
            await send({"type": "http.response.start", "status": 304, "headers": kept})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})
