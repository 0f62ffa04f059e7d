"""Start the real service as a child process on a free loopback port, and stop it."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
def running_server(database_url: str, port: int | None = None, **env: str) -> Iterator[str]:
    """`gpu-advisor serve` in a child process; yields its base URL once /healthz answers.

    `env` adds GPU_ADVISOR_* settings for the server (e.g. a short job lease)."""
    port = port or free_port()
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", str(port)],
        env=cli_env(database_url, GPU_ADVISOR_LOG_LEVEL="warning", **env),
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start (exit code {proc.poll()})")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
