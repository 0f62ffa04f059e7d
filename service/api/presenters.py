"""Rows more than one router answers with: calibration views (price rows: read_model.rows)."""

from typing import Any

from sqlmodel import Session, col, select

from service.models import Calibration, Gpu, Host
from service.schemas.calibration import CalibrationRead


def calibration_read(calibration: Calibration, host: str, gpu: str | None) -> CalibrationRead:
    stats = calibration.stats or {}
    return CalibrationRead.model_validate(
        {
            **calibration.model_dump(),
            "host": host,
            "gpu": gpu,
            "efficiency": stats.get("efficiency", {}),
            "noise": stats.get("noise"),
            "source": stats.get("source"),
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
