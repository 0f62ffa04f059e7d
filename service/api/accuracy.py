"""GET /model/accuracy: leave-one-GPU-out accuracy of the estimator (read_model/accuracy.py)."""

from datetime import UTC, datetime

from fastapi import APIRouter, Response

from service.api.deps import AccuracyDep, SessionDep
from service.schemas.accuracy import AccuracyRead

router = APIRouter(tags=["model"])

RETRY_AFTER_S = 60  # a cold-GPU evaluation of the shipped corpus takes one to three minutes


@router.get(
    "/model/accuracy",
    response_model=AccuracyRead,
    responses={202: {"model": AccuracyRead, "description": "first report still being computed"}},
)
def model_accuracy(session: SessionDep, service: AccuracyDep, response: Response) -> AccuracyRead:
    served = service.serve(session, datetime.now(UTC).date())
    if served.report is None:
        response.status_code = 202
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return AccuracyRead.of(served)
