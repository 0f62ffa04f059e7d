"""Command line: gpu-advisor serve | migrate | seed | keys | submit | evaluate | ..."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import httpx
import typer
import uvicorn
from sqlalchemy import make_url
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col, select

from service import submit as submit_client
from service.auth import create_api_key, revoke_api_key
from service.catalog.seed import seed as seed_catalog
from service.core import migrations
from service.core.db import is_sqlite, make_engine
from service.core.observability import configure_logging
from service.core.server import GuardedHttpToolsProtocol
from service.core.settings import get_settings
from service.domain.vocabulary import ROLES, Role
from service.models import ApiKey
from service.schemas.results import MAX_BATCH

app = typer.Typer(help="gpu-advisor: which GPU(s) to buy for deep learning.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys: create (shown once), list, revoke.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


@app.command()
def migrate() -> None:
    """Upgrade the database to the newest schema (alembic upgrade head)."""
    migrations.upgrade(get_settings().database_url)
    typer.echo("database at head revision")


@app.command()
def seed() -> None:
    """Load the shipped GPU catalog, workloads, scaling profiles and launch prices (idempotent)."""
    engine = make_engine(get_settings().database_url)
    try:
        report = seed_catalog(engine)
    finally:
        engine.dispose()
    typer.echo(
        f"seeded {report.gpus} GPUs, {report.workloads} workloads, "
        f"{report.scaling_profiles} scaling profiles, {report.prices} launch prices"
    )
    accepted, rejected = report.calibrations
    if accepted or rejected:
        typer.echo(
            f"published calibrations: {accepted} accepted, {rejected} rejected "
            "(calibrations.csv, one retired public:<source> host per source)"
        )
    typer.echo(render_seeded_results(report.results))


def render_seeded_results(r: Any) -> str:
    """The measured-corpus part of the seed report, with what was skipped and why."""
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(r.statuses.items())) or "none new"
    lines = [f"measured results: {r.stored} stored ({statuses}), {r.already} already stored"]
    for what, counter in (("GPU", r.skipped_gpu), ("workload", r.skipped_workload)):
        if counter:
            names = ", ".join(f"{k} ({n})" for k, n in counter.most_common())
            lines.append(f"  skipped {sum(counter.values())} rows, {what} not in the DB: {names}")
    if r.invalid:
        lines.append(f"  skipped {r.invalid} rows the result schema refuses")
    if r.rejudged:
        reasons = ", ".join(f"{k} ({n})" for k, n in r.rejudged.most_common())
        lines.append(
            f"  {sum(r.rejudged.values())} stored results now outliers by today's gate: {reasons}"
        )
    return "\n".join(lines)


@app.command()
def serve(
    host: str | None = typer.Option(None, help="Bind address (default GPU_ADVISOR_HOST)."),
    port: int | None = typer.Option(None, help="Port (default GPU_ADVISOR_PORT)."),
    workers: int = typer.Option(1, min=1, help="uvicorn worker processes."),
) -> None:
    """Serve the API with uvicorn."""
    settings = get_settings()
    configure_logging(settings.log_level)
    uvicorn.run(
        "service.main:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers,
        log_level=settings.log_level.lower(),
        log_config=None,  # keep the JSON handler configured above
        access_log=False,  # one JSON access line per request comes from the app itself
        timeout_graceful_shutdown=20,
        # Limits (README "Operations"): httptools with a bound on the request head (431) and
        # a timeout for slow heads (service/core/server.py); plain httptools has neither.
        http=GuardedHttpToolsProtocol,
        timeout_keep_alive=settings.keep_alive_s,
        limit_concurrency=settings.max_connections,
    )


def _fail(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(2)


def migrated_engine() -> Engine:
    """An engine on GPU_ADVISOR_DATABASE_URL, or one line naming the database and what to do
    (exit 2) when it is missing, unreachable or not at the head revision. A SQLite file that
    does not exist is not created: connecting would leave an empty database behind."""
    url = get_settings().database_url
    shown = make_url(url).render_as_string(hide_password=True)
    todo = "run `gpu-advisor migrate` (with the same GPU_ADVISOR_DATABASE_URL) first"
    database = make_url(url).database if is_sqlite(url) else None
    if database and database != ":memory:" and not Path(database).exists():
        _fail(f"no database at {shown}: {todo}")
    engine = make_engine(url)
    try:
        revision = migrations.current_revision(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        reason = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or ["?"])[0]
        _fail(f"cannot use the database at {shown}: {reason}")
    head = migrations.head_revision(url)
    if revision != head:
        engine.dispose()
        state = "is not migrated" if revision is None else f"is at revision {revision}, not {head}"
        _fail(f"the database at {shown} {state}: {todo}")
    return engine


@keys_app.command("create")
def keys_create(
    name: str = typer.Option(..., help="Who or what the key is for."),
    role: str = typer.Option("submitter", help="submitter | admin"),
) -> None:
    """Create a key and print its secret once (only its hash is stored)."""
    if role not in ROLES:
        raise typer.BadParameter(f"role must be one of {', '.join(ROLES)}", param_hint="--role")
    role_: Role = "admin" if role == "admin" else "submitter"
    engine = migrated_engine()
    with Session(engine) as session:
        key, secret = create_api_key(session, name, role_)
        session.commit()
        typer.echo(f"created {key.role} key '{key.name}' (prefix {key.prefix}); store it now:")
        typer.echo(secret)
    engine.dispose()


@keys_app.command("list")
def keys_list() -> None:
    """List keys without secrets."""
    engine = migrated_engine()
    with Session(engine) as session:
        for key in session.exec(select(ApiKey).order_by(col(ApiKey.id))):
            state = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "active"
            typer.echo(f"{key.prefix}  {key.role:<9}  {state:<18}  {key.name}")
    engine.dispose()


@keys_app.command("revoke")
def keys_revoke(
    prefix: str = typer.Argument(..., help="The key's prefix (see keys list)."),
) -> None:
    """Revoke a key; it is refused from the next request on."""
    engine = migrated_engine()
    with Session(engine) as session:
        key = revoke_api_key(session, prefix)
        session.commit()
    engine.dispose()
    if key is None:
        typer.echo(f"no key with prefix {prefix}", err=True)
        raise typer.Exit(1)
    typer.echo(f"revoked {prefix}")


def server_url(server: str | None) -> str:
    """--server, else GPU_ADVISOR_SERVER, else the address `gpu-advisor serve` listens on
    (GPU_ADVISOR_HOST:GPU_ADVISOR_PORT; a wildcard bind address is reached on 127.0.0.1)."""
    if server:
        return server
    settings = get_settings()
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


@contextmanager
def server_errors() -> Iterator[None]:
    """A server that cannot be reached, or refuses (HTTPStatusError, see `expect`): one line on
    stderr and exit status 1, never a traceback."""
    try:
        yield
    except httpx.HTTPStatusError as exc:
        typer.echo(f"server refused: {exc.response.status_code} {exc.response.text}", err=True)
        raise typer.Exit(1) from None
    except httpx.TransportError as exc:
        typer.echo(f"server unreachable: {exc}", err=True)
        raise typer.Exit(1) from None


def expect(response: httpx.Response, status: int) -> httpx.Response:
    """`response` if it has `status`, else HTTPStatusError (server_errors reports it)."""
    if response.status_code != status:
        raise httpx.HTTPStatusError(
            f"expected {status}", request=response.request, response=response
        )
    return response


@app.command()
def submit(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="results .json or .csv"),
    server: str | None = typer.Option(
        None,
        envvar="GPU_ADVISOR_SERVER",
        help="gpu-advisor base URL (default http://GPU_ADVISOR_HOST:GPU_ADVISOR_PORT).",
    ),
    key: str = typer.Option(..., envvar="GPU_ADVISOR_KEY", help="Submitter API key."),
    batch_size: int = typer.Option(MAX_BATCH, min=1, max=MAX_BATCH),
    timeout: float = typer.Option(60.0, help="Seconds per request."),
) -> None:
    """Validate results locally, then send them in batches (safe to rerun: idempotent)."""
    try:
        items = submit_client.validate_rows(submit_client.read_rows(file))
    except (submit_client.InvalidFile, ValueError) as exc:
        problems = exc.problems if isinstance(exc, submit_client.InvalidFile) else [str(exc)]
        for problem in problems[:50]:
            typer.echo(f"invalid: {problem}", err=True)
        raise typer.Exit(2) from None
    headers = {"Authorization": f"Bearer {key}"}
    with (
        httpx.Client(base_url=server_url(server), headers=headers, timeout=timeout) as client,
        server_errors(),
    ):
        report = submit_client.submit(client, items, batch_size)
    summary = ", ".join(f"{n} {status}" for status, n in sorted(report.statuses.items()))
    typer.echo(f"sent {len(items)} results in {report.batches} batches: {summary}")
    for reason, n in report.reasons.most_common():
        typer.echo(f"  {n} x {reason}")


@app.command()
def recommend(
    budget: float = typer.Option(..., min=0.01, help="USD for all GPUs."),
    server: str | None = typer.Option(
        None,
        envvar="GPU_ADVISOR_SERVER",
        help="gpu-advisor base URL (default http://GPU_ADVISOR_HOST:GPU_ADVISOR_PORT).",
    ),
    workload: str | None = typer.Option(None, help="Workload slug (default: the server's)."),
    max_gpus: int = typer.Option(4, min=1, max=8),
    mode: str = typer.Option("parallel", help="parallel | independent"),
    framework: str = typer.Option("pytorch"),
    condition: str = typer.Option("any", help="new | used | any"),
    limit: int = typer.Option(5, min=1, max=50),
) -> None:
    """Print the best configurations for a budget as a table."""
    params: dict[str, str | float | int] = {
        "budget": budget,
        "max_gpus": max_gpus,
        "mode": mode,
        "framework": framework,
        "condition": condition,
        "limit": limit,
    }
    if workload:
        params["workload"] = workload
    url = f"{server_url(server).rstrip('/')}/recommend"
    with server_errors():
        response = expect(httpx.get(url, params=params, timeout=30), 200)
    typer.echo(render_recommendations(response.json()))


def _figure(value: float) -> str:
    """As `why` writes figures: whole numbers from 100 up, else three significant digits."""
    return f"{value:,.0f}" if value >= 100 else f"{value:,.3g}"


def _price_origin(price: dict[str, Any]) -> str:
    """Where a unit price comes from and when: `msrp 2022-10-12`, `ebay used 2026-11-30`."""
    source = str(price.get("source") or "?")
    if "://" in source:
        source = source.split("://", 1)[1].split("/", 1)[0]  # a URL: its host keeps rows short
    condition = price.get("condition")
    label = source if condition in (None, "new") else f"{source} {condition}"
    return f"{label} {str(price.get('observed_at') or '')[:10]}".strip()


@app.command()
def fit(
    model: str = typer.Option(..., help="Model slug (GET /models)."),
    task: str = typer.Option("inference", help="inference | full-finetune | lora | qlora"),
    quant: str | None = typer.Option(None, help="Weight format (default bf16; nf4 for qlora)."),
    context: int | None = typer.Option(None, min=1, help="Tokens per sequence."),
    batch: int = typer.Option(1, min=1),
    max_gpus: int = typer.Option(8, min=1, max=64),
) -> None:
    """Print a model's memory breakdown and which catalog GPUs, and how many, hold it."""
    from service.core.errors import UnknownSlug
    from service.fit import ask_from_options, render_fit

    try:
        ask = ask_from_options(model, task, quant, context, batch)
    except UnknownSlug as exc:
        hint = f"; did you mean {', '.join(exc.suggestions)}?" if exc.suggestions else ""
        typer.echo(f"{exc.detail}{hint}", err=True)
        raise typer.Exit(2) from None
    except ValueError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    typer.echo(render_fit(ask, max_gpus))


