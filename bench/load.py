"""Mixed load benchmark: concurrent reads and batch writes against a real server, then a check.

What it does, in one run on a scratch Postgres database (created here, dropped at the end, on
errors too):

1. migrates and seeds the database, creates one submitter key per writer and starts
   `python -m service.cli serve --workers N` as a child process, with the per-key write rate
   limit raised (`GPU_ADVISOR_WRITE_RATE_LIMIT`, `--write-rate-limit`) so that it is not what
   is measured;
2. warms up: one batch per writer, then every read URL once (each must answer 200);
3. for `--duration` seconds, in one asyncio loop with one keep-alive httpx client:
   `--readers` loops cycle through a shuffled, weighted mix of GETs (/recommend with various
   budgets, workloads and max_gpus; /rankings; /gpus; /gpus/{slug}; /results?limit=50;
   /healthz) and `--writers` loops POST batches of `--batch-size` realistic results (the row
   generator of bench/ingest.py), each with its own Idempotency-Key, remembering every
   (id, status) the server returned. No new request starts after the deadline; requests in
   flight are awaited and counted;
4. checks consistency: all rows of `result` are read with one SQL query and compared with the
   ids the server returned (missing, duplicated, unexpected rows; results answered `accepted`
   must still be accepted or, re-evaluated as their group grew, outlier), and a random sample
   of `--sample` accepted ids is read back through GET /results/{id}.

It prints requests/s, p50/p99 latency per kind of request, errors (every non-2xx answer and
every transport error, including timeouts of 30 s), results/s stored, the load client's own
CPU use (it shares the machine with the server) and the consistency figures. It measures; it
does not pass or fail.

Run it from the repository root:

    .venv/bin/python bench/load.py
    .venv/bin/python bench/load.py --duration 20 --readers 32 --writers 4 --batch-size 500
"""

import argparse
import asyncio
import json
import random
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
from sqlmodel import Session

from service.auth import create_api_key
from service.core.db import make_engine

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `bench.*` when run as `python bench/load.py`

from bench.ingest import (  # noqa: E402
    BenchError,
    Catalog,
    libpq_url,
    make_rows,
    prepare,
    scratch_database,
)
from bench.recommend import TIMEOUT_S, check_paths, free_port, running  # noqa: E402

DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
BUDGETS = (300, 800, 1500, 3000, 6000, 12000, 20000)
# share of each kind of GET in the read mix
READ_WEIGHTS = {
    "recommend": 40,
    "rankings": 15,
    "gpu": 15,
    "gpus": 10,
    "results": 10,
    "healthz": 10,
}
READ_MIX_SIZE = 400
WRITE = "write"
READABLE = ("accepted", "outlier")


@dataclass
class Tally:
    """Everything the load loops record; only touched from the event loop's thread."""

    requests: Counter[str] = field(default_factory=Counter)  # sent, per kind
    latencies: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    outcomes: list[tuple[int, str]] = field(default_factory=list)  # (id, status) as answered
    timed_results: int = 0

    def error(self, kind: str, what: str) -> None:
        self.errors[f"{kind} {what}"] += 1


@dataclass(frozen=True)
class Run:
    seconds: float
    cpu_seconds: float  # this process (the load client)
    tally: Tally


@dataclass(frozen=True)
class Consistency:
    returned: int
    duplicated: int
    stored: int
    missing: int
    unexpected: int
    accepted: int
    now_outlier: int
    now_other: int  # answered accepted, now neither accepted nor outlier (nor missing)
    sampled: int
    readable: int


# ---- the read mix ------------------------------------------------------------------------


def read_paths(catalog: Catalog, rng: random.Random) -> dict[str, list[str]]:
    """Candidate URLs per kind of GET, over the seeded GPUs and workloads."""
    workloads = sorted(catalog.workload_ids)
    gpus = sorted(catalog.gpu_ids)
    recommend = [
        f"/recommend?budget={budget}&workload={workload}&max_gpus={max_gpus}"
        for budget in BUDGETS
        for workload in workloads
        for max_gpus in (1, 2, 4, 8)
    ]
    recommend += [f"/recommend?budget={b}&mode=independent&max_gpus=8" for b in BUDGETS]
    rankings = [f"/rankings?workload={w}" for w in workloads]
    rankings += [f"/rankings?workload={w}&sort=perf_per_dollar" for w in workloads]
    results = ["/results?limit=50"] * 4 + [f"/results?limit=50&workload={w}" for w in workloads]
    results += [f"/results?limit=50&gpu={g}" for g in rng.sample(gpus, 5)]
    results += ["/results?limit=50&status=outlier"]
    return {
        "recommend": recommend,
        "rankings": rankings,
        "gpu": [f"/gpus/{slug}" for slug in gpus],
        "gpus": ["/gpus", "/gpus?limit=20", "/gpus?vendor=nvidia", "/gpus?min_memory_gb=24"],
        "results": results,
        "healthz": ["/healthz"],
    }


