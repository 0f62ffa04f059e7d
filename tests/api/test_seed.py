"""Seeding is idempotent and loads launch prices as `msrp` price observations."""

from sqlmodel import Session, func, select

from service.catalog import loaders as catalog
from service.catalog.seed import seed
from service.models import Gpu, Price, ScalingProfile, Workload
from service.read_model.estimates import fingerprint


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
    with Session(db) as s:
        msrp = s.exec(select(func.count()).where(Price.condition == "msrp")).one()
        cloud = s.exec(select(func.count()).where(Price.condition == "cloud")).one()
    assert msrp == len(catalog.load_launch_prices())
    shipped = catalog.load_prices()
    assert 0 < cloud <= sum(p.kind == "cloud" for p in shipped)
    assert before[3] <= msrp + len(shipped) + len(catalog.load_sold_as())


def test_seed_keeps_an_admin_edit(db):
    with Session(db) as s:
        gpu = s.exec(select(Gpu).where(Gpu.slug == "nvidia-rtx-4090")).one()
        gpu.name = "edited"
        s.add(gpu)
        s.commit()
    seed(db)
    with Session(db) as s:
        assert s.exec(select(Gpu.name).where(Gpu.slug == "nvidia-rtx-4090")).one() == "edited"


def test_seed_names_the_suite_of_a_workload_stored_without_one_and_keeps_a_set_one(db):
    """A database migrated from before suites (every workload '') gets the catalog's suites;
    a suite an admin set stays."""
    catalog_suites = {w.slug: w.suite for w in catalog.load_workloads()}
    assert catalog_suites["resnet50-train"] == "lambda-pytorch"
    with Session(db) as s:
        for w in s.exec(select(Workload)):
            w.suite = "own-lab" if w.slug == "ssd300-train" else ""
            s.add(w)
        s.commit()
    seed(db)
    with Session(db) as s:
        stored = {w.slug: w.suite for w in s.exec(select(Workload))}
    assert stored["ssd300-train"] == "own-lab"
    assert {k: v for k, v in stored.items() if k != "ssd300-train"} == {
        k: v for k, v in catalog_suites.items() if k != "ssd300-train"
    }


def test_msrp_rows(db):
    with Session(db) as s:
        row = s.exec(
            select(Price).join(Gpu).where(Gpu.slug == "nvidia-rtx-4090", Price.source == "msrp")
        ).one()
    assert row.usd == 1599 and row.condition == "msrp" and row.observed_at.year == 2022


def test_cloud_rows_carry_hourly_rate_and_provider_and_old_msrp_rows_are_migrated(db):
    with Session(db) as s:
        clouds = s.exec(select(Price).where(Price.condition == "cloud")).all()
        assert clouds and all(p.usd is None and p.usd_per_hour and p.provider for p in clouds)
        row = s.exec(select(Price).where(Price.source == "msrp")).first()
        assert row is not None
        row.condition = "new"  # how seeds before msrp was a kind stored it
        s.add(row)
        s.commit()
    seed(db)
    with Session(db) as s:
        assert not s.exec(
            select(Price).where(Price.source == "msrp", Price.condition == "new")
        ).first()


def test_seed_fills_the_memory_type_of_a_gpu_stored_without_one_and_keeps_a_set_one(db):
    """A database migrated from before memory types (every GPU NULL) gets the catalog's, with
    its source; a type an admin set stays."""
    shipped = {g.slug: (g.memory_type, g.memory_type_source) for g in catalog.load_gpus()}
    assert all(t and src for t, src in shipped.values())
    with Session(db) as s:
        for g in s.exec(select(Gpu)):
            g.memory_type = "GDDR7" if g.slug == "nvidia-rtx-4090" else None
            g.memory_type_source = "admin" if g.slug == "nvidia-rtx-4090" else None
            s.add(g)
        s.commit()
    with Session(db) as s:
        before = fingerprint(s)
    seed(db, results=False)
    with Session(db) as s:
        assert fingerprint(s) != before  # a running service refits with the filled types
        stored = {g.slug: (g.memory_type, g.memory_type_source) for g in s.exec(select(Gpu))}
    assert stored.pop("nvidia-rtx-4090") == ("GDDR7", "admin")
    assert stored == {k: v for k, v in shipped.items() if k != "nvidia-rtx-4090"}


def test_seed_fills_the_availability_of_a_gpu_stored_without_one_and_keeps_a_set_one(db):
    """A database from before availability (no availability_source) gets the catalog's status,
    unit and stack; a row whose availability an admin set keeps it."""
    shipped = {g.slug: g for g in catalog.load_gpus()}
    with Session(db) as s:
        for g in s.exec(select(Gpu)):
            if g.slug == "nvidia-rtx-4090":
                g.status, g.availability_source = "in_production", "admin"
            else:
                g.status, g.sold_as, g.availability_source = "in_production", "card", None
            s.add(g)
        s.commit()
    seed(db, results=False)
    with Session(db) as s:
        stored = {g.slug: g for g in s.exec(select(Gpu))}
    assert (stored["nvidia-rtx-4090"].status, stored["nvidia-rtx-4090"].availability_source) == (
        "in_production",
        "admin",
    )
    assert shipped["nvidia-h100-sxm"].sold_as == "hgx-8"
    for slug, g in stored.items():
        if slug != "nvidia-rtx-4090":
            want = shipped[slug]
            got = (g.status, g.sold_as, g.availability_source)
            assert got == (want.status, want.sold_as, want.availability_source), slug
