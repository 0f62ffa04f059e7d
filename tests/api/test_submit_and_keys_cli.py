"""The submit client's retry/backoff against the real app behind a flaky link, and the
`gpu-advisor keys` commands against the test database."""

import httpx
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from service import submit
from service.cli import app as cli
from service.models import ApiKey, Result


class FlakyTransport(httpx.BaseTransport):
    """Fails the first `failures` requests (connection error, then 503), then forwards."""

    def __init__(self, inner: httpx.BaseTransport, failures: int) -> None:
        self.inner, self.failures, self.calls = inner, failures, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.calls <= self.failures:
            if self.calls % 2:
                raise httpx.ConnectError("connection refused", request=request)
            return httpx.Response(503, headers={"Retry-After": "1"}, json={"detail": "down"})
        return self.inner.handle_request(request)


def rows(n):
    return [
        {
            "gpu": "nvidia-rtx-4090",
            "workload": "resnet50-train",
            "value": 1400.0 + i,
            "precision": "fp16",
            "framework": "pytorch",
        }
        for i in range(n)
    ]


def test_submit_retries_network_errors_and_5xx_then_succeeds_once(client, keys, db):
    flaky = FlakyTransport(client._transport, failures=3)
    sleeps: list[float] = []
    items = submit.validate_rows(rows(12))
    with httpx.Client(
        transport=flaky, base_url="http://testserver", headers=keys.auth(keys.submitter)
    ) as http:
        report = submit.submit(http, items, batch_size=5, sleep=sleeps.append, backoff_s=0.25)
    assert report.statuses["accepted"] == 12 and report.batches == 3
    assert report.retries == 3
    assert sleeps == [0.25, 1.0, 2.0]  # doubling, raised to Retry-After (1 s) when given
    with Session(db) as session:
        assert session.exec(select(func.count()).select_from(Result)).one() == 12


def test_submit_gives_up_after_its_attempts(client, keys):
    flaky = FlakyTransport(client._transport, failures=100)
    with httpx.Client(transport=flaky, base_url="http://testserver") as http:
        try:
            submit.post_batch(http, rows(1), attempts=3, sleep=lambda _s: None)
        except httpx.HTTPError:
            pass
        else:
            raise AssertionError("expected the last failure to surface")
    assert flaky.calls == 3


def test_batch_key_depends_only_on_content():
    a = [r for r in rows(3)]
    assert submit.batch_key(a) == submit.batch_key([dict(r) for r in a])
    assert submit.batch_key(a) != submit.batch_key(rows(4)[1:])


def test_keys_cli_create_list_revoke(db, database_url, monkeypatch):
    from service.core.settings import get_settings

    monkeypatch.setenv("GPU_ADVISOR_DATABASE_URL", database_url)
    get_settings.cache_clear()
    runner = CliRunner()
    try:
        created = runner.invoke(cli, ["keys", "create", "--name", "lab-z", "--role", "admin"])
        assert created.exit_code == 0, created.output
        secret = created.output.strip().splitlines()[-1]
        assert secret.startswith("gpa_")
        with Session(db) as session:
            key = session.exec(select(ApiKey).where(ApiKey.name == "lab-z")).one()
        assert key.role == "admin" and secret not in (key.sha256, key.prefix)
        listed = runner.invoke(cli, ["keys", "list"])
        assert "lab-z" in listed.output and secret not in listed.output
        assert runner.invoke(cli, ["keys", "revoke", key.prefix]).exit_code == 0
        assert "revoked" in runner.invoke(cli, ["keys", "list"]).output
        assert runner.invoke(cli, ["keys", "revoke", "nosuch"]).exit_code == 1
        assert (
            runner.invoke(cli, ["keys", "create", "--name", "x", "--role", "root"]).exit_code != 0
        )
    finally:
        get_settings.cache_clear()
