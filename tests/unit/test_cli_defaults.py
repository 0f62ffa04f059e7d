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
def test_keys_against_a_missing_sqlite_file_is_one_line_and_creates_nothing(
    env, tmp_path, command
):
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
