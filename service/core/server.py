"""uvicorn's h11 protocol with the two limits it lacks: 431 for an oversize request head, and
a timeout for a request head that arrives too slowly (slowloris).

httptools (uvicorn's default when installed) has no header-size limit at all, so `serve`
always runs this h11 protocol: h11 stops buffering at `h11_max_incomplete_event_size`
(Settings.max_header_bytes) and says so with error_status_hint 431, which uvicorn turns into
a generic 400; here the hint is kept. A connection whose request head is not complete
`header_timeout_s` after it opened (or after its previous response) is closed.
"""

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.core.settings import get_settings


class GuardedH11Protocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = get_settings().header_timeout_s
        self._error_status = 400
        self._head_timer: asyncio.TimerHandle | None = None
        next_event = self.conn.next_event

        def watched_next_event() -> Any:
            try:
                event = next_event()
            except h11.RemoteProtocolError as exc:
                self._error_status = exc.error_status_hint
                raise
            if isinstance(event, h11.Request):
                self._stop_head_timer()
            return event

        self.conn.next_event = watched_next_event  # type: ignore[method-assign]

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

    def send_400_response(self, msg: str) -> None:
        if self._error_status != 431:
            super().send_400_response(msg)
            return
        body = b"request header fields too large"
        event = h11.Response(
            status_code=431,
            headers=[
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
            reason=b"Request Header Fields Too Large",
        )
        # h11 is in an error state after the oversize head: write the answer by hand.
        head = b"HTTP/1.1 431 Request Header Fields Too Large\r\n" + b"".join(
            name + b": " + value + b"\r\n" for name, value in event.headers
        )
        self.transport.write(head + b"\r\n" + body)
        self.transport.close()

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
