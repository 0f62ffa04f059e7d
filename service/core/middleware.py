"""ASGI middleware: request body size limit (413) before any handler parses the body."""

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send


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


class BodySizeLimit:
    """Answer 413 for bodies over `max_bytes`, whether or not Content-Length was sent.

    The body is read here (at most max_bytes + one chunk) and replayed to the app, so an
    oversize chunked upload is refused without buffering more than the limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._too_large(send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left: there is nobody to answer and nothing to process
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        payload = json.dumps(
            {"detail": f"request body larger than {self.max_bytes} bytes", "suggestions": []}
        ).encode()
        headers: list[Any] = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
