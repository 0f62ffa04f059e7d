"""Calibration hosts on the server side: registration, heartbeats, due jobs, leases, results.

Pull design: a host's agent heartbeats and claims work; the server never connects to a host.
A host has at most one open job. A claim takes a lease (SELECT ... FOR UPDATE SKIP LOCKED on
Postgres; the write session's BEGIN IMMEDIATE on SQLite); a job whose lease expired is
claimable again, up to `job_max_attempts`, after which the host is `failing` until an admin
asks for a new run.
"""

from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from service.auth import generate_secret, secret_matches, split_prefix
from service.calibration.report import best_tflops, noise, stack_fingerprint
from service.catalog.lookup import device_names
from service.catalog.peaks import spec_peaks
from service.domain import calibration_gate
from service.domain.due import due_reason
from service.domain.matching import map_device
from service.models import Calibration, Gpu, Host, Job
from service.schemas.calibration import CalibrationReport, HostIdentity

OPEN_JOB_STATUSES = ("todo", "running")


class JobNotFound(Exception):
    """No such job for this host."""


class JobClosed(Exception):
    """The job already failed for good; its result is no longer wanted."""


def register_host(session: Session, name: str, interval_s: int) -> tuple[Host, str]:
    secret = generate_secret("hst")
    host = Host(
        name=name, token_prefix=secret.prefix, token_sha256=secret.sha256, interval_s=interval_s
    )
    session.add(host)
    session.flush()  # the id; the caller commits
    return host, secret.secret


def find_host(session: Session, token: str) -> Host | None:
    """The live (not retired) host this token belongs to, or None."""
    prefix = split_prefix(token, "hst")
    if prefix is None:
        return None
    host = session.exec(select(Host).where(Host.token_prefix == prefix)).first()
    if host is None or host.retired_at is not None or not secret_matches(token, host.token_sha256):
        return None
    return host


def map_identity(session: Session, identity: HostIdentity) -> tuple[int | None, str]:
    """The catalog GPU of the host's first device, or None with the reason."""
    if identity.device != "cuda":
        return None, "cpu host: never mapped to a GPU"
    device = identity.gpus[0]
    slug, how = map_device(device.name, device.memory_gb, device_names(session))
    if slug is None:
        return None, how
    gpu_id = session.exec(select(Gpu.id).where(Gpu.slug == slug)).one()
    return gpu_id, how


def open_job(session: Session, host_id: int) -> Job | None:
    query = select(Job).where(Job.host_id == host_id, col(Job.status).in_(OPEN_JOB_STATUSES))
    return session.exec(query).first()


def last_calibration_at(session: Session, host_id: int) -> datetime | None:
    query = (
        select(Calibration.created_at)
        .where(Calibration.host_id == host_id)
        .order_by(col(Calibration.created_at).desc())
    )
    return session.exec(query).first()


def ensure_job(session: Session, host: Host, now: datetime, stack_changed: bool) -> Job | None:
    """Create the host's due job if it has none open. Failing hosts wait for an admin."""
    assert host.id is not None
    existing = open_job(session, host.id)
    if existing is not None or host.state in ("failing", "retired"):
        return existing
    reason = due_reason(
        now,
        last_calibration_at(session, host.id),
        host.interval_s,
        host.calibrate_requested,
        stack_changed,
    )
    if reason is None:
        return None
    job = Job(host_id=host.id, reason=reason)
    session.add(job)
    session.flush()
    return job


def heartbeat(session: Session, host: Host, identity: HostIdentity, now: datetime) -> Job | None:
    fingerprint = stack_fingerprint(identity)
    stack_changed = host.stack_fingerprint is not None and fingerprint != host.stack_fingerprint
    gpu_id, how = map_identity(session, identity)
    host.identity = identity.model_dump() | {"mapping": how}
    host.stack_fingerprint = fingerprint
    host.gpu_id = gpu_id
    host.last_seen_at = now
    session.add(host)
    return ensure_job(session, host, now, stack_changed)


