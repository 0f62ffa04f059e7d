"""Read benchmark: GET /recommend under load, against a trivial endpoint, at 10^3 and 10^6 results.

What it measures, in one run, one measurement after another:

1. the floor: bench/trivial_app.py (FastAPI, one route returning a constant JSON dict the size
   of a small /recommend answer) served by uvicorn with the same workers and log level;
2. /recommend on a scratch Postgres database with 200 GPUs (the 77 seeded ones plus scaled
   copies), 20 workloads (7 seeded plus synthetic ones) and 10^3 accepted results;
3. the same catalog with 10^6 accepted results.

Both databases have the same 1,000 result groups (200 GPUs x 5 workloads, one GPU each), so
only the number of results differs; the aggregate table is filled from the results with one SQL
statement, as the service maintains it on write. The server is the real one
(`python -m service.cli serve`) in a child process.

Load: `wrk -t2 -c<connections> --latency` cycling through a mix of /recommend URLs (a Lua
script), or, without wrk, an asyncio httpx loop with as many concurrent connections. Each
measurement is preceded by a 2 s warm-up. Non-200 answers and transport errors (including
requests over 30 s) are counted and printed. It prints requests/s, mean and p99 latency, and two
ratios: /recommend (10^3 results) vs the trivial endpoint in requests/s (target >= 0.5), and
10^6 vs 10^3 results in mean latency (target <= 1.2). The trivial answer is also measured from
a plain `def` route (FastAPI's thread pool, as the service's routes), for context. The URL mix
repeats (as clients do), so most of its answers come from the answer cache; for the cost of
computing an answer, the 10^3 server is also driven with 50,000 distinct URLs (no repeats),
printed for context. It measures; it does not pass or fail.

Run it from the repository root (the scratch databases are dropped at the end, on errors too):

    .venv/bin/python bench/recommend.py
    .venv/bin/python bench/recommend.py --duration 20 --workers 2
"""

import argparse
import asyncio
import itertools
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
from sqlmodel import Session, col, select

from service.catalog.peaks import peak_rates
from service.catalog.seed import seed
from service.core.db import make_engine
from service.core.migrations import upgrade
from service.domain.estimate import GpuPerf, roofline_prior
from service.domain.estimate import WorkloadShape as EstWorkload
from service.domain.plausibility import peak_tflops
from service.models import Gpu, Price, Workload

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench.*, tests.e2e.*
from bench.ingest import libpq_url, scratch_database
from tests.e2e.servers import free_port, running, running_server

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
TOTAL_GPUS = 200
TOTAL_WORKLOADS = 20
RESULT_WORKLOADS = (
    "llm-train",
    "resnet50-train",
    "llm-inference",
    "bert-large-train",
    "bench-wl-01",
)
PHASES = (1_000, 1_000_000)
WARMUP_S = 2
WORKLOAD_PARAMS = ("", "&workload=llm-train", "&workload=resnet50-train", "&workload=llm-inference")
DISTINCT_URLS = 50_000  # > the answer cache's 4,096 entries and > requests in a measurement
TIMEOUT_S = 30  # per request; wrk's default (2 s) would drop slow requests from the latencies
SCALED_GPU_FIELDS = (
    "memory_gb",
    "memory_bandwidth_gbs",
    "fp32_tflops",
    "fp16_tflops",
    "tf32_tensor_tflops",
    "fp16_tensor_tflops",
    "bf16_tensor_tflops",
    "fp8_tensor_tflops",
    "int8_tops",
    "tdp_w",
    "launch_price_usd",
)
RESULT_COLUMNS = (
    "gpu_id",
    "workload_id",
    "value",
    "precision",
    "batch_size",
    "gpu_count",
    "framework",
    "status",
    "status_locked",
    "created_at",
    "updated_at",
)
# aggregate column -> its value from the `stats` CTE of AGGREGATE_SQL (only present columns).
AGGREGATE_EXPRESSIONS = {
    "gpu_id": "gpu_id",
    "workload_id": "workload_id",
    "precision": "precision",
    "gpu_count": "gpu_count",
    "median": "median",
    "n": "n",
    "mad": "mad",
    "stats_n": "n",
    "stats_median": "median",
    "stats_mad": "mad",
    "stats_mean_ad": "mean_ad",
    "evaluated_n": "n",
    "updated_at": "now()",
}
AGGREGATE_SQL = """
WITH med AS (
    SELECT gpu_id, workload_id, precision, gpu_count, count(*) AS n,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median
    FROM result WHERE status IN ('accepted', 'verified')
    GROUP BY gpu_id, workload_id, precision, gpu_count
), stats AS (
    SELECT m.gpu_id, m.workload_id, m.precision, m.gpu_count, m.n, m.median,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(r.value - m.median)) AS mad,
           avg(abs(r.value - m.median)) AS mean_ad
    FROM med m JOIN result r USING (gpu_id, workload_id, precision, gpu_count)
    WHERE r.status IN ('accepted', 'verified')
    GROUP BY m.gpu_id, m.workload_id, m.precision, m.gpu_count, m.n, m.median
)
INSERT INTO aggregate ({columns}) SELECT {expressions} FROM stats
"""