@app.command()
def evaluate(
    mode: str = typer.Option(
        "gpu",
        help="gpu: hold each GPU out of every workload (a card nobody measured); "
        "cell: hold out one (GPU, workload) at a time (slow: one refit per result).",
    ),
    min_gpus: int = typer.Option(5, min=3, help="Score workloads with at least this many GPUs."),
) -> None:
    """Leave-one-GPU-out accuracy of the estimator on this database's results."""
    from datetime import UTC, datetime

    from service.domain.evaluation import format_table
    from service.read_model import accuracy

    if mode not in ("gpu", "cell"):
        _fail(f"--mode must be gpu or cell, not {mode!r}")
    engine = migrated_engine()
    settings = get_settings()
    with Session(engine) as session:
        report = accuracy.evaluate(
            session,
            datetime.now(UTC).date(),
            settings.price_max_age_days,
            "gpu" if mode == "gpu" else "cell",
            min_gpus,
        )
    engine.dispose()
    typer.echo(render_accuracy(report, format_table))


def render_accuracy(report: Any, format_table: Any) -> str:
    """The report's table, then how many workloads meet the issue's targets and which do not."""
    from service.read_model.accuracy import meets_targets

    title = (
        f"leave-one-GPU-out, mode={report.mode}, {report.n_observations} (GPU, workload) "
        f"medians, data {report.data_version}, {report.computed_at:%Y-%m-%d %H:%M} UTC, "
        f"{report.seconds:.0f} s"
    )
    lines = [format_table(report.workloads, title)]
    judged = [(w, meets_targets(w)) for w in report.workloads]
    judged = [(w, ok) for w, ok in judged if ok is not None]
    if not report.workloads:
        lines.append(f"no workload has {report.min_gpus} or more measured GPUs")
    elif judged:
        failing = [w.workload for w, ok in judged if not ok]
        lines.append(
            f"targets (MdAPE <= 10%, p90 <= 25%, coverage 70-90%, rho$ >= 0.9 where 3+ "
            f"priced): {len(judged) - len(failing)} of {len(judged)} workloads with 6+ GPUs "
            "meet all"
        )
        if failing:
            lines.append("not met: " + ", ".join(failing))
    return "\n".join(lines)


