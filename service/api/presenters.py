"""Rows more than one router answers with: prices and calibration views."""

from typing import Any

from sqlmodel import Session, col, select

from service.domain.recommend import Candidate
from service.models import Calibration, Gpu, Host
from service.schemas.calibration import CalibrationRead
from service.schemas.rankings import PriceInfo


def price_info(candidate: Candidate) -> PriceInfo | None:
    p = candidate.price
    if p is None:
        return None
    return PriceInfo(usd=p.usd, condition=p.condition, source=p.source, observed_at=p.observed_at)


def calibration_read(calibration: Calibration, host: str, gpu: str | None) -> CalibrationRead:
    stats = calibration.stats or {}
    return CalibrationRead.model_validate(
        {
            **calibration.model_dump(),
            "host": host,
            "gpu": gpu,
            "efficiency": stats.get("efficiency", {}),
            "noise": stats.get("noise"),
        }
    )


def calibration_query() -> Any:
    return (
        select(Calibration, Host.name, Gpu.slug)
        .join(Host, col(Host.id) == Calibration.host_id)
        .outerjoin(Gpu, col(Gpu.id) == Calibration.gpu_id)
    )


def latest_for_gpu(session: Session, gpu_id: int) -> CalibrationRead | None:
    query = (
        calibration_query()
        .where(Calibration.gpu_id == gpu_id, Calibration.status == "accepted")
        .order_by(col(Calibration.created_at).desc())
    )
    row = session.exec(query).first()
    return calibration_read(*row) if row else None