@dataclass(frozen=True)
class Group:
    gpu_id: int
    workload_id: int
    precision: str
    typical: float


@dataclass(frozen=True)
class Measurement:
    requests: int
    seconds: float
    mean_ms: float
    p99_ms: float
    non_200: int
    transport_errors: int  # connect, read, write errors and timeouts (30 s)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


# --- databases -------------------------------------------------------------------------------


def missing_required(conn: psycopg.Connection, table: str, provided: Collection[str]) -> list[str]:
    """NOT NULL columns without a default that `provided` does not fill (a schema change)."""
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
        "AND is_nullable = 'NO' AND column_default IS NULL",
        (table,),
    ).fetchall()
    return [name for (name,) in rows if name not in provided]


def add_gpus(session: Session, rng: random.Random, today: date) -> list[Gpu]:
    """Scaled copies of the seeded GPUs (each with a price) until there are TOTAL_GPUS."""
    real = list(session.exec(select(Gpu).order_by(col(Gpu.slug))).all())
    prices = {p.gpu_id: p.usd for p in session.exec(select(Price)).all()}
    for i in range(1, TOTAL_GPUS - len(real) + 1):
        base = real[(i - 1) % len(real)]
        scale = rng.uniform(0.5, 1.5)
        data = base.model_dump(exclude={"id", "created_at", "updated_at"})
        for name in SCALED_GPU_FIELDS:
            if data.get(name) is not None:
                data[name] = round(data[name] * scale, 2)
        data |= {
            "slug": f"bench-gpu-{i:03d}",
            "name": f"Bench GPU {i:03d} ({base.name} x {scale:.2f})",
            "aliases": "",
            "source": f"bench: {base.slug} scaled by {scale:.2f}",
        }
        gpu = Gpu(**data)
        session.add(gpu)
        session.flush()
        assert gpu.id is not None
        usd = prices.get(base.id or -1) or base.launch_price_usd or 1000.0
        session.add(
            Price(gpu_id=gpu.id, usd=round(usd * scale, 2), source="bench", observed_at=today)
        )
    return list(session.exec(select(Gpu).order_by(col(Gpu.id))).all())


def add_workloads(session: Session, rng: random.Random) -> list[Workload]:
    """Synthetic compute-bound workloads until there are TOTAL_WORKLOADS (at least one: the
    seeded catalog alone has more than TOTAL_WORKLOADS since the measured corpus arrived)."""
    known = len(session.exec(select(Workload)).all())
    for i in range(1, max(TOTAL_WORKLOADS - known, 1) + 1):
        session.add(
            Workload(
                slug=f"bench-wl-{i:02d}",
                name=f"Bench workload {i:02d}",
                unit="items/s",
                precision="bf16" if i % 2 else "fp16",
                flops_per_unit=10 ** rng.uniform(9, 11.5),
                min_memory_gb=rng.choice([0.0, 4.0, 8.0, 16.0, 24.0]),
                source="bench",
            )
        )
    session.flush()
    return list(session.exec(select(Workload)).all())


def typical_value(gpu: Gpu, workload: Workload) -> float:
    """Roofline throughput from specs, the service's own prior; 1.0 when it has none."""
    perf = GpuPerf(
        gpu.slug, peak_tflops(peak_rates(gpu), workload.precision), gpu.memory_bandwidth_gbs
    )
    prior = roofline_prior(
        perf, EstWorkload(workload.flops_per_unit, workload.memory_bound, workload.precision)
    )
    return prior or 1.0


