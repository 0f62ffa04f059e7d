"""Where one POST /results batch spends its time, in process (repeatable on a busy machine).

bench/ingest.py measures wall-clock results/s over real HTTP, which means nothing while other
programs share the CPU. This script instead runs the app in process (ASGI, one thread) on
a scratch database and, per POSTed batch of `--batch-size` rows, reports:

- SQL statements sent to the database (on Postgres counted at the psycopg cursor: execute,
  executemany and COPY, so the raw-driver paths count too; on SQLite SQLAlchemy's
  before_cursor_execute, an executemany counting once), with the statement kinds;
- wall time per batch (median; only meaningful on a quiet machine);
- with `--profile FILE`, a cProfile of the timed batches (top functions printed);
- `--setup-only` stops after the warm-up: run it under valgrind's callgrind twice (with
  `--setup-only` and without) and divide the difference in instructions by `--batches` for a
  repeatable per-batch instruction count.

The database is in the state a fresh install has after `gpu-advisor seed` (catalog plus the
shipped measured corpus; `--no-corpus` leaves the corpus out), and the rows are bench/ingest.py's
realistic mix. Run from the repository root:

    .venv/bin/python bench/ingest_profile.py                      # Postgres scratch database
    .venv/bin/python bench/ingest_profile.py --sqlite --profile /tmp/ingest.pstats
"""

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import numpy as np
import psycopg
from sqlalchemy import event
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.ingest import (
    DEFAULT_DATABASE_URL,
    chunks,
    encode,
    make_rows,
    prepare,
    scratch_database,
)
from service.core.settings import Settings
from service.main import create_app

WARMUP_BATCHES = 2


class StatementCounter:
    """Counts statements by kind (first word, or COPY) while `active`."""

    def __init__(self) -> None:
        self.active = False
        self.verbose = False
        self.kinds: Counter[str] = Counter()

    def note(self, statement: Any) -> None:
        if self.active:
            text = str(statement).lstrip().split(None, 1)
            self.kinds[text[0].upper() if text else "?"] += 1
            if self.verbose:
                print("   SQL:", " ".join(str(statement).split())[:150])

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        self.kinds = Counter()
        self.active = True
        try:
            yield self.kinds
        finally:
            self.active = False


def install_counter(postgres: bool) -> StatementCounter:
    counter = StatementCounter()
    if postgres:
        for name in ("execute", "executemany", "copy"):
            original = getattr(psycopg.Cursor, name)

            def wrapped(self: Any, query: Any, *args: Any, _o: Any = original, **kw: Any) -> Any:
                counter.note(query)
                return _o(self, query, *args, **kw)

            setattr(psycopg.Cursor, name, wrapped)
    else:

        @event.listens_for(Engine, "before_cursor_execute")
        def _count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            counter.note(statement)

    return counter


def inline_threadpool() -> None:
    """Run `def` routes and dependencies on the event loop's thread, so that one cProfile (and
    one callgrind thread) sees the whole request. Timing is unaffected: one request at a time."""

    async def run_sync(func: Any, *args: Any, **_kw: Any) -> Any:
        return func(*args)

    anyio.to_thread.run_sync = run_sync  # type: ignore[assignment]


async def post_batches(
    app: Any, bodies: list[bytes], secret: str, counter: StatementCounter, args: argparse.Namespace
) -> tuple[list[float], list[Counter[str]]]:
    """POST the warm-up batches, then the timed ones; wall time and statements per timed batch."""
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    transport = httpx.ASGITransport(app=app)
    walls: list[float] = []
    per_batch: list[Counter[str]] = []
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://profile") as client,
    ):

        async def post(index: int) -> None:
            response = await client.post(
                "/results",
                content=bodies[index],
                headers={**headers, "Idempotency-Key": f"p{index}"},
            )
            if response.status_code != 201:
                raise SystemExit(
                    f"batch {index}: HTTP {response.status_code}: {response.text[:300]}"
                )

        for index in range(WARMUP_BATCHES):
            await post(index)
        if args.setup_only:
            return walls, per_batch
        profiler = cProfile.Profile() if args.profile else None
        for index in range(WARMUP_BATCHES, WARMUP_BATCHES + args.batches):
            with counter.counting() as kinds:
                if profiler:
                    profiler.enable()
                started = time.perf_counter()
                await post(index)
                walls.append(time.perf_counter() - started)
                if profiler:
                    profiler.disable()
            per_batch.append(kinds)
        if profiler:
            profiler.dump_stats(args.profile)
    return walls, per_batch


def run(url: str, args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    catalog, secret = prepare(url, rng, corpus=args.corpus)
    print(
        f"setup (migrate + seed{' + corpus' if args.corpus else ''}): "
        f"{time.perf_counter() - started:.1f} s"
    )
    bodies = encode(
        chunks(
            make_rows(catalog, (WARMUP_BATCHES + args.batches) * args.batch_size, rng),
            args.batch_size,
        )
    )
    counter = install_counter(not url.startswith("sqlite"))
    counter.verbose = args.verbose
    inline_threadpool()
    app = create_app(Settings(database_url=url, log_level="warning"))
    walls, per_batch = asyncio.run(post_batches(app, bodies, secret, counter, args))
    if args.setup_only:
        return
    total = sum(per_batch, Counter())
    n = len(per_batch)
    kinds = ", ".join(f"{k} {v / n:g}" for k, v in total.most_common())
    print(f"statements per batch: {sum(total.values()) / n:g} ({kinds})")
    print(
        f"wall per batch: median {statistics.median(walls) * 1000:.0f} ms over {n} batches of "
        f"{args.batch_size} (in process, ASGI, one thread; meaningful only on a quiet machine)"
    )
    if args.profile:
        stats = pstats.Stats(args.profile)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL, help="Postgres admin URL")
    parser.add_argument("--sqlite", action="store_true", help="a scratch SQLite file instead")
    parser.add_argument("--batches", type=int, default=5, help="timed batches")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument(
        "--no-corpus",
        dest="corpus",
        action="store_false",
        help="catalog only, without the shipped measured corpus",
    )
    parser.add_argument("--profile", metavar="FILE", help="write cProfile stats of timed batches")
    parser.add_argument("--top", type=int, default=30, help="functions printed with --profile")
    parser.add_argument(
        "--setup-only", action="store_true", help="stop after the warm-up (callgrind baseline)"
    )
    parser.add_argument("--verbose", action="store_true", help="print each statement")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.sqlite:
        with tempfile.TemporaryDirectory() as tmp:
            run(f"sqlite:///{tmp}/profile.db", args)
    else:
        with scratch_database(args.database_url) as url:
            run(url, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
