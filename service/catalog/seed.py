"""Load the shipped catalog into the database. Idempotent: rows already present are kept."""

from dataclasses import dataclass, field

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from service.catalog import loaders
from service.catalog.seed_calibrations import seed_calibrations
from service.catalog.seed_results import ResultSeedReport, seed_results
from service.models import Gpu, Platform, Price, ScalingProfile, Workload
from service.schemas.catalog import GpuCreate


@dataclass
class SeedReport:
    gpus: int = 0
    workloads: int = 0
    scaling_profiles: int = 0
    prices: int = 0
    skipped_prices: int = 0  # rows of prices.csv / sold_as.csv naming a GPU not in the catalog
    platforms: int = 0
    calibrations: tuple[int, int] = (0, 0)  # published calibrations stored: accepted, rejected
    results: ResultSeedReport = field(default_factory=ResultSeedReport)


def gpu_row(spec: GpuCreate) -> Gpu:
    data = spec.model_dump()
    data["aliases"] = "|".join(spec.aliases)
    return Gpu(**data)


# Columns added after GPUs were first stored: (the column that is NULL on a row stored before
# it, every column the catalog then fills in). A row an admin has set keeps its values.
LATER_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "availability_source",
        ("status", "discontinued_on", "sold_as", "unit_gpus", "stack", "availability_source"),
    ),
    ("memory_type", ("memory_type", "memory_type_source")),
)


def _fill_later_columns(session: Session, specs: dict[str, GpuCreate]) -> None:
    """Give GPUs stored before a column of LATER_COLUMNS existed the catalog's values."""
    for marker, names in LATER_COLUMNS:
        for gpu in session.exec(select(Gpu).where(col(getattr(Gpu, marker)).is_(None))):
            spec = specs.get(gpu.slug)
            if spec is None or getattr(spec, marker) is None:
                continue
            for name in names:
                setattr(gpu, name, getattr(spec, name))
            session.add(gpu)


PriceKey = tuple[int, str, float | None, float | None, str | None, object]


def _price_key(p: Price) -> PriceKey:
    return (p.gpu_id, p.condition, p.usd, p.usd_per_hour, p.provider, p.observed_at)


def _seed_prices(session: Session, known_gpus: dict[str, int], report: SeedReport) -> None:
    """prices.csv and the per-GPU price of priced platform units (sold_as.csv unit_usd /
    unit_gpus, as a `new` observation): a row equal in (gpu, kind, price, provider, date) to a
    stored one is not added again, so reseeding and the same figure from two files are one row.
    MSRPs stored before `msrp` was its own kind (condition new, source msrp) become kind msrp."""
    session.execute(
        update(Price)
        .where(col(Price.source) == "msrp", col(Price.condition) == "new")
        .values(condition="msrp")
    )
    stored = {_price_key(p) for p in session.exec(select(Price))}
    rows: list[Price] = []
    for row in loaders.load_prices():
        if row.gpu not in known_gpus:
            report.skipped_prices += 1
            continue
        rows.append(
            Price(
                gpu_id=known_gpus[row.gpu],
                usd=row.usd,
                usd_per_hour=row.usd_per_hour,
                provider=row.provider,
                condition=row.kind,
                source=row.source[:1024],
                reference=(row.note or "")[:1024] or None,
                observed_at=row.observed_at,
            )
        )
    for unit in loaders.load_sold_as():
        if unit.unit_usd is None or unit.observed_at is None:
            continue
        if unit.gpu not in known_gpus:
            report.skipped_prices += 1
            continue
        rows.append(
            Price(
                gpu_id=known_gpus[unit.gpu],
                usd=round(unit.unit_usd / unit.unit_gpus, 2),
                condition="new",
                source=unit.source[:1024],
                reference=f"{unit.sold_as}: ${unit.unit_usd:,.0f} / {unit.unit_gpus} GPUs",
                observed_at=unit.observed_at,
            )
        )
    for price in rows:
        key = _price_key(price)
        if key not in stored:
            stored.add(key)
            session.add(price)
            report.prices += 1


def seed(engine: Engine, results: bool = True) -> SeedReport:
    """Insert catalog rows missing from the database, in one transaction; never overwrite.
    With `results`, also the measured data: published calibrations (seed_calibrations.py) and
    the measured corpus, through the ingestion gate (seed_results.py)."""
    report = SeedReport()
    with Session(engine) as session:
        known_gpus: dict[str, int] = {
            slug: gid
            for gid, slug in session.exec(select(Gpu.id, Gpu.slug)).all()
            if gid is not None
        }
        catalog_gpus = loaders.load_gpus()
        _fill_later_columns(session, {spec.slug: spec for spec in catalog_gpus})
        for spec in catalog_gpus:
            if spec.slug not in known_gpus:
                gpu = gpu_row(spec)
                session.add(gpu)
                session.flush()
                assert gpu.id is not None
                known_gpus[spec.slug] = gpu.id
                report.gpus += 1

        msrp_gpu_ids = set(session.exec(select(Price.gpu_id).where(Price.source == "msrp")).all())
        for launch in loaders.load_launch_prices():
            gpu_id = known_gpus[launch.gpu]
            if gpu_id not in msrp_gpu_ids:
                session.add(
                    Price(
                        gpu_id=gpu_id,
                        usd=launch.usd,
                        condition="msrp",
                        source="msrp",
                        reference=launch.source_detail or None,
                        observed_at=launch.observed_at,
                    )
                )
                report.prices += 1

        _seed_prices(session, known_gpus, report)

        known_workloads = {w.slug: w for w in session.exec(select(Workload))}
        for workload in loaders.load_workloads():
            stored = known_workloads.get(workload.slug)
            if stored is None:
                session.add(Workload(**workload.model_dump()))
                report.workloads += 1
            elif workload.suite and not stored.suite:  # stored before workloads had suites
                stored.suite = workload.suite

        known_profiles = {
            (p.framework, p.interconnect, p.gpu_count) for p in session.exec(select(ScalingProfile))
        }
        for profile in loaders.load_scaling_profiles():
            if (profile.framework, profile.interconnect, profile.gpu_count) not in known_profiles:
                session.add(ScalingProfile(**profile.model_dump()))
                report.scaling_profiles += 1

        known_platforms = {p.gpu_count: p for p in session.exec(select(Platform)).all()}
        for platform in loaders.load_platforms():
            stored_platform = known_platforms.get(platform.gpu_count)
            if stored_platform is None:
                session.add(Platform(**platform.model_dump()))
                report.platforms += 1
            elif stored_platform.host_w is None and stored_platform.source == platform.source:
                # stored before platforms stated their host's power
                stored_platform.host_w = platform.host_w
                stored_platform.host_w_source = platform.host_w_source
        session.flush()
        if results:  # measured data: published calibrations and the measured corpus
            report.calibrations = seed_calibrations(session)
            report.results = seed_results(session)
        session.commit()
    return report
