"""ASGI middleware: NUL in the URL (422), and the request-body guards (auth first, 413,
408, in-flight byte budget) before any handler parses the body."""

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


class RejectNulInUrl:
    """422 for a NUL (%00) in the path or query: no text column can store it, and Postgres
    would otherwise fail the query with an error instead of a clear answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path", b"") + b"?" + scope.get("query_string", b"")
            if b"%00" in raw or b"\x00" in raw or "\x00" in scope["path"]:
                payload = json.dumps(
                    {
                        "detail": [
                            {
                                "loc": ["query"],
                                "msg": "NUL characters are not allowed",
                                "type": "nul_character",
                            }
                        ]
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 422,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": payload})
                return
        await self.app(scope, receive, send)


Authenticate = Callable[[str], bool]


def _names_a_format(scope: Scope) -> bool:
    """`?format=...` declares the body's format itself (the importers parse and validate it)."""
    query = scope.get("query_string", b"").decode("latin-1")
    return any(part.startswith("format=") for part in query.split("&"))


class BodySizeLimit:
    """Guards every request body before a handler sees it.

    * Authentication first: every route with a body needs a bearer token. Without one, or
      with one that matches no live key or host (`authenticate`, run in a worker thread), the
      body is not read at all: the app gets an empty body and answers its usual 401.
    * 413 for bodies over `max_bytes`, whether or not Content-Length was sent (at most
      max_bytes + one chunk is read).
    * Bytes buffered by all requests in flight are bounded by `max_inflight_bytes`: a
      request whose next chunk would pass it is answered 503 (Retry-After: 1) at once.
    * A body that is not complete within `timeout_s` of its first byte being awaited gets 408.
    * A non-empty body that is not declared JSON (no or another Content-Type) gets 415, unless
      the query names its `format=` (a tool's raw output, e.g. llama-bench JSONL or a CSV).
    * A client that hangs up mid-body is left alone (RequestContext counts it as 499).
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        authenticate: Authenticate | None = None,
        max_inflight_bytes: int | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.authenticate = authenticate
        self.max_inflight_bytes = max_inflight_bytes
        self.timeout_s = timeout_s
        self.inflight_bytes = 0  # only touched from the event loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _answer(send, 413, f"request body larger than {self.max_bytes} bytes")
            return
        if self.authenticate is not None and not await self._authenticated(scope):
            await self.app(scope, _empty_body(receive), send)
            return
        held = [0]  # bytes this request holds in the in-flight budget
        try:
            body = await self._read(receive, send, held)
        finally:
            self.inflight_bytes -= held[0]
        if body is None:
            return
        if body and not _is_json(scope) and not _names_a_format(scope):
            await _answer(send, 415, "send the body as JSON with 'Content-Type: application/json'")
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive, send: Send, held: list[int]) -> bytes | None:
        """The whole body, or None once an answer (413, 408, 503) was sent or the client left.
        Bytes buffered are added to `held[0]` and to the shared in-flight count."""
        chunks: list[bytes] = []
        size = 0
        deadline = (
            None if self.timeout_s is None else asyncio.get_running_loop().time() + (self.timeout_s)
        )
        while True:
            try:
                if deadline is None:
                    message = await receive()
                else:
                    remaining = deadline - asyncio.get_running_loop().time()
                    message = await asyncio.wait_for(receive(), max(remaining, 0.0))
            except TimeoutError:
                await _answer(send, 408, f"request body not received within {self.timeout_s} s")
                return None
            if message["type"] == "http.disconnect":
                return None  # the client left: there is nobody to answer and nothing to process
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _answer(send, 413, f"request body larger than {self.max_bytes} bytes")
                return None
            if chunk:
                limit = self.max_inflight_bytes
                if limit is not None and self.inflight_bytes + len(chunk) > limit:
                    await _answer(
                        send, 503, "too many request bodies in flight; retry", retry_after=1
                    )
                    return None
                self.inflight_bytes += len(chunk)
                held[0] += len(chunk)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _authenticated(self, scope: Scope) -> bool:
        token = _bearer(scope)
        if token is None or self.authenticate is None:
            return False
        try:
            return await anyio.to_thread.run_sync(self.authenticate, token)
        except Exception:  # database trouble: the route's own auth answers (503) as usual
            log.warning("bearer pre-check failed; leaving it to the route", exc_info=True)
            return True


def _empty_body(receive: Receive) -> Receive:
    """A receive that delivers an empty body (the real one is never read)."""
    sent = False

    async def empty() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return await receive()

    return empty


def _is_json(scope: Scope) -> bool:
    """Content-Type application/json or any +json type (every body this API takes is JSON)."""
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or media.endswith(b"+json")
    return False


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and 0 < len(token) <= 256:
                return token
            return None
    return None


async def _answer(send: Send, status: int, detail: str, retry_after: int | None = None) -> None:
    payload = json.dumps({"detail": detail, "suggestions": []}).encode()
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"),
    ]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class HttpMethods:
    """HEAD on every GET route (answered as the GET, without the body), OPTIONS on every route
    (204 with the full Allow list), and `Vary: Accept` on every answer, since read answers
    switch between JSON and CSV on Accept. Routes come from `router` (the app's)."""

    def __init__(self, app: ASGIApp, router: Any) -> None:
        self.app = app
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method == "OPTIONS":
            allowed = self._allowed(scope)
            if allowed:
                allow = ", ".join(sorted(allowed | {"OPTIONS"}))
                headers = [(b"allow", allow.encode()), (b"content-length", b"0")]
                await send({"type": "http.response.start", "status": 204, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return
        head = method == "HEAD" and "GET" in self._allowed(scope)

        async def send_varied(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"vary", b"Accept")]
            elif head and message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"} if head else scope, receive, send_varied)

    def _allowed(self, scope: Scope) -> set[str]:
        """Methods of the routes whose path matches (GET implies HEAD)."""
        out: set[str] = set()
        probe = {**scope, "method": "GET"}
        for route in every_route(self.router):
            methods = getattr(route, "methods", None)
            if not methods:
                continue
            match, _ = route.matches(probe)
            if match.name in ("FULL", "PARTIAL"):
                out |= set(methods)
        if "GET" in out:
            out.add("HEAD")
        return out


def every_route(router: Any) -> list[Any]:
    """Every route of `router`, through included routers (FastAPI keeps them nested)."""
    out: list[Any] = []
    for route in getattr(router, "routes", []):
        inner = getattr(route, "original_router", None)
        out.extend(every_route(inner) if inner is not None else [route])
    return out
