"""Admin: register calibration hosts (token shown once), list, request a rerun, retire."""

from collections.abc import Callable
from datetime import datetime
from typing import Any

from fastapi import APIRouter, status
from sqlmodel import Session, col, select

from service.api.deps import RowId, SessionDep, SettingsDep, WriteSessionDep
from service.api.presenters import calibration_query, calibration_read
from service.api.responses import AUTH, CONFLICT, NOT_FOUND, TOO_LARGE, WRITE_AUTH
from service.api.security import AdminKey
from service.core.errors import Conflict, NotFound
from service.core.settings import Settings
from service.domain.due import host_state
from service.hosts import lifecycle as host_service
from service.models import Calibration, Gpu, Host, utcnow
from service.schemas.calibration import HostCreate, HostCreated, HostRead, JobRead
from service.schemas.common import Page

router = APIRouter(prefix="/hosts", tags=["hosts"])


def host_read(session: Session, host: Host, now: datetime, settings: Settings) -> HostRead:
    assert host.id is not None
    row = session.exec(
        calibration_query()
        .where(Calibration.host_id == host.id)
        .order_by(col(Calibration.created_at).desc())
    ).first()
    job = host_service.open_job(session, host.id)
    gpu = session.get(Gpu, host.gpu_id) if host.gpu_id else None
    identity = dict(host.identity) if host.identity else None
    return HostRead(
        id=host.id,
        name=host.name,
        state=host_state(now, host.state, host.last_seen_at, settings.host_stale_after_s),
        interval_s=host.interval_s,
        identity=identity,
        gpu=gpu.slug if gpu else None,
        mapping=identity.get("mapping") if identity else None,
        last_seen_at=host.last_seen_at,
        last_calibration=calibration_read(*row) if row else None,
        open_job=JobRead.model_validate(job) if job else None,
        created_at=host.created_at,
    )


def _act(
    session: Session,
    host_id: int,
    settings: Settings,
    action: Callable[[Session, Host, datetime], Any],
) -> HostRead:
    """An admin action on an active host, committed, answered with the host as it is now."""
    host = _host(session, host_id)
    now = utcnow()
    action(session, host, now)
    session.commit()
    return host_read(session, host, now, settings)


def _host(session: Session, host_id: int) -> Host:
    host = session.get(Host, host_id)
    if host is None or host.retired_at is not None:
        raise NotFound(f"no active host with id {host_id}")
    return host


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=HostCreated,
    responses=WRITE_AUTH | CONFLICT | TOO_LARGE,
)
def register(
    body: HostCreate, _admin: AdminKey, session: WriteSessionDep, settings: SettingsDep
) -> HostCreated:
    if session.exec(select(Host.id).where(Host.name == body.name)).first() is not None:
        raise Conflict(f"a host named '{body.name}' exists")
    host, token = host_service.register_host(
        session, body.name, body.interval_s or settings.calibration_interval_s
    )
    session.commit()
    read = host_read(session, host, utcnow(), settings)
    return HostCreated.model_validate({**read.model_dump(), "token": token})


@router.get("", response_model=Page[HostRead], responses=AUTH)
def list_hosts(_admin: AdminKey, session: SessionDep, settings: SettingsDep) -> Page[HostRead]:
    now = utcnow()
    rows = session.exec(select(Host).order_by(col(Host.id))).all()
    return Page[HostRead](items=[host_read(session, h, now, settings) for h in rows])


@router.post(
    "/{host_id}/calibrate",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=HostRead,
    responses=WRITE_AUTH | NOT_FOUND,
)
def calibrate(
    host_id: RowId, _admin: AdminKey, session: WriteSessionDep, settings: SettingsDep
) -> HostRead:
    return _act(session, host_id, settings, host_service.request_calibration)


@router.delete("/{host_id}", response_model=HostRead, responses=WRITE_AUTH | NOT_FOUND)
def retire(
    host_id: RowId, _admin: AdminKey, session: WriteSessionDep, settings: SettingsDep
) -> HostRead:
    return _act(session, host_id, settings, host_service.retire)
