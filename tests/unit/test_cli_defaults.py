"""CLI defaults: the server address, and `keys` against a database that is not migrated."""

import pytest
from typer.testing import CliRunner

from service.cli import app as cli
from service.cli import server_url
from service.core.settings import get_settings


@pytest.fixture
def env(monkeypatch):
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_server_defaults_to_host_and_port(env):
    env.delenv("GPU_ADVISOR_SERVER", raising=False)
    env.setenv("GPU_ADVISOR_HOST", "10.1.2.3")
    env.setenv("GPU_ADVISOR_PORT", "9123")
    assert server_url(None) == "http://10.1.2.3:9123"
    env.setenv("GPU_ADVISOR_HOST", "0.0.0.0")
    get_settings.cache_clear()
    assert server_url(None) == "http://127.0.0.1:9123"
    assert server_url("http://elsewhere:1") == "http://elsewhere:1"


def test_server_option_reads_gpu_advisor_server(env):
    env.setenv("GPU_ADVISOR_SERVER", "http://127.0.0.1:1")  # nothing listens there
    answer = CliRunner().invoke(cli, ["recommend", "--budget", "800"])
    assert answer.exit_code == 1
    assert "127.0.0.1:1" in answer.output or "unreachable" in answer.output


@pytest.mark.parametrize("command", [["keys", "list"], ["keys", "create", "--name", "x"]])
def test_keys_against_a_missing_sqlite_file_is_one_line_and_creates_nothing(env, tmp_path, command):
    path = tmp_path / "nothing.db"
    env.setenv("GPU_ADVISOR_DATABASE_URL", f"sqlite:///{path}")
    answer = CliRunner().invoke(cli, command)
    assert answer.exit_code == 2
    lines = answer.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "gpu-advisor migrate" in lines[0]
    assert "Traceback" not in answer.output
    assert not path.exists()


def test_keys_against_an_unmigrated_database_says_so(env, tmp_path):
    import sqlite3

    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()  # exists, no tables
    env.setenv("GPU_ADVISOR_DATABASE_URL", f"sqlite:///{path}")
    answer = CliRunner().invoke(cli, ["keys", "revoke", "abc"])
    assert answer.exit_code == 2
    assert "not migrated" in answer.output and "gpu-advisor migrate" in answer.output


def test_table_and_why_use_one_unit_and_show_the_price_origin(client):
    from service.cli import render_recommendations

    body = client.get("/recommend?budget=3000&limit=3").json()
    assert body["recommendations"], body
    first = body["recommendations"][0]
    assert "per USD" in first["why"] and "$1,000" not in first["why"]
    figure = first["why"].split(" per USD")[0].rsplit(" ", 2)[-2]  # "... 1.23 samples/s per USD"
    table = render_recommendations(body)
    assert "per USD" in table.splitlines()[1]
    assert figure in table.splitlines()[2]
    price = first["unit_price"]
    assert str(price["observed_at"])[:10] in table.splitlines()[2]


def _fake_post(calls, status):
    import httpx

    def post(url, **kwargs):
        calls.append(url)
        body = {"results": []} if status == 201 else {"detail": "no"}
        return httpx.Response(status, json=body, request=httpx.Request("POST", url))

    return post


def test_import_defaults_to_host_and_port_like_submit_and_recommend(env, tmp_path):
    import service.cli

    env.delenv("GPU_ADVISOR_SERVER", raising=False)
    env.setenv("GPU_ADVISOR_HOST", "10.1.2.3")
    env.setenv("GPU_ADVISOR_PORT", "9123")
    calls: list[str] = []
    env.setattr(service.cli.httpx, "post", _fake_post(calls, 201))
    raw = tmp_path / "bench.jsonl"
    raw.write_text("{}\n")
    answer = CliRunner().invoke(cli, ["import", "llama-bench", str(raw), "--key", "k"])
    assert answer.exit_code == 0, answer.output
    assert calls == ["http://10.1.2.3:9123/results"]


def test_a_refusal_is_one_line_and_exit_1(env, tmp_path):
    import service.cli

    calls: list[str] = []
    env.setattr(service.cli.httpx, "post", _fake_post(calls, 422))
    raw = tmp_path / "bench.jsonl"
    raw.write_text("{}\n")
    args = ["import", "llama-bench", str(raw), "--key", "k", "--server", "http://x:1"]
    answer = CliRunner().invoke(cli, args)
    assert answer.exit_code == 1 and calls == ["http://x:1/results"]
    lines = answer.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("server refused: 422")
    assert "Traceback" not in answer.output
