"""Start the real service as a child process on a free loopback port, and stop it."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

CLI = [sys.executable, "-m", "service.cli"]
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli_env(database_url: str, **extra: str) -> dict[str, str]:
    return os.environ | {"GPU_ADVISOR_DATABASE_URL": database_url, **extra}


def run_cli(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        env=cli_env(database_url),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@contextmanager
def running(command: list[str], probe_path: str, port: int, env: dict[str, str]) -> Iterator[str]:
    """A server child process; yields its base URL once `probe_path` answers 200, and stops
    it (SIGTERM, then SIGKILL) afterwards. Used by the e2e tests and the benchmarks."""
    proc = subprocess.Popen(command, env=os.environ | env, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + probe_path, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{command} did not start (exit code {proc.poll()})")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def running_server(database_url: str, port: int | None = None, workers: int = 1, **env: str) -> Any:
    """`gpu-advisor serve` in a child process (a context manager yielding its base URL).

    `env` adds GPU_ADVISOR_* settings for the server (e.g. a short job lease)."""
    port = port or free_port()
    command = [*CLI, "serve", "--port", str(port), "--workers", str(workers)]
    settings = {"GPU_ADVISOR_DATABASE_URL": database_url, "GPU_ADVISOR_LOG_LEVEL": "warning"}
    return running(command, "/healthz", port, settings | env)


def start_agent(base: str, token: str, log_path: Path) -> subprocess.Popen[bytes]:
    """`gpu-advisor agent --device cpu` in a child process, its output in `log_path`."""
    return subprocess.Popen(
        [*CLI, "agent", "--server", base, "--token", token, "--device", "cpu"],
        cwd=ROOT,
        env=cli_env("sqlite://"),
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
    )


def wait_for(condition: Callable[[], bool], timeout: float = 40.0) -> None:
    """Poll `condition` until it holds; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)