def claim(
    session: Session, host: Host, now: datetime, lease_s: int, max_attempts: int
) -> Job | None:
    """Lease the host's claimable job: todo, or running with an expired lease."""
    assert host.id is not None
    query = (
        select(Job)
        .where(Job.host_id == host.id, col(Job.status).in_(OPEN_JOB_STATUSES))
        .order_by(col(Job.id))
        .limit(1)
    )
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    job = session.exec(query).first()
    if job is None:
        return None
    lease = job.lease_expires_at
    if job.status == "running" and lease is not None and lease > now:
        return None  # someone holds it: never run one job twice at once
    if job.attempts >= max_attempts:
        _give_up(session, host, job, now, job.error or "lease expired on every attempt")
        return None
    job.status = "running"
    job.attempts += 1
    job.lease_expires_at = now + timedelta(seconds=lease_s)
    session.add(job)
    return job


def _give_up(session: Session, host: Host, job: Job, now: datetime, error: str) -> None:
    job.status, job.error, job.finished_at = "failed", error[:2000], now
    host.state = "failing"
    session.add_all([job, host])


def _host_job(session: Session, host: Host, job_id: int) -> Job:
    job = session.get(Job, job_id, with_for_update=session.get_bind().dialect.name == "postgresql")
    if job is None or job.host_id != host.id:
        raise JobNotFound(job_id)
    return job


def complete(
    session: Session, host: Host, job_id: int, report: CalibrationReport, now: datetime
) -> tuple[Calibration, bool]:
    """Store the job's calibration (once: a repeat returns the first). (calibration, created)"""
    job = _host_job(session, host, job_id)
    existing = session.exec(select(Calibration).where(Calibration.job_id == job_id)).first()
    if existing is not None:
        return existing, False
    if job.status == "failed":
        raise JobClosed(job_id)
    gpu = session.get(Gpu, host.gpu_id) if report.device == "cuda" and host.gpu_id else None
    best = {str(dtype): value for dtype, value in best_tflops(report).items()}
    peaks = spec_peaks(gpu)
    rates: dict[str, Any] = {f"{dtype}_tflops": value for dtype, value in best.items()}
    verdict = calibration_gate.judge(best, peaks, noise(report))
    calibration = Calibration(
        host_id=host.id,  # type: ignore[arg-type]
        job_id=job_id,
        gpu_id=gpu.id if gpu else None,
        device=report.device,
        device_name=report.device_name,
        **rates,
        bandwidth_gbs=report.bandwidth_gbs,
        h2d_gbs=report.h2d_gbs,
        stack=report.stack,
        stats=_stats(report, peaks),
        status="accepted" if verdict.accepted else "rejected",
        reason=verdict.reason,
        created_at=now,
    )
    job.status, job.finished_at, job.error = "done", now, None
    host.state, host.calibrate_requested = "healthy", False
    session.add_all([calibration, job, host])
    session.flush()
    return calibration, True


def _stats(report: CalibrationReport, peaks: dict[str, float | None]) -> dict[str, Any]:
    best = {str(dtype): value for dtype, value in best_tflops(report).items()}
    return {
        "noise": noise(report),
        "efficiency": calibration_gate.efficiencies(best, peaks),
        "matmul": [m.model_dump() for m in report.matmul],
        "before": report.before.model_dump(),
        "after": report.after.model_dump(),
        "duration_s": report.duration_s,
        "gpu_uuid": report.gpu_uuid,
    }


def fail(
    session: Session, host: Host, job_id: int, error: str, now: datetime, max_attempts: int
) -> Job:
    """The agent could not run the job: retry it later, or give up after max attempts."""
    job = _host_job(session, host, job_id)
    if job.status in ("done", "failed"):
        return job
    if job.attempts >= max_attempts:
        _give_up(session, host, job, now, error)
    else:
        job.status, job.lease_expires_at, job.error = "todo", None, error[:2000]
        session.add(job)
    return job


def request_calibration(session: Session, host: Host, now: datetime) -> Job | None:
    host.calibrate_requested = True
    if host.state == "failing":
        host.state = "pending"
    session.add(host)
    session.flush()
    return ensure_job(session, host, now, stack_changed=False)


def retire(session: Session, host: Host, now: datetime) -> None:
    host.retired_at, host.state = now, "retired"
    assert host.id is not None
    job = open_job(session, host.id)
    if job is not None:
        job.status, job.finished_at, job.error = "failed", now, "host retired"
        session.add(job)
    session.add(host)