def build_catalog(url: str) -> list[Group]:
    """Migrate, seed, grow the catalog to 200 GPUs and 20 workloads; the result groups."""
    upgrade(url)
    engine = make_engine(url)
    try:
        seed(engine, results=False)  # this bench loads its own 10^3 / 10^6 results
        rng = random.Random(1)  # the same catalog in every database
        with Session(engine) as session:
            gpus = add_gpus(session, rng, datetime.now(UTC).date())
            workloads = {w.slug: w for w in add_workloads(session, rng)}
            session.commit()
            return [
                Group(g.id or 0, w.id or 0, w.precision, typical_value(g, w))
                for w in (workloads[slug] for slug in RESULT_WORKLOADS)
                for g in gpus
            ]
    finally:
        engine.dispose()


def result_lines(groups: Sequence[Group], count: int, seed_: int) -> Iterator[bytes]:
    """COPY text rows, round robin over the groups, values lognormal (5%) around typical."""
    noise = np.random.default_rng(seed_).lognormal(0.0, 0.05, count)
    now = datetime.now(UTC).isoformat()
    chunk: list[str] = []
    for i, factor in enumerate(noise.tolist()):
        g = groups[i % len(groups)]
        chunk.append(
            f"{g.gpu_id}\t{g.workload_id}\t{g.typical * factor:.6g}\t{g.precision}\t"
            f"{8 << (i % 4)}\t1\tpytorch\taccepted\tf\t{now}\t{now}\n"
        )
        if len(chunk) == 50_000:
            yield "".join(chunk).encode()
            chunk = []
    if chunk:
        yield "".join(chunk).encode()


def load_results(url: str, groups: Sequence[Group], count: int) -> None:
    """COPY `count` accepted results in, then rebuild the aggregate table from them."""
    with psycopg.connect(libpq_url(url)) as conn:
        for table, provided in (("result", RESULT_COLUMNS), ("aggregate", AGGREGATE_EXPRESSIONS)):
            if missing := missing_required(conn, table, provided):
                sys.exit(f"{table} has required columns this script does not fill: {missing}")
        with conn.cursor() as cur:
            with cur.copy(f"COPY result ({', '.join(RESULT_COLUMNS)}) FROM STDIN") as copy:
                for block in result_lines(groups, count, seed_=count):
                    copy.write(block)
            present = {
                name
                for (name,) in cur.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_name = 'aggregate'"
                ).fetchall()
            }
            columns = [c for c in AGGREGATE_EXPRESSIONS if c in present]
            cur.execute("DELETE FROM aggregate")
            cur.execute(
                AGGREGATE_SQL.format(
                    columns=", ".join(columns),
                    expressions=", ".join(AGGREGATE_EXPRESSIONS[c] for c in columns),
                )
            )
        conn.commit()
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE result")
        conn.execute("VACUUM ANALYZE aggregate")


def build_database(url: str, results: int) -> float:
    started = time.perf_counter()
    load_results(url, build_catalog(url), results)
    return time.perf_counter() - started


# --- servers ---------------------------------------------------------------------------------


def service_server(database_url: str, workers: int) -> Any:
    return running_server(database_url, workers=workers)


def trivial_server(workers: int) -> Any:
    port = free_port()
    script = str(ROOT / "bench" / "trivial_app.py")
    command = [sys.executable, script, "--port", str(port), "--workers", str(workers)]
    return running(command, "/", port, {})


# --- load ------------------------------------------------------------------------------------


def recommend_paths() -> list[str]:
    """A realistic, shuffled mix of /recommend queries."""
    budgets = (300, 800, 1500, 3000, 6000, 12000, 20000)
    paths = [
        f"/recommend?budget={b}{w}&max_gpus={n}"
        for b, w, n in itertools.product(budgets, WORKLOAD_PARAMS, range(1, 5))
    ]
    paths += [f"/recommend?budget={b}&workload=bench-wl-01&condition=new" for b in budgets]
    paths += [f"/recommend?budget={b}&mode=independent&max_gpus=8" for b in budgets]
    random.Random(7).shuffle(paths)
    return paths


