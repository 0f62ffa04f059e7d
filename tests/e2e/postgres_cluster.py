"""A private, throw-away Postgres cluster for fault tests: it can be stopped and started
without touching the machine's shared server. Runs as the `postgres` user (Postgres refuses
root)."""

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.e2e.servers import free_port


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name) or name]
    return found[-1]


class PostgresCluster:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="gpu-advisor-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        shutil.chown(self.root, "postgres", "postgres")
        self._as_postgres(_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres?connect_timeout=3"

    def _as_postgres(self, *command: str) -> None:
        prefix = [] if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--"]
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(
            _bin("pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-o",
            options,
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._as_postgres(_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while (
            subprocess.run(
                [_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True
            ).returncode
            != 0
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("private postgres did not become ready")
            time.sleep(0.2)

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
