"""Finished GET answers, answered again before routing while their snapshot is current.

An answer of /recommend or /rankings depends only on the raw query string, on whether the
client asked for CSV (`Accept`), and on the snapshot it was computed from. The route stores
each answer under that raw key; `ServeCachedAnswers` answers a repeat of the same request at
once, without FastAPI's routing and parameter parsing (in-process, 31 us instead of 273 us for
a repeat answered inside the route), for as long as the SnapshotCache still serves that very
snapshot as fresh. A write through this process, the snapshot's TTL or a new day ends that, as
for every other read.

Errors are never stored: only a route that got as far as an answer stores it, so a bad query
always goes through validation.

A stored answer keeps its ETag (`answer_etag`), hashed once when stored and put in the scope
under ETAG_SCOPE_KEY for api/http_cache.py: hashing an 8 KB body on every repeat took 15% of a
cached answer's server time (py-spy, wrk on one URL).
"""

import hashlib
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from service.read_model.snapshot import utc_today
from service.read_model.snapshot_cache import SnapshotCache

MAX_ENTRIES = 4096
MAX_BYTES = 32 * 1024 * 1024  # bodies in all, per process; least recently used go first
MAX_BODY_BYTES = 256 * 1024  # larger answers (e.g. /recommend?limit=50 is ~45 KB) not stored
MAX_QUERY_BYTES = 1024  # longer query strings are answered but not stored

AnswerKey = tuple[str, bytes, bool]


class DatedKey(Protocol):
    """The SnapshotCache key an answer was computed under (SnapshotKey, llm.LlmDataKey): a
    stored answer is dropped on a new day."""

    @property
    def day(self) -> date: ...

    def __hash__(self) -> int: ...


ETAG_SCOPE_KEY = "gpu_advisor.etag"  # the answer's ETag, when already known


def accept_asks_for_csv(scope: Scope) -> bool:
    """Whether content negotiation picks CSV over JSON (read from the ASGI scope, so the answer
    cache can key on it before any Request exists).

    RFC 9110: media ranges are case-insensitive, each type's quality comes from the most
    specific range that matches it (type/subtype over type/* over */*), q=0 means "not
    acceptable". CSV is chosen only when text/csv's quality beats application/json's; a tie,
    no Accept header, or anything unparsable gives JSON (the default).
    """
    accept = b",".join(value for name, value in scope["headers"] if name == b"accept")
    if b"csv" not in accept and b"CSV" not in accept and b"text/*" not in accept:
        return False  # the common case, without parsing
    return _quality(accept, "text", "csv") > _quality(accept, "application", "json")


def _quality(accept: bytes, kind: str, subtype: str) -> float:
    best_rank, best_q = -1, 0.0
    for item in accept.decode("latin-1").lower().split(","):
        media, *params = (part.strip() for part in item.split(";"))
        main, _, sub = media.partition("/")
        rank = 2 if (main, sub) == (kind, subtype) else 1 if (main, sub) == (kind, "*") else 0
        if not ((main, sub) == ("*", "*") or rank > 0):
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    q = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    q = 0.0
        if rank > best_rank:
            best_rank, best_q = rank, q
    return best_q


def answer_etag(path: str, query: bytes, csv: bool, body: bytes) -> bytes:
    """A strong ETag for `body` as the answer to this request: the same in every process."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(path.encode())
    digest.update(b"?" + query)
    digest.update(b"csv" if csv else b"json")
    digest.update(body)
    return b'"' + digest.hexdigest().encode() + b'"'


def answer_key(scope: Scope) -> AnswerKey | None:
    """(path, raw query string, Accept asks for CSV) for a GET that may be stored, else None."""
    query: bytes = scope.get("query_string", b"")
    if scope["method"] != "GET" or len(query) > MAX_QUERY_BYTES:
        return None
    return scope["path"], query, accept_asks_for_csv(scope)


@dataclass(frozen=True)
class CachedAnswer:
    snapshot_key: DatedKey
    snapshot: weakref.ref[object]  # weak: stored answers must not keep old snapshots alive
    headers: list[tuple[bytes, bytes]]
    body: bytes
    route: Any  # the route that answered, so metrics and access logs name it
    etag: bytes


class AnswerCache:
    """Bounded by entries and by body bytes, least recently used out first, so unrepeated
    queries (cache-busting parameters, say) cannot grow it or push out the popular ones."""

    def __init__(
        self,
        snapshots: SnapshotCache,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        today: Callable[[], date] = utc_today,
    ) -> None:
        self._snapshots = snapshots
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._today = today
        self._lock = threading.Lock()  # routes store from the event loop; be safe for threads
        self._entries: dict[AnswerKey, CachedAnswer] = {}  # in order of last use
        self._bytes = 0
        self.paths: set[str] = set()  # paths with stored answers: other requests skip the lookup

    def store(
        self, scope: Scope, snapshot_key: DatedKey, snapshot: object, response: Response
    ) -> None:
        """Keep `response` (a 200 computed from `snapshot`, the SnapshotCache's entry for
        `snapshot_key`: a Snapshot or a language-model ask's LlmData) for repeats of this
        request."""
        key = answer_key(scope)
        body = bytes(response.body)
        if key is None or len(body) > min(MAX_BODY_BYTES, self._max_bytes):
            return
        if not self._snapshots.is_current(snapshot_key, snapshot):
            return  # a stale snapshot's answer would only be refused on the next lookup
        etag = answer_etag(*key, body)
        scope[ETAG_SCOPE_KEY] = etag  # this first answer is not hashed again either
        entry = CachedAnswer(
            snapshot_key,
            weakref.ref(snapshot),
            list(response.raw_headers),
            body,
            scope.get("route"),
            etag,
        )
        with self._lock:
            self._discard(key)
            while self._entries and (
                len(self._entries) >= self._max_entries or self._bytes + len(body) > self._max_bytes
            ):
                self._discard(next(iter(self._entries)))
            self._entries[key] = entry
            self._bytes += len(body)
            self.paths.add(key[0])

    def current(self, scope: Scope) -> CachedAnswer | None:
        """The stored answer to this request, if its snapshot is still the current one."""
        if scope["path"] not in self.paths:
            return None
        key = answer_key(scope)
        if key is None:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            snapshot = entry.snapshot()
            if (
                snapshot is None
                or entry.snapshot_key.day != self._today()
                or not self._snapshots.is_current(entry.snapshot_key, snapshot)
            ):
                self._discard(key)  # outdated: dropped, the route answers anew
                return None
            self._entries[key] = self._entries.pop(key)  # now the most recently used
        return entry

    def _discard(self, key: AnswerKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry.body)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes


class ServeCachedAnswers:
    """ASGI middleware: answer a request from the AnswerCache when it holds a current answer."""

    def __init__(self, app: ASGIApp, answers: AnswerCache) -> None:
        self.app = app
        self.answers = answers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hit = self.answers.current(scope) if scope["type"] == "http" else None
        if hit is None:
            await self.app(scope, receive, send)
            return
        scope["route"] = hit.route
        scope[ETAG_SCOPE_KEY] = hit.etag
        await send({"type": "http.response.start", "status": 200, "headers": list(hit.headers)})
        await send({"type": "http.response.body", "body": hit.body})
