"""Catalog rows by slug: the one lookup, with suggestions for a slug that names nothing.

Every caller that turns a slug into a GPU or workload goes through `by_slugs` (the batch form,
one query for the rows and one for the choices) or `by_slug`; how an unknown slug is answered
(404, or 422 naming the query parameter or body item) is the caller's choice, from the same
suggestions.
"""

from collections.abc import Collection, Sequence
from typing import TypeVar

from sqlmodel import Session, col, select

from service.core.errors import UnknownSlug
from service.domain.matching import suggest
from service.models import Gpu, Workload

Row = TypeVar("Row", Gpu, Workload)
KIND: dict[type, str] = {Gpu: "GPU", Workload: "workload"}


def by_slugs(
    session: Session, model: type[Row], slugs: Collection[str]
) -> tuple[dict[str, Row], dict[str, list[str]]]:
    """(rows found, by slug; {unknown slug: the closest known slugs})."""
    found = {row.slug: row for row in session.exec(select(model).where(col(model.slug).in_(slugs)))}
    unknown = [s for s in slugs if s not in found]
    if not unknown:
        return found, {}
    choices = list(session.exec(select(model.slug)).all())
    return found, {s: suggest(s, choices) for s in unknown}


def by_slug(session: Session, model: type[Row], slug: str) -> Row:
    """The row named `slug`; UnknownSlug (with suggestions) when there is none."""
    found, unknown = by_slugs(session, model, [slug])
    if slug in unknown:
        raise UnknownSlug(KIND[model], slug, unknown[slug])
    return found[slug]


def gpu_by_slug(session: Session, slug: str) -> Gpu:
    return by_slug(session, Gpu, slug)


def workload_by_slug(session: Session, slug: str) -> Workload:
    return by_slug(session, Workload, slug)


def list_gpus(
    session: Session,
    *,
    vendor: str | None = None,
    market: str | None = None,
    min_memory_gb: float | None = None,
    after_slug: str | None = None,
    limit: int | None = None,
) -> Sequence[Gpu]:
    query = select(Gpu).order_by(col(Gpu.slug))
    if vendor is not None:
        query = query.where(Gpu.vendor == vendor)
    if market is not None:
        query = query.where(Gpu.market == market)
    if min_memory_gb is not None:
        query = query.where(Gpu.memory_gb >= min_memory_gb)
    if after_slug is not None:
        query = query.where(col(Gpu.slug) > after_slug)
    if limit is not None:
        query = query.limit(limit)
    return session.exec(query).all()


def device_names(session: Session) -> list[tuple[str, list[str], float]]:
    """(slug, name and aliases, memory_gb) of every GPU: what domain.matching.map_device maps
    a reported device name against (a calibrating host's, an imported tool's)."""
    return [
        (g.slug, [g.name, *[a for a in g.aliases.split("|") if a]], g.memory_gb)
        for g in session.exec(select(Gpu)).all()
    ]