def read_mix(paths: dict[str, list[str]], rng: random.Random) -> list[tuple[str, str]]:
    """READ_MIX_SIZE shuffled (kind, path) pairs, kinds in the proportions of READ_WEIGHTS."""
    total = sum(READ_WEIGHTS.values())
    mix = [
        (kind, rng.choice(paths[kind]))
        for kind, weight in READ_WEIGHTS.items()
        for _ in range(round(READ_MIX_SIZE * weight / total))
    ]
    rng.shuffle(mix)
    return mix


# ---- setup -------------------------------------------------------------------------------


def submitter_keys(url: str, first: str, count: int) -> list[str]:
    """`first` (made by bench.ingest.prepare) plus `count - 1` new submitter keys."""
    engine = make_engine(url)
    try:
        with Session(engine) as session, session.begin():
            more = [
                create_api_key(session, f"bench-writer-{i}", "submitter")[1]
                for i in range(1, count)
            ]
    finally:
        engine.dispose()
    return [first, *more]


def service_server(url: str, workers: int, write_rate_limit: int) -> Any:
    """`gpu-advisor serve` in a child process (bench.recommend.running), rate limit raised."""
    port = free_port()
    command = [sys.executable, "-m", "service.cli", "serve", "--port", str(port)]
    env = {
        "GPU_ADVISOR_DATABASE_URL": url,
        "GPU_ADVISOR_LOG_LEVEL": "warning",
        "GPU_ADVISOR_WRITE_RATE_LIMIT": str(write_rate_limit),
    }
    return running([*command, "--workers", str(workers)], "/healthz", port, env)


# ---- the load loops ----------------------------------------------------------------------


async def timed_get(client: httpx.AsyncClient, tally: Tally, kind: str, path: str) -> None:
    tally.requests[kind] += 1
    started = time.perf_counter()
    try:
        response = await client.get(path)
    except httpx.HTTPError as exc:
        tally.error(kind, type(exc).__name__)
        return
    tally.latencies[kind].append(time.perf_counter() - started)
    if not response.is_success:
        tally.error(kind, f"HTTP {response.status_code}")


async def reader(
    client: httpx.AsyncClient,
    tally: Tally,
    mix: Sequence[tuple[str, str]],
    offset: int,
    deadline: float,
) -> None:
    i = offset
    while time.perf_counter() < deadline:
        kind, path = mix[i % len(mix)]
        await timed_get(client, tally, kind, path)
        i += 1


async def post_batch(
    client: httpx.AsyncClient, tally: Tally, body: bytes, headers: dict[str, str]
) -> int:
    """POST one batch; record its latency and outcomes; the number of results stored."""
    tally.requests[WRITE] += 1
    started = time.perf_counter()
    try:
        response = await client.post("/results", content=body, headers=headers)
    except httpx.HTTPError as exc:
        tally.error(WRITE, type(exc).__name__)
        return 0
    tally.latencies[WRITE].append(time.perf_counter() - started)
    if response.status_code != 201:
        tally.error(WRITE, f"HTTP {response.status_code}")
        return 0
    answered = response.json()["results"]
    tally.outcomes.extend((item["id"], item["status"]) for item in answered)
    return len(answered)


def batch_headers(secret: str, idempotency_key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {secret}",
        "Content-Type": "application/json",
        "Idempotency-Key": idempotency_key,
    }