def render_recommendations(body: dict[str, Any]) -> str:
    """A plain-text table of a /recommend answer."""
    head = (
        f"{body['workload']} ({body['precision']}), budget ${body['budget_usd']:,.0f}, "
        f"{body['mode']} with {body['framework']}, >= {body['min_memory_gb']:g} GB per GPU"
    )
    if not body["recommendations"]:
        return f"{head}\nno configuration fits: {body['hint']}"
    rows = [("#", "GPUs", "total $", body["unit"], "vs ref", "per USD", "per W", "price", "basis")]
    for r in body["recommendations"]:
        gpus = r["gpu"] if r["count"] == 1 else f"{r['count']} x {r['gpu']}"
        rel = f"{r['relative_performance']:.2f}" if r["relative_performance"] else "-"
        rows.append(
            (
                str(r["rank"]),
                gpus,
                f"{r['total_price_usd']:,.0f}",
                f"{r['throughput']:,.0f}",
                rel,
                _figure(r["perf_per_dollar"]),
                _figure(r["perf_per_watt"]) if r.get("perf_per_watt") is not None else "-",
                _price_origin(r["unit_price"]),
                r["basis"] if r["basis"] == "estimated" else f"measured n={r['n']}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [head] + [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.append(f"why #1: {body['recommendations'][0]['why']}")
    return "\n".join(lines)


@app.command()
def agent(
    server: str = typer.Option(..., help="gpu-advisor base URL."),
    token: str = typer.Option(..., envvar="GPU_ADVISOR_HOST_TOKEN", help="Host token."),
    device: str = typer.Option("cuda", help="cuda | cpu"),
    once: bool = typer.Option(False, help="One heartbeat/claim/run cycle, then exit."),
    quick: bool = typer.Option(False, help="A shorter sweep (fewer shapes and repeats)."),
) -> None:
    """Run the calibration agent: heartbeat, claim due jobs, measure, report."""
    from service.calibration import agent as agent_loop

    if device not in ("cuda", "cpu"):
        raise typer.BadParameter("device must be cuda or cpu", param_hint="--device")
    raise typer.Exit(
        agent_loop.main(server, token, "cuda" if device == "cuda" else "cpu", once, quick)
    )


if __name__ == "__main__":
    app()


@app.command("import")
def import_file(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="llama-bench | lambda-csv | mlperf"),
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="the tool's raw output"),
    server: str | None = typer.Option(
        None,
        envvar="GPU_ADVISOR_SERVER",
        help="gpu-advisor base URL (default http://GPU_ADVISOR_HOST:GPU_ADVISOR_PORT).",
    ),
    key: str = typer.Option(..., envvar="GPU_ADVISOR_KEY", help="Submitter API key."),
    timeout: float = typer.Option(60.0, help="Seconds per request."),
) -> None:
    """Post a benchmark tool's raw output (POST /results?format=FORMAT; safe to rerun)."""
    import hashlib

    body = file.read_bytes()
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "text/plain",
        "Idempotency-Key": hashlib.sha256(body).hexdigest()[:64],
    }
    url = f"{server_url(server).rstrip('/')}/results"
    with server_errors():
        sent = httpx.post(
            url, params={"format": fmt}, content=body, headers=headers, timeout=timeout
        )
        r = expect(sent, 201)
    for outcome in r.json()["results"]:
        typer.echo(f"result {outcome['id']}: {outcome['status']} {outcome['reason'] or ''}")
