"""Command line: gpu-advisor serve | migrate | seed."""

import typer
import uvicorn

from service import migrations
from service.db import make_engine
from service.seed import seed as seed_catalog
from service.settings import get_settings

app = typer.Typer(help="gpu-advisor: which GPU(s) to buy for deep learning.", no_args_is_help=True)


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


@app.command()
def serve(
    host: str | None = typer.Option(None, help="Bind address (default GPU_ADVISOR_HOST)."),
    port: int | None = typer.Option(None, help="Port (default GPU_ADVISOR_PORT)."),
    workers: int = typer.Option(1, min=1, help="uvicorn worker processes."),
) -> None:
    """Serve the API with uvicorn."""
    settings = get_settings()
    uvicorn.run(
        "service.main:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers,
        log_level=settings.log_level.lower(),
    )


if __name__ == "__main__":
    app()