async def writer(
    client: httpx.AsyncClient,
    tally: Tally,
    catalog: Catalog,
    secret: str,
    args: argparse.Namespace,
    index: int,
    deadline: float,
) -> None:
    rng = np.random.default_rng(args.seed * 1000 + index)
    tag = f"load-{uuid.uuid4().hex[:8]}-w{index}"
    n = 0
    while time.perf_counter() < deadline:
        body = json.dumps({"results": make_rows(catalog, args.batch_size, rng)}).encode()
        stored = await post_batch(client, tally, body, batch_headers(secret, f"{tag}-{n}"))
        tally.timed_results += stored
        n += 1


def new_client(base: str, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=base, limits=limits, timeout=TIMEOUT_S)


async def warm_up(
    base: str, catalog: Catalog, secrets: Sequence[str], args: argparse.Namespace
) -> Tally:
    """One batch per writer key (its outcomes count in the consistency check)."""
    tally = Tally()
    rng = np.random.default_rng(args.seed)
    async with new_client(base, len(secrets)) as client:
        for i, secret in enumerate(secrets):
            body = json.dumps({"results": make_rows(catalog, args.batch_size, rng)}).encode()
            key = f"load-warmup-{uuid.uuid4().hex[:8]}-{i}"
            if not await post_batch(client, tally, body, batch_headers(secret, key)):
                raise BenchError(f"warm-up batch failed: {dict(tally.errors)}")
    return tally


