"""HTTP caching of the read routes: ETag, Cache-Control, 304 on If-None-Match."""

import pytest

from service.api.http_cache import is_http_cached

CACHED = ["/recommend?budget=800", "/rankings", "/gpus", "/gpus/nvidia-rtx-4090", "/workloads"]


def test_every_read_route_is_declared_cached():
    """Switching caching off on one of these routes (dropping @http_cached) fails here."""
    from service.api import gpus, rankings, recommend, workloads

    wanted = {"/recommend", "/rankings", "/gpus", "/gpus/{slug}", "/workloads"}
    routes = [
        r
        for module in (recommend, rankings, gpus, workloads)
        for r in module.router.routes
        if getattr(r, "path", None) in wanted and "GET" in getattr(r, "methods", ())
    ]
    assert len(routes) == 5
    assert all(is_http_cached(r) for r in routes)


@pytest.mark.parametrize("url", CACHED)
def test_read_answers_carry_etag_and_304_on_match(client, url):
    first = client.get(url)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert first.headers["cache-control"].startswith("public, max-age=")
    again = client.get(url, headers={"If-None-Match": etag})  # may come from the answer cache
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag
    other = client.get(url, headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200 and other.content == first.content


def test_etag_depends_on_query_and_format(client):
    a = client.get("/recommend?budget=800").headers["etag"]
    b = client.get("/recommend?budget=900").headers["etag"]
    c = client.get("/recommend?budget=800", headers={"Accept": "text/csv"}).headers["etag"]
    assert len({a, b, c}) == 3


def test_errors_and_writes_carry_no_etag(client):
    bad = client.get("/recommend?budget=-1")
    assert bad.status_code == 422 and "etag" not in bad.headers
    assert "etag" not in client.get("/health").headers
