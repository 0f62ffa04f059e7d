"""uvicorn's httptools protocol with the two limits it lacks: 431 for an oversize request head,
and a timeout for a request head that arrives too slowly (slowloris).

httptools (llhttp, in C) parses a request about twice as fast as h11 (pure Python): on a cached
/recommend, one worker, wrk -t2 -c32, 9,852 req/s against 5,223 with uvicorn's h11 protocol on
the same machine and database. But httptools bounds nothing: it buffers a header that never
ends. Here the head is bounded twice, to Settings.max_header_bytes:

- while a head is incomplete, the bytes received since it began are counted before parsing,
  so a head that never ends is refused once it passes the limit (memory stays bounded);
- the request line and headers the parser hands over are summed, so a whole oversize head that
  arrives in one read (asyncio reads up to 256 KiB at once) is refused too.

Either way the answer is 431 and the connection is closed. A connection whose request head is
not complete `header_timeout_s` after it opened (or after its previous response) is closed.
"""

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from service.core.settings import get_settings

HEAD_OVERHEAD = 4  # ": " and CRLF around each header line


class OversizeHead(Exception):
    """Raised inside a parser callback; httptools turns it into HttpParserError."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = get_settings()
        self.max_head_bytes = settings.max_header_bytes
        self.header_timeout_s = settings.header_timeout_s
        self._head_timer: asyncio.TimerHandle | None = None
        self._in_head = True  # between the end of one request (or the start) and the next head
        self._received = 0  # bytes received since the current head began
        self._parsed = 0  # request line and header bytes the parser handed over
        self._oversize = False

    # --- the size bound ------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._received += len(data)
        super().data_received(data)
        if self.transport.is_closing() or self._oversize:
            return  # already answered (400 for a malformed head, or 431 from a parser callback)
        if self._in_head and self._received > self.max_head_bytes:
            self._oversize = True
            self.send_400_response("")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._parsed = 0

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + HEAD_OVERHEAD)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._stop_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._received = True, 0

    def _count(self, size: int) -> None:
        self._parsed += size
        if self._parsed > self.max_head_bytes:
            self._oversize = True
            raise OversizeHead

    def send_400_response(self, msg: str) -> None:
        if not self._oversize:
            super().send_400_response(msg)
            return
        body = b"request header fields too large"
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"connection: close\r\n\r\n" + body
        )
        self.transport.close()

    # --- the time bound ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._start_head_timer()

    def _start_head_timer(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()
