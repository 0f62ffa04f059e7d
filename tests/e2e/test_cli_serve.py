"""The README path with real processes: migrate, seed (twice), serve, then curl the API."""

import re

import httpx
import pytest

from tests.conftest import drop_database, new_database_url
from tests.e2e.servers import run_cli, running_server

pytestmark = pytest.mark.e2e


def test_migrate_seed_serve_answers_gpu_specs(tmp_path):
    url = new_database_url(str(tmp_path))
    try:
        run_cli(url, "migrate")
        first = run_cli(url, "seed").stdout
        again = run_cli(url, "seed").stdout
        assert "seeded 0 GPUs" not in first
        assert "seeded 0 GPUs, 0 workloads, 0 scaling profiles, 0 launch prices" in again
        # The shipped prices are dated; this test checks the CLI table, not freshness (a window
        # wide enough to rank them; test_price_freshness covers the default window).
        with running_server(url, GPU_ADVISOR_PRICE_MAX_AGE_DAYS="36500") as base:
            gpu = httpx.get(f"{base}/gpus/nvidia-rtx-4090").json()
            assert gpu["slug"] == "nvidia-rtx-4090" and gpu["memory_gb"] == 24
            assert httpx.get(f"{base}/readyz").json()["status"] == "ready"
            table = run_cli(url, "recommend", "--budget", "800", "--server", base).stdout
            lines = table.splitlines()
            assert lines[0].startswith("llm-train (bf16), budget $800")
            assert lines[1].split()[:3] == ["#", "GPUs", "total"]
            assert re.match(r"1\s+(\d+ x )?[a-z]+-", lines[2])
            assert "why #1: Most throughput" in table
            none = run_cli(url, "recommend", "--budget", "40", "--server", base).stdout
            assert "no configuration fits" in none and "cheapest" in none
    finally:
        drop_database(url)
