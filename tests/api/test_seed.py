"""Seeding is idempotent and loads launch prices as `msrp` price observations."""

from sqlmodel import Session, func, select

from service.catalog import loaders as catalog
from service.catalog.seed import seed
from service.models import Gpu, Price, ScalingProfile, Workload


def _counts(engine):
    with Session(engine) as s:
        return tuple(
            s.exec(select(func.count()).select_from(m)).one()
            for m in (Gpu, Workload, ScalingProfile, Price)
        )


def test_seed_twice_changes_nothing(db):
    before = _counts(db)
    report = seed(db)
    assert (report.gpus, report.workloads, report.scaling_profiles, report.prices) == (0, 0, 0, 0)
    assert _counts(db) == before
    assert before[0] == len(catalog.load_gpus())
    assert before[3] == len(catalog.load_launch_prices())


def test_seed_keeps_an_admin_edit(db):
    with Session(db) as s:
        gpu = s.exec(select(Gpu).where(Gpu.slug == "nvidia-rtx-4090")).one()
        gpu.name = "edited"
        s.add(gpu)
        s.commit()
    seed(db)
    with Session(db) as s:
        assert s.exec(select(Gpu.name).where(Gpu.slug == "nvidia-rtx-4090")).one() == "edited"


def test_msrp_rows(db):
    with Session(db) as s:
        row = s.exec(
            select(Price).join(Gpu).where(Gpu.slug == "nvidia-rtx-4090", Price.source == "msrp")
        ).one()
    assert row.usd == 1599 and row.condition == "new" and row.observed_at.year == 2022
