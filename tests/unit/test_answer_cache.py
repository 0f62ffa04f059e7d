"""ServeCachedAnswers: repeats answered before routing, only while their snapshot is current."""

import asyncio
import gc
import time
import weakref
from datetime import date, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from service.api.csv_format import wants_csv
from service.read_model.answer_cache import (
    MAX_QUERY_BYTES,
    AnswerCache,
    ServeCachedAnswers,
    answer_etag,
    answer_key,
)
from service.read_model.snapshot import SnapshotKey
from service.read_model.snapshot_cache import SnapshotCache

DAY = date(2026, 12, 3)
KEY = SnapshotKey("llm-train", None, "any", DAY)


class Route:
    path = "/recommend"


class Snap:
    """Stands in for a Snapshot (the cache only holds it, weakly)."""


class Counting:
    """The app behind the middleware: answers with its call count and stores the answer."""

    def __init__(self, answers: AnswerCache, snapshots: SnapshotCache) -> None:
        self.answers, self.snapshots, self.calls = answers, snapshots, 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        scope["route"] = Route()
        snapshot = self.snapshots.get(KEY, Snap)
        media = "text/csv" if wants_csv(Request(scope), None) else "application/json"
        response = Response(
            f"call {self.calls}".encode(), media_type=media, headers={"x-hint": "h"}
        )
        self.answers.store(scope, KEY, snapshot, response)
        await response(scope, receive, send)


def make(
    ttl_s: float = 3600,
    max_entries: int = 16,
    max_bytes: int = 1 << 20,
    today: list[date] | None = None,
):
    days = today if today is not None else [DAY]
    snapshots = SnapshotCache(ttl_s)
    answers = AnswerCache(snapshots, max_entries, max_bytes, today=lambda: days[0])
    app = Counting(answers, snapshots)
    return ServeCachedAnswers(app, answers), app, snapshots, answers


def request_scope(
    query: bytes = b"budget=800", method: str = "GET", headers: list[Any] | None = None
) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": "/recommend",
        "query_string": query,
        "headers": [(b"accept", b"*/*")] if headers is None else headers,
    }


def get(asgi, query: bytes = b"budget=800", method: str = "GET", accept: bytes = b"*/*"):
    scope = request_scope(query, method, [(b"accept", accept)])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(asgi(scope, receive, send))
    headers = dict(sent[0]["headers"])
    return sent[0]["status"], headers, sent[1]["body"], scope["route"].path


def test_a_repeat_is_answered_without_the_app_with_the_same_bytes_and_headers():
    asgi, app, _, _ = make()
    first = get(asgi)
    second = get(asgi)
    assert app.calls == 1
    assert second == first
    assert first[1][b"x-hint"] == b"h" and first[1][b"content-length"] == b"6"
    assert second[3] == "/recommend"  # metrics and access logs still name the route


def test_query_string_and_csv_accept_are_part_of_the_key():
    asgi, app, _, _ = make()
    json_body = get(asgi)[2]
    csv_answer = get(asgi, accept=b"text/csv")
    other_budget = get(asgi, b"budget=900")
    assert app.calls == 3
    assert csv_answer[1][b"content-type"].startswith(b"text/csv") and csv_answer[2] != json_body
    assert get(asgi, accept=b"text/csv") == csv_answer and get(asgi)[2] == json_body
    assert get(asgi, b"budget=900") == other_budget and app.calls == 3


def test_a_local_write_the_ttl_and_a_new_day_each_end_a_stored_answer():
    days = [DAY]
    asgi, app, snapshots, _ = make(today=days)
    get(asgi)
    snapshots.invalidate()  # a write through this process
    assert get(asgi)[2] == b"call 2"
    days[0] = DAY + timedelta(days=1)  # current prices depend on the date
    assert get(asgi)[2] == b"call 3"

    expiring, app, _, answers = make(ttl_s=1.0)
    get(expiring)
    get(expiring)
    assert app.calls == 1 and len(answers) == 1
    time.sleep(1.1)
    assert get(expiring)[2] == b"call 2"  # the outdated entry was dropped and replaced


