"""The agent protocol (host token): heartbeat, claim a job, post its result or its failure."""

from fastapi import APIRouter, Response, status

from service.api.deps import MetricsDep, ReadModelDep, RowId, SettingsDep, WriteSessionDep
from service.api.presenters import calibration_read
from service.api.responses import AUTH, CONFLICT, NO_CONTENT, NOT_FOUND, REPEAT, TOO_LARGE
from service.api.security import HostDep
from service.core.errors import Conflict, NotFound
from service.hosts import lifecycle as host_service
from service.models import Gpu, utcnow
from service.schemas.calibration import (
    CalibrationRead,
    CalibrationReport,
    Heartbeat,
    HostIdentity,
    JobFailure,
    JobRead,
)

router = APIRouter(prefix="/agent", tags=["agent"])


@router.post("/heartbeat", response_model=Heartbeat, responses=AUTH | TOO_LARGE)
def heartbeat(
    identity: HostIdentity, host: HostDep, session: WriteSessionDep, settings: SettingsDep
) -> Heartbeat:
    job = host_service.heartbeat(session, host, identity, utcnow())
    session.commit()
    assert host.id is not None
    return Heartbeat(
        host_id=host.id,
        state=host.state,
        job_due=job is not None,
        poll_interval_s=settings.agent_poll_s,
    )


@router.post(
    "/jobs/claim",
    response_model=JobRead,
    responses=NO_CONTENT | AUTH | TOO_LARGE,
)
def claim(host: HostDep, session: WriteSessionDep, settings: SettingsDep) -> JobRead | Response:
    job = host_service.claim(
        session, host, utcnow(), settings.job_lease_s, settings.job_max_attempts
    )
    session.commit()
    if job is None:
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    return JobRead.model_validate(job)


@router.post(
    "/jobs/{job_id}/result",
    response_model=CalibrationRead,
    status_code=status.HTTP_201_CREATED,
    responses=REPEAT | CONFLICT | AUTH | NOT_FOUND | TOO_LARGE,
)
def post_result(
    job_id: RowId,
    report: CalibrationReport,
    host: HostDep,
    session: WriteSessionDep,
    response: Response,
    metrics: MetricsDep,
    reads: ReadModelDep,
) -> CalibrationRead:
    try:
        calibration, created = host_service.complete(session, host, job_id, report, utcnow())
    except host_service.JobNotFound:
        raise NotFound(f"no job {job_id} for this host") from None
    except host_service.JobClosed:
        raise Conflict(f"job {job_id} already failed; its result is not wanted") from None
    session.commit()
    if created:
        metrics.calibrations.labels(calibration.status).inc()
        if calibration.status == "accepted":
            reads.changed()  # an accepted calibration moves the estimates of its GPU
    else:
        response.status_code = status.HTTP_200_OK
    gpu = session.get(Gpu, calibration.gpu_id) if calibration.gpu_id else None
    return calibration_read(calibration, host.name, gpu.slug if gpu else None)


@router.post("/jobs/{job_id}/fail", response_model=JobRead, responses=AUTH | NOT_FOUND | TOO_LARGE)
def post_failure(
    job_id: RowId,
    failure: JobFailure,
    host: HostDep,
    session: WriteSessionDep,
    settings: SettingsDep,
) -> JobRead:
    try:
        job = host_service.fail(
            session, host, job_id, failure.error, utcnow(), settings.job_max_attempts
        )
    except host_service.JobNotFound:
        raise NotFound(f"no job {job_id} for this host") from None
    session.commit()
    return JobRead.model_validate(job)