def distinct_paths() -> list[str]:
    """Twice DISTINCT_URLS different /recommend URLs (budgets from 300 USD in steps of 0.20,
    four workloads), shuffled: far more than the answer cache holds, so each is computed."""
    paths = [
        f"/recommend?budget={300 + i * 0.2:.2f}{WORKLOAD_PARAMS[i % len(WORKLOAD_PARAMS)]}"
        for i in range(2 * DISTINCT_URLS)  # one half for the warm-up, one for the measurement
    ]
    random.Random(11).shuffle(paths)
    return paths


def check_paths(base: str, paths: Sequence[str]) -> int:
    """Every path answers 200 with JSON before the load starts; the mean body size in bytes."""
    sizes = []
    with httpx.Client(base_url=base, timeout=30) as client:
        for path in paths:
            response = client.get(path)
            if response.status_code != 200:
                sys.exit(f"GET {path}: {response.status_code} {response.text[:500]}")
            response.json()
            sizes.append(len(response.content))
    return round(sum(sizes) / len(sizes))


# Each wrk thread starts at its own offset (half the list apart for -t2), so with the distinct
# URLs one thread never requests what the other has just had answered.
LUA = """
local paths = {%s}
local threads = 0
function setup(thread)
  thread:set("start", threads * math.floor(#paths / 2))
  threads = threads + 1
end
local i = nil
request = function()
  i = ((i or start or 0) %% #paths) + 1
  return wrk.format("GET", paths[i])
end
"""
UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def to_ms(figure: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", figure)
    if match is None:
        raise ValueError(f"unexpected wrk latency {figure!r}")
    return float(match.group(1)) * UNITS_MS[match.group(2)]


def parse_wrk(output: str) -> Measurement:
    def find(pattern: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise ValueError(f"no {pattern!r} in wrk output:\n{output}")
        return match

    requests, seconds = find(r"(\d+) requests in ([\d.]+)(s|m)").group(1, 2)
    unit = find(r"\d+ requests in [\d.]+(s|m)").group(1)
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return Measurement(
        requests=int(requests),
        seconds=float(seconds) * (60 if unit == "m" else 1),
        mean_ms=to_ms(find(r"^\s+Latency\s+(\S+)").group(1)),
        p99_ms=to_ms(find(r"^\s+99%\s+(\S+)").group(1)),
        non_200=int(non_2xx.group(1)) if non_2xx else 0,
        transport_errors=sum(map(int, socket_errors.groups())) if socket_errors else 0,
    )


def run_wrk(wrk: str, url: str, lua: str, seconds: int, connections: int) -> Measurement:
    command = [wrk, "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", f"{TIMEOUT_S}s"]
    command += ["--latency", "-s", lua, url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr}")
    return parse_wrk(done.stdout)


async def httpx_load(
    base: str, paths: Sequence[str], seconds: float, connections: int
) -> Measurement:
    """`connections` concurrent keep-alive loops for `seconds`; latency of every request."""
    latencies: list[float] = []
    non_200 = transport_errors = 0
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=TIMEOUT_S) as client:
        deadline = time.perf_counter() + seconds

        async def loop(offset: int) -> None:
            nonlocal non_200, transport_errors
            i = offset
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                try:
                    response = await client.get(paths[i % len(paths)])
                    non_200 += response.status_code != 200
                except httpx.TransportError:
                    transport_errors += 1
                latencies.append(time.perf_counter() - started)
                i += 1

        started = time.perf_counter()
        spread = max(1, len(paths) // connections)
        await asyncio.gather(*(loop(k * spread) for k in range(connections)))
        elapsed = time.perf_counter() - started
    ms = np.array(latencies) * 1e3
    p99 = float(np.percentile(ms, 99))
    return Measurement(len(ms), elapsed, float(ms.mean()), p99, non_200, transport_errors)


class Load:
    """Drives one base URL over a list of paths with wrk when installed, else httpx."""

    def __init__(self, connections: int, duration: int, stack: ExitStack) -> None:
        self.connections = connections
        self.duration = duration
        self.wrk = shutil.which("wrk")
        self.tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-wrk-")))
        self.tool = (
            f"wrk -t2 -c{connections}" if self.wrk else f"httpx asyncio, {connections} connections"
        )

    def measure(
        self, base: str, paths: Sequence[str], warmup_paths: Sequence[str] | None = None
    ) -> Measurement:
        self._run(base, paths if warmup_paths is None else warmup_paths, WARMUP_S)
        return self._run(base, paths, self.duration)

    def _run(self, base: str, paths: Sequence[str], seconds: int) -> Measurement:
        if self.wrk is None:
            return asyncio.run(httpx_load(base, paths, seconds, self.connections))
        lua = self.tmp / "paths.lua"
        lua.write_text(LUA % ", ".join(f'"{p}"' for p in paths))
        return run_wrk(self.wrk, base, str(lua), seconds, self.connections)


# --- report ----------------------------------------------------------------------------------


def line(label: str, m: Measurement) -> str:
    return (
        f"{label:<29}{m.rps:>7,.0f} req/s  p99 {m.p99_ms:>6.1f} ms  "
        f"mean {m.mean_ms:>6.1f} ms  non-200 {m.non_200:,}  transport errors {m.transport_errors:,}"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL, help="admin URL")
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers per server")
    return parser.parse_args()


def build_databases(stack: ExitStack, admin_url: str) -> dict[int, str]:
    """One scratch database per phase, dropped when `stack` closes; results -> URL."""
    urls = {}
    for results in PHASES:
        urls[results] = stack.enter_context(scratch_database(admin_url))
        took = build_database(urls[results], results)
        print(
            f"built database: {TOTAL_GPUS} GPUs, {TOTAL_WORKLOADS} workloads, "
            f"{results:,} results in {took:.1f} s",
            flush=True,
        )
    return urls


def measure_trivial(load: Load, workers: int) -> tuple[Measurement, Measurement]:
    """The async route (the floor of the ratio) and, for context, the same answer from a def."""
    with trivial_server(workers) as base:
        size = check_paths(base, ["/", "/sync"])
        fast = load.measure(base, ["/"])
        print(line("trivial endpoint:", fast) + f"  ({size} B)", flush=True)
        sync = load.measure(base, ["/sync"])
        print(line("  same, def (thread pool):", sync), flush=True)
    return fast, sync


def measure_recommend(
    load: Load, url: str, workers: int, results: int, uncached: bool = False
) -> Measurement:
    """The URL mix (repeats, as real clients send them); with `uncached`, also distinct URLs
    on the same server, for the cost of computing each answer (printed for context)."""
    paths = recommend_paths()
    with service_server(url, workers) as base:
        size = check_paths(base, paths)
        measured = load.measure(base, paths)
        label = f"/recommend, 10^{len(str(results)) - 1} results:"
        print(line(label, measured) + f"  (mean {size} B)", flush=True)
        if uncached:
            distinct = distinct_paths()
            measured_half, warmup_half = distinct[:DISTINCT_URLS], distinct[DISTINCT_URLS:]
            check_paths(base, warmup_half[:: len(warmup_half) // 200])
            computed = load.measure(base, measured_half, warmup_paths=warmup_half)
            print(line("  distinct URLs (no repeats):", computed), flush=True)
    return measured


def report_ratios(
    trivial: Measurement, sync: Measurement, small: Measurement, large: Measurement
) -> None:
    print(
        f"ratio /recommend vs trivial:  {small.rps / trivial.rps:5.2f}  "
        f"(target >= 0.5; req/s, 10^3 results; vs the def route {small.rps / sync.rps:.2f})"
    )
    print(
        f"ratio 10^6 vs 10^3 latency:   {large.mean_ms / small.mean_ms:5.2f}  "
        f"(target <= 1.2; mean latency; p99 {large.p99_ms / small.p99_ms:.2f})"
    )


def main() -> None:
    args = parse_args()
    with ExitStack() as stack:
        urls = build_databases(stack, args.database_url)
        load = Load(args.connections, args.duration, stack)
        print(
            f"load: {load.tool}, {args.duration} s per measurement after {WARMUP_S} s "
            f"warm-up, {args.workers} uvicorn worker(s), {len(recommend_paths())} /recommend URLs",
            flush=True,
        )
        trivial, sync = measure_trivial(load, args.workers)
        small, large = (
            measure_recommend(load, urls[r], args.workers, r, uncached=r == PHASES[0])
            for r in PHASES
        )
    report_ratios(trivial, sync, small, large)


if __name__ == "__main__":
    main()
