"""ServeCachedAnswers: repeats answered before routing, only while their snapshot is current."""

import asyncio
import gc
import weakref
from datetime import date, timedelta
from typing import Any

from starlette.responses import Response

from service.answer_cache import MAX_QUERY_BYTES, AnswerCache, ServeCachedAnswers
from service.performance import SnapshotCache, SnapshotKey

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
        media = "text/csv" if scope.get("csv") else "application/json"
        response = Response(
            f"call {self.calls}".encode(), media_type=media, headers={"x-hint": "h"}
        )
        self.answers.store(scope, KEY, snapshot, response)
        await response(scope, receive, send)


def make(ttl_s: float = 3600, max_entries: int = 16, today: list[date] | None = None):
    days = today if today is not None else [DAY]
    snapshots = SnapshotCache(ttl_s)
    answers = AnswerCache(snapshots, max_entries=max_entries, today=lambda: days[0])
    app = Counting(answers, snapshots)
    return ServeCachedAnswers(app, answers), app, snapshots, answers


def get(asgi, query: bytes = b"budget=800", method: str = "GET", accept: bytes = b"*/*"):
    scope = {
        "type": "http",
        "method": method,
        "path": "/recommend",
        "query_string": query,
        "headers": [(b"accept", accept)],
        "csv": b"text/csv" in accept,
    }
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

    expiring, app, _, _ = make(ttl_s=0)
    get(expiring)
    get(expiring)
    assert app.calls == 2


def test_other_methods_and_long_query_strings_always_reach_the_app():
    asgi, app, _, answers = make()
    get(asgi)
    get(asgi, method="HEAD")
    long_query = b"budget=800&framework=" + b"x" * MAX_QUERY_BYTES
    get(asgi, long_query)
    get(asgi, long_query)
    assert app.calls == 4 and len(answers) == 1


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
