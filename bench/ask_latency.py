"""In-process latency of /recommend and /rankings asks, computed and repeated.

The app is called as an ASGI callable (no HTTP, no client), on a migrated and seeded SQLite
file, so the figures are the service's own time on a busy machine too. For each ask the script
times 40 distinct URLs (the budget, limit or cost settings vary, so none is a repeat: each is
computed) and prints their median, then 200 repeats of the last one (the answer cache's time).
The estimate model is fitted before timing (as `GPU_ADVISOR_WARM_ON_START` does).

    .venv/bin/gpu-advisor migrate && .venv/bin/gpu-advisor seed     # ./gpu-advisor.db
    .venv/bin/python bench/ask_latency.py
    .venv/bin/python bench/ask_latency.py --database-url sqlite:////tmp/other.db
"""

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

ASKS = (
    ("8B /recommend", "/recommend", "model=llama-3-8b&budget={budget}&limit={limit}"),
    ("70B Q4_K_M /rankings", "/rankings", "model=llama-3-70b&quant=q4_k_m&hours_per_day={hours}"),
    ("70B /recommend (empty: hint)", "/recommend", "model=llama-3-70b&budget={budget}"),
    ("8B QLoRA /recommend", "/recommend", "model=llama-3-8b&task=qlora&budget={budget}"),
    ("ResNet-50 /recommend", "/recommend", "workload=resnet50-train&budget={budget}"),
    ("ResNet-50 /rankings", "/rankings", "workload=resnet50-train&hours_per_day={hours}"),
)
DISTINCT = 40
REPEATS = 200


def request_scope(path: str, query: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", b"bench"), (b"accept", b"*/*")],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1),
        "root_path": "",
        "state": {},
    }


async def call(app: Any, path: str, query: str) -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(request_scope(path, query), receive, send)
    if sent[0]["status"] != 200:
        raise SystemExit(f"GET {path}?{query}: {sent[0]['status']} {sent[-1].get('body', b'')!r}")


async def measure(app: Any) -> None:
    from service.read_model import estimates

    estimates.warm(app.state.engine).join()
    await call(app, "/recommend", "budget=1")
    for name, path, template in ASKS:
        times, query = [], ""
        for i in range(DISTINCT):
            query = template.format(budget=4000 + i, limit=1 + i % 10, hours=1 + i / 10)
            started = time.perf_counter()
            await call(app, path, query)
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(REPEATS):
            await call(app, path, query)
        repeat = (time.perf_counter() - started) / REPEATS
        print(
            f"{name:<30} computed {statistics.median(times) * 1e3:7.1f} ms   "
            f"repeat {repeat * 1e3:7.3f} ms",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="sqlite:///./gpu-advisor.db")
    args = parser.parse_args()
    os.environ["GPU_ADVISOR_DATABASE_URL"] = args.database_url
    os.environ["GPU_ADVISOR_WARM_ON_START"] = "false"  # warmed above, before timing
    os.environ.setdefault("GPU_ADVISOR_LOG_LEVEL", "warning")
    from service.core.settings import Settings
    from service.main import create_app

    app = create_app(Settings())
    asyncio.run(measure(app))


if __name__ == "__main__":
    main()