def test_an_outdated_entry_is_dropped_when_found():
    asgi, _, snapshots, answers = make()
    get(asgi)
    get(asgi, b"budget=900")
    snapshots.invalidate()
    before = answers.size_bytes
    snapshots.get(KEY, Snap)  # rebuilt by someone else: the route is not asked here
    assert answers.current(request_scope(b"budget=900")) is None
    assert len(answers) == 1 and answers.size_bytes == before - len(b"call 2")


def test_the_csv_flag_of_the_key_is_wants_csv():
    for headers in (
        [],
        [(b"accept", b"text/csv")],
        [(b"accept", b"application/json, text/csv;q=0.5")],
        [(b"accept", b"application/json"), (b"accept", b"text/csv")],
        [(b"accept", b"text/csv"), (b"accept", b"application/json")],
        [(b"user-agent", b"text/csv")],
    ):
        scope = request_scope(headers=headers)
        key = answer_key(scope)
        assert key is not None and key[2] == wants_csv(Request(scope), None), headers


def test_other_methods_and_long_query_strings_always_reach_the_app():
    asgi, app, _, answers = make()
    get(asgi)
    get(asgi, method="HEAD")
    long_query = b"budget=800&framework=" + b"x" * MAX_QUERY_BYTES
    get(asgi, long_query)
    get(asgi, long_query)
    assert app.calls == 4 and len(answers) == 1


def test_a_hit_keeps_an_answer_and_the_least_recently_used_goes_first():
    asgi, app, _, answers = make(max_entries=2)
    get(asgi, b"budget=1")
    get(asgi, b"budget=2")
    get(asgi, b"budget=1")  # a hit: budget=2 is now the least recently used
    get(asgi, b"budget=3")
    assert app.calls == 3 and len(answers) == 2
    get(asgi, b"budget=1")
    assert app.calls == 3
    get(asgi, b"budget=2")
    assert app.calls == 4


def test_the_byte_bound_evicts_and_oversize_bodies_are_not_stored():
    asgi, app, _, answers = make(max_bytes=13)  # two 6-byte bodies ("call N")
    for budget in (b"budget=1", b"budget=2", b"budget=3"):
        get(asgi, budget)
    assert len(answers) == 2 and answers.size_bytes == 12
    tiny, app, _, answers = make(max_bytes=5)
    get(tiny)
    get(tiny)
    assert app.calls == 2 and len(answers) == 0


def test_when_full_the_oldest_answer_goes_first():
    asgi, app, _, answers = make(max_entries=2)
    for budget in (b"budget=1", b"budget=2", b"budget=3"):
        get(asgi, budget)
    assert len(answers) == 2
    get(asgi, b"budget=3")
    get(asgi, b"budget=2")
    assert app.calls == 3
    get(asgi, b"budget=1")
    assert app.calls == 4


def test_stored_answers_do_not_keep_replaced_snapshots_alive():
    asgi, _, snapshots, answers = make()
    get(asgi)
    old = weakref.ref(snapshots.fresh(KEY))
    snapshots.invalidate()
    get(asgi, b"budget=900")  # rebuilds: the cache now holds the new snapshot only
    gc.collect()
    assert old() is None and len(answers) == 2
    assert get(asgi)[2] == b"call 3"  # the entry whose snapshot is gone is computed again


def test_the_etag_is_hashed_once_when_stored_and_brought_by_each_repeat(monkeypatch):
    from service.api import http_cache
    from service.read_model import answer_cache

    hashed: list[bytes] = []

    def counting(path: str, query: bytes, csv: bool, body: bytes) -> bytes:
        hashed.append(body)
        return answer_etag(path, query, csv, body)

    monkeypatch.setattr(answer_cache, "answer_etag", counting)
    monkeypatch.setattr(http_cache, "answer_etag", counting)
    monkeypatch.setattr(
        Route, "endpoint", staticmethod(http_cache.http_cached(lambda: None)), raising=False
    )
    asgi, app, _, _ = make()
    first = get(http_cache.HttpCaching(asgi, max_age_s=30))
    second = get(http_cache.HttpCaching(asgi, max_age_s=30))
    assert app.calls == 1 and hashed == [b"call 1"]
    expected = answer_etag("/recommend", b"budget=800", False, b"call 1")
    assert first[1][b"etag"] == second[1][b"etag"] == expected
