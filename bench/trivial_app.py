"""The floor for bench/recommend.py: a FastAPI app whose one route returns constant JSON.

The answer is a fixed dict shaped and sized like a small /recommend answer (one
recommendation), so the comparison is against FastAPI + uvicorn + JSON encoding of a similar
body, with no database and no computation. `GET /` is an `async def` route (the cheapest FastAPI
can do); `GET /sync` is the same answer from a plain `def` route, which FastAPI runs in its
thread pool like the service's routes.

Run it on its own (bench/recommend.py starts it for you):

    .venv/bin/python bench/trivial_app.py --port 8001 --workers 1
"""

import argparse
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

ANSWER: dict[str, Any] = {
    "recommendations": [
        {
            "rank": 1,
            "gpu": "nvidia-rtx-4090",
            "name": "NVIDIA GeForce RTX 4090",
            "count": 1,
            "unit_price": {
                "usd": 1599.0,
                "condition": "new",
                "source": "msrp",
                "observed_at": "2022-10-12",
            },
            "total_price_usd": 1599.0,
            "throughput": 41234.5,
            "throughput_low": 38000.1,
            "throughput_high": 44500.9,
            "unit": "tokens/s",
            "relative_performance": 1.0,
            "perf_per_dollar": 25.787,
            "memory_gb": 24.0,
            "total_memory_gb": 24.0,
            "tdp_w": 450.0,
            "basis": "measured",
            "model": "measured",
            "n": 12,
            "scaling_factor": 1.0,
            "scaling_basis": "single",
            "why": "#1: the highest throughput that fits $2,000 with >= 8 GB per GPU",
        }
    ],
    "budget_usd": 2000.0,
    "workload": "llm-train",
    "precision": "bf16",
    "unit": "tokens/s",
    "min_memory_gb": 8.0,
    "max_gpus": 4,
    "mode": "parallel",
    "framework": "pytorch",
    "condition": "any",
    "reference_gpu": "nvidia-rtx-4090",
    "hint": None,
}

app = FastAPI(title="trivial")


@app.get("/")
async def constant() -> dict[str, Any]:
    return ANSWER


@app.get("/sync")
def constant_sync() -> dict[str, Any]:
    return ANSWER


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    uvicorn.run(
        "trivial_app:app",
        app_dir=str(Path(__file__).resolve().parent),
        host="127.0.0.1",
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
    )


if __name__ == "__main__":
    main()