async def mixed_load(
    base: str,
    catalog: Catalog,
    secrets: Sequence[str],
    mix: Sequence[tuple[str, str]],
    args: argparse.Namespace,
) -> Run:
    tally = Tally()
    async with new_client(base, args.readers + args.writers) as client:
        cpu_started = time.process_time()
        started = time.perf_counter()
        deadline = started + args.duration
        step = max(1, len(mix) // max(1, args.readers))
        await asyncio.gather(
            *(reader(client, tally, mix, i * step, deadline) for i in range(args.readers)),
            *(
                writer(client, tally, catalog, secrets[i], args, i, deadline)
                for i in range(args.writers)
            ),
        )
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
    return Run(seconds=seconds, cpu_seconds=cpu_seconds, tally=tally)


# ---- consistency -------------------------------------------------------------------------


def stored_statuses(url: str) -> tuple[int, dict[int, str]]:
    """The number of rows in `result` and each row's status, by one SQL query."""
    with psycopg.connect(libpq_url(url)) as conn:
        rows = conn.execute("SELECT id, status FROM result").fetchall()
    return len(rows), {int(row_id): str(status) for row_id, status in rows}


async def readable_count(base: str, ids: Sequence[int]) -> int:
    """How many of `ids` GET /results/{id} answers 200 with status accepted or outlier."""
    gate = asyncio.Semaphore(8)

    async def readable(client: httpx.AsyncClient, result_id: int) -> bool:
        async with gate:
            try:
                response = await client.get(f"/results/{result_id}")
            except httpx.HTTPError:
                return False
        return response.status_code == 200 and response.json().get("status") in READABLE

    async with new_client(base, 8) as client:
        answers = await asyncio.gather(*(readable(client, i) for i in ids))
    return sum(answers)


def check_consistency(
    url: str, base: str, outcomes: Sequence[tuple[int, str]], sample: int, seed: int
) -> Consistency:
    stored, status_now = stored_statuses(url)
    returned = {result_id for result_id, _ in outcomes}
    accepted = [result_id for result_id, status in outcomes if status == "accepted"]
    present = [status_now[i] for i in accepted if i in status_now]
    picked = random.Random(seed).sample(accepted, min(sample, len(accepted)))
    return Consistency(
        returned=len(outcomes),
        duplicated=len(outcomes) - len(returned),
        stored=stored,
        missing=len(returned - status_now.keys()),
        unexpected=len(status_now.keys() - returned),
        accepted=len(accepted),
        now_outlier=sum(status == "outlier" for status in present),
        now_other=sum(status not in READABLE for status in present),
        sampled=len(picked),
        readable=asyncio.run(readable_count(base, picked)),
    )


# ---- report ------------------------------------------------------------------------------


def percentiles_ms(latencies: Sequence[float]) -> str:
    if not latencies:
        return "p50     -   p99     -"
    p50, p99 = np.percentile(np.array(latencies) * 1e3, [50, 99])
    return f"p50 {p50:>5,.0f} ms  p99 {p99:>5,.0f} ms"


def requests_in(tally: Tally, kinds: Sequence[str]) -> int:
    return sum(tally.requests[kind] for kind in kinds)


def report_load(args: argparse.Namespace, run: Run) -> None:
    tally = run.tally
    reads = list(READ_WEIGHTS)
    total = requests_in(tally, [*reads, WRITE])
    errors = sum(tally.errors.values())
    print(
        f"mixed load {args.duration} s, {args.workers} workers, {args.readers} readers, "
        f"{args.writers} writers (batches of {args.batch_size}, one key each, server write "
        f"limit {args.write_rate_limit:,}/min per key): {total:,} requests in {run.seconds:.1f} s"
        f" = {total / run.seconds:,.0f} req/s, errors {errors:,}"
    )
    read_latencies = [x for k in reads for x in tally.latencies[k]]
    n_reads = requests_in(tally, reads)
    print(
        f"  reads  {n_reads:>7,} = {n_reads / run.seconds:>5,.0f} req/s  "
        f"{percentiles_ms(read_latencies)}"
    )
    for kind in reads:
        n = requests_in(tally, [kind])
        print(
            f"    {kind:<9} {n:>7,} = {n / run.seconds:>5,.0f} req/s  "
            f"{percentiles_ms(tally.latencies[kind])}"
        )
    batches = requests_in(tally, [WRITE])
    statuses = Counter(status for _, status in tally.outcomes)
    print(
        f"  writes {batches:>7,} batches = {batches / run.seconds:.1f}/s "
        f"({tally.timed_results:,} results, {tally.timed_results / run.seconds:,.0f} results/s)  "
        f"{percentiles_ms(tally.latencies[WRITE])}; answered "
        + (", ".join(f"{s} {n:,}" for s, n in statuses.most_common()) or "-")
    )
    if tally.errors:
        print("  errors: " + ", ".join(f"{w} x{n:,}" for w, n in tally.errors.most_common()))
    print(
        f"  load client (this process, same machine): {run.cpu_seconds / run.seconds:.2f} CPU-s/s"
    )


def report_consistency(c: Consistency) -> None:
    print(
        f"consistency (all rows by one SQL query; {c.sampled:,} random accepted ids by HTTP): "
        f"{c.returned:,} ids returned, {c.stored:,} rows stored, {c.missing:,} missing, "
        f"{c.duplicated:,} duplicated, {c.unexpected:,} rows never returned; "
        f"{c.readable:,}/{c.sampled:,} sampled readable"
    )
    print(
        f"  of {c.accepted:,} answered accepted: {c.now_outlier:,} re-evaluated to outlier since,"
        f" {c.now_other:,} in another status"
    )


# ---- main --------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL, help="admin URL")
    parser.add_argument("--duration", type=int, default=60, help="seconds of mixed load")
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--readers", type=int, default=16, help="concurrent read loops (0: none)")
    parser.add_argument("--writers", type=int, default=2, help="concurrent batch writers (0: none)")
    parser.add_argument("--batch-size", type=int, default=200, help="results per batch")
    parser.add_argument(
        "--write-rate-limit",
        type=int,
        default=6000,
        help="server's writes per key per minute (default 600 in the service; 0: off)",
    )
    parser.add_argument("--sample", type=int, default=500, help="accepted ids read by HTTP")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generators")
    args = parser.parse_args(argv)
    for name in ("duration", "workers", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if min(args.readers, args.writers) < 0 or args.readers + args.writers == 0:
        parser.error("--readers and --writers must be >= 0, and not both 0")
    return args


def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    with scratch_database(args.database_url) as url:
        catalog, first = prepare(url, np.random.default_rng(args.seed))
        secrets = submitter_keys(url, first, max(1, args.writers))
        paths = read_paths(catalog, rng)
        with service_server(url, args.workers, args.write_rate_limit) as base:
            warm = asyncio.run(warm_up(base, catalog, secrets, args))
            mix = read_mix(paths, rng)
            check_paths(base, sorted({path for _, path in mix}))
            load = asyncio.run(mixed_load(base, catalog, secrets, mix, args))
            report_load(args, load)
            outcomes = warm.outcomes + load.tally.outcomes
            report_consistency(check_consistency(url, base, outcomes, args.sample, args.seed))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        run(args)
    except (BenchError, RuntimeError) as exc:
        print(f"bench/load.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
