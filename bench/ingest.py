"""Ingest benchmark: POST /results end to end over HTTP, against raw psycopg executemany.

What it measures, in one run on a scratch Postgres database (created here, dropped at the end):

1. HTTP: `--batches` batches of `--batch-size` results POSTed as `{"results": [...]}` to a real
   `gpu-advisor serve` child process (uvicorn, `--workers` processes) from `--clients`
   concurrent threads, each with its own keep-alive `httpx.Client`. This covers the whole path:
   HTTP, JSON, validation, auth, idempotency, the physics and statistics gates, the insert and
   the group re-evaluation. Two untimed warm-up batches go first.
2. Raw: the same rows inserted with psycopg's `cursor.executemany`, committed per batch: the
   floor any ORM/HTTP path is compared with.

It prints results/s for both, their ratio, batch latencies, the statuses the server gave, and
the row count found in the database afterwards. It measures; it does not pass or fail.

Run it from the repository root:

    .venv/bin/python bench/ingest.py
    .venv/bin/python bench/ingest.py --clients 1 --workers 1 --batches 20
"""

import argparse
import json
import queue
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlmodel import Session, select

from service.auth import create_api_key
from service.catalog.llm import decode_bytes_floor_of
from service.catalog.peaks import peak_rates
from service.catalog.seed import seed
from service.core.db import make_engine
from service.core.migrations import upgrade
from service.domain.plausibility import lacks_fp8_units, peak_tflops
from service.models import Gpu, Workload

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.e2e.servers
from tests.e2e import servers

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
WARMUP_BATCHES = 2
GPUS_IN_MIX = 40
PEAK_FRACTION = (0.30, 0.50)  # a group's typical throughput, as a fraction of the physics peak
SPREAD = 0.05  # lognormal sigma of values within a group
OUTLIER_SHARE = 0.01  # rows scaled down to 5-20% of the group's typical value
BATCH_SIZES = (32, 64, 128, 256)
TARGET_PER_S = 10_000
RAW_INSERT = (
    "INSERT INTO result (gpu_id, workload_id, value, precision, batch_size, gpu_count,"
    " framework, status, status_locked, created_at, updated_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


class BenchError(RuntimeError):
    """The benchmark cannot go on (server did not start, a request failed, ...)."""


@dataclass(frozen=True)
class Group:
    gpu: str
    workload: str
    precision: str
    batch_size: int
    typical: float  # units/s


@dataclass(frozen=True)
class Catalog:
    groups: list[Group]
    gpu_ids: dict[str, int]
    workload_ids: dict[str, int]


@dataclass
class HttpRun:
    seconds: float
    latencies: list[float]
    statuses: Counter[str]


# ---- scratch database --------------------------------------------------------------------


@contextmanager
def scratch_database(admin_url: str) -> Iterator[str]:
    """CREATE a fresh database next to `admin_url`'s; yield its URL; DROP it (FORCE) after."""
    admin = make_url(admin_url)
    name = f"gpu_advisor_bench_{uuid.uuid4().hex[:10]}"
    _admin_sql(admin, f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        _admin_sql(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _admin_sql(admin: URL, statement: str) -> None:
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


def libpq_url(sqlalchemy_url: str) -> str:
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(False)


def prepare(url: str, rng: np.random.Generator, corpus: bool = True) -> tuple[Catalog, str]:
    """Migrate and seed the database (with the measured corpus unless `corpus` is false);
    return the row mix and a new submitter key's secret."""
    upgrade(url)
    engine = make_engine(url)
    try:
        seed(engine, results=corpus)
        with Session(engine) as session, session.begin():
            catalog = load_catalog(session, rng)
            _key, secret = create_api_key(session, "bench", "submitter")
    finally:
        engine.dispose()
    return catalog, secret


# ---- realistic rows ----------------------------------------------------------------------


def load_catalog(session: Session, rng: np.random.Generator) -> Catalog:
    """~40 seeded GPUs x every workload with FLOPs, each pair with a typical throughput."""
    gpus = list(session.exec(select(Gpu).order_by(Gpu.slug)).all())
    all_workloads = session.exec(select(Workload).order_by(Workload.slug)).all()
    workloads = [w for w in all_workloads if w.flops_per_unit]  # the physics gate needs FLOPs
    picked = sorted(rng.choice(len(gpus), size=min(GPUS_IN_MIX, len(gpus)), replace=False))
    groups = [
        typical_group(gpus[i], workload, rng)
        for i in picked
        for workload in workloads
        if runs_at_its_precision(gpus[i], workload)
    ]
    return Catalog(
        groups=groups,
        gpu_ids={g.slug: g.id for g in gpus if g.id is not None},
        workload_ids={w.slug: w.id for w in workloads if w.id is not None},
    )


def runs_at_its_precision(gpu: Gpu, workload: Workload) -> bool:
    """Whether the gate takes the pair at the workload's precision: an fp8 workload (MLPerf)
    on a GPU without FP8 units is `no_fp8_units`, as no lab submits."""
    decode = bool(workload.model) and workload.memory_bound
    return not lacks_fp8_units(workload.precision, peak_rates(gpu), gpu.architecture, decode)


def typical_group(gpu: Gpu, workload: Workload, rng: np.random.Generator) -> Group:
    """A (GPU, workload) pair running at 30-50% of the ceiling the physics gate allows: its
    compute peak, and for a decode workload of a catalog model file its bandwidth ceiling."""
    assert workload.flops_per_unit is not None
    ceiling = peak_tflops(peak_rates(gpu), workload.precision) * 1e12 / workload.flops_per_unit
    bytes_per_unit = decode_bytes_floor_of(workload.model, workload.quant, workload.phase)
    if bytes_per_unit:
        ceiling = min(ceiling, gpu.memory_bandwidth_gbs * 1e9 / bytes_per_unit)
    fraction = rng.uniform(*PEAK_FRACTION)
    return Group(
        gpu=gpu.slug,
        workload=workload.slug,
        precision=workload.precision,
        batch_size=int(rng.choice(BATCH_SIZES)),
        typical=fraction * ceiling,
    )


def make_rows(catalog: Catalog, count: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """`count` ResultIn bodies: lognormal around the group's typical value, ~1% far below it."""
    picks = rng.integers(len(catalog.groups), size=count)
    factors = rng.lognormal(0.0, SPREAD, size=count)
    outliers = rng.random(count) < OUTLIER_SHARE
    factors[outliers] *= rng.uniform(0.05, 0.20, size=int(outliers.sum()))
    rows = []
    for pick, factor in zip(picks, factors, strict=True):
        group = catalog.groups[pick]
        rows.append(
            {
                "gpu": group.gpu,
                "workload": group.workload,
                "value": max(round(float(group.typical * factor), 3), 0.001),
                "precision": group.precision,
                "batch_size": group.batch_size,
                "gpu_count": 1,
                "framework": "pytorch",
            }
        )
    return rows


def chunks(rows: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


# ---- the real server ---------------------------------------------------------------------


def running_server(database_url: str, workers: int) -> Any:
    """`gpu-advisor serve --workers N` as a child process (context manager: its base URL)."""
    return servers.running_server(database_url, workers=workers)


# ---- HTTP ingest -------------------------------------------------------------------------


def encode(batches: Sequence[list[dict[str, Any]]]) -> list[bytes]:
    """JSON bodies, encoded before timing so the client's encoder is not measured."""
    return [json.dumps({"results": batch}).encode() for batch in batches]


def post_batch(client: httpx.Client, body: bytes, key: str) -> tuple[float, Counter[str]]:
    """POST one batch; return its latency and the statuses the server gave. Only 201 is fine."""
    started = time.perf_counter()
    try:
        response = client.post("/results", content=body, headers={"Idempotency-Key": key})
    except httpx.HTTPError as exc:
        raise BenchError(f"batch {key}: {type(exc).__name__}: {exc}") from exc
    elapsed = time.perf_counter() - started
    if response.status_code != 201:
        raise BenchError(f"batch {key}: HTTP {response.status_code}: {response.text[:500]}")
    return elapsed, Counter(item["status"] for item in response.json()["results"])


def post_all(base: str, secret: str, bodies: list[bytes], clients: int, tag: str) -> HttpRun:
    """POST every body from `clients` threads (one keep-alive client each); all must be 201."""
    work: queue.SimpleQueue[tuple[int, bytes]] = queue.SimpleQueue()
    for index, body in enumerate(bodies):
        work.put((index, body))
    run = HttpRun(seconds=0.0, latencies=[], statuses=Counter())
    lock = threading.Lock()
    failed = threading.Event()

    def client_loop() -> None:
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
            while not failed.is_set():
                try:
                    index, body = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    elapsed, counts = post_batch(client, body, f"{tag}-{index}")
                except BenchError:
                    failed.set()  # the other clients stop after their current batch
                    raise
                with lock:
                    run.latencies.append(elapsed)
                    run.statuses.update(counts)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        futures = [pool.submit(client_loop) for _ in range(clients)]
    run.seconds = time.perf_counter() - started
    for future in futures:
        future.result()  # re-raise a client's error, if any
    return run


# ---- raw baseline ------------------------------------------------------------------------


def raw_rows(catalog: Catalog, rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    now = datetime.now(UTC)
    return [
        (
            catalog.gpu_ids[row["gpu"]],
            catalog.workload_ids[row["workload"]],
            row["value"],
            row["precision"],
            row["batch_size"],
            row["gpu_count"],
            row["framework"],
            "accepted",
            False,
            now,
            now,
        )
        for row in rows
    ]


def raw_insert(url: str, rows: list[tuple[Any, ...]], batch_size: int) -> float:
    """Seconds to executemany `rows` with psycopg, one commit per batch."""
    with psycopg.connect(libpq_url(url)) as conn:
        started = time.perf_counter()
        for start in range(0, len(rows), batch_size):
            with conn.cursor() as cursor:
                cursor.executemany(RAW_INSERT, rows[start : start + batch_size])
            conn.commit()
        return time.perf_counter() - started


def count_results(url: str) -> int:
    with psycopg.connect(libpq_url(url)) as conn:
        row = conn.execute("SELECT count(*) FROM result").fetchone()
    assert row is not None
    return int(row[0])


# ---- report ------------------------------------------------------------------------------


def report(args: argparse.Namespace, http: HttpRun, raw_s: float, rows: int, found: int) -> None:
    """`found`: rows the run added (warm-up, timed and raw inserts; the seeded corpus not
    counted)."""
    http_rate = rows / http.seconds
    raw_rate = rows / raw_s
    p50, p99 = np.percentile(http.latencies, [50, 99])
    statuses = ", ".join(f"{name} {n:,}" for name, n in http.statuses.most_common())
    expected = (args.batches + WARMUP_BATCHES) * args.batch_size + rows
    print(
        f"ingest over HTTP: {rows:,} results in {http.seconds:.2f} s = {http_rate:,.0f} results/s"
        f" ({args.clients} clients, {args.workers} workers, batches of {args.batch_size})"
    )
    print(f"  p50 batch latency {p50:.2f} s, p99 {p99:.2f} s; statuses: {statuses}")
    print(f"raw psycopg executemany: {rows:,} rows in {raw_s:.2f} s = {raw_rate:,.0f} rows/s")
    print(
        f"ratio HTTP / raw: {http_rate / raw_rate:.2f}"
        f"   (target: >= {TARGET_PER_S:,} results/s end to end)"
    )
    print(f"rows stored by this run: {found:,} (expected {expected:,})")


# ---- main --------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE_URL,
        help="admin URL; a scratch database is created next to it and dropped after",
    )
    parser.add_argument("--batches", type=int, default=50, help="timed batches")
    parser.add_argument("--batch-size", type=int, default=1000, help="results per batch")
    parser.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients")
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--seed", type=int, default=1, help="seed of the row generator")
    args = parser.parse_args(argv)
    for name in ("batches", "batch_size", "clients", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def run(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    tag = f"bench-{uuid.uuid4().hex[:8]}"
    with scratch_database(args.database_url) as url:
        catalog, secret = prepare(url, rng)
        seeded = count_results(url)  # the measured corpus, stored before the timed rows
        warmup = make_rows(catalog, WARMUP_BATCHES * args.batch_size, rng)
        timed = make_rows(catalog, args.batches * args.batch_size, rng)
        with running_server(url, args.workers) as base:
            post_all(base, secret, encode(chunks(warmup, args.batch_size)), 1, f"{tag}-warmup")
            http = post_all(base, secret, encode(chunks(timed, args.batch_size)), args.clients, tag)
        raw_s = raw_insert(url, raw_rows(catalog, timed), args.batch_size)
        report(args, http, raw_s, len(timed), count_results(url) - seeded)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        run(args)
    except BenchError as exc:
        print(f"bench/ingest.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
