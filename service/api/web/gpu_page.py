"""What /gpu/{slug} shows, loaded in one session: specs with sources, the distribution of the
GPU's accepted results per workload, its prices over time (per condition, and cloud $/GPU-hour
apart: a different unit), its calibration history. Charts are drawn here from those rows."""

from dataclasses import dataclass
from datetime import date

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from service.domain.charts import Series, Strip, line_chart, strip_chart
from service.models import Calibration, Gpu, Price, Result, Workload

SPEC_FIELDS = (
    ("vendor", "Vendor", ""),
    ("architecture", "Architecture", ""),
    ("market", "Market", ""),
    ("memory_gb", "Memory", "GB"),
    ("memory_bandwidth_gbs", "Memory bandwidth", "GB/s"),
    ("memory_type", "Memory type", ""),
    ("fp32_tflops", "FP32", "TFLOPS"),
    ("fp16_tensor_tflops", "FP16 tensor", "TFLOPS"),
    ("bf16_tensor_tflops", "BF16 tensor", "TFLOPS"),
    ("fp8_tensor_tflops", "FP8 tensor", "TFLOPS"),
    ("int8_tops", "INT8", "TOPS"),
    ("tdp_w", "TDP", "W"),
    ("interconnect", "Interconnect", ""),
    ("launch_date", "Launch date", ""),
    ("launch_price_usd", "Launch price", "USD"),
    ("status", "Status", ""),
    ("sold_as", "Sold as", ""),
    ("stack", "Software stack", ""),
)


@dataclass
class PricePoint:
    observed_at: date
    condition: str
    usd: float | None
    usd_per_hour: float | None
    provider: str | None
    source: str


@dataclass
class GpuPage:
    gpu: Gpu
    specs: list[tuple[str, str]]
    results_chart: str
    result_counts: list[tuple[str, int]]
    price_chart: str
    cloud_chart: str
    prices: list[PricePoint]
    calibrations: list[Calibration]


def _spec_text(value: object, unit: str) -> str:
    if isinstance(value, float):
        value = f"{value:,.4g}"
    return f"{value} {unit}".strip()


def load(engine: Engine, slug: str) -> GpuPage | None:
    with Session(engine) as session:
        gpu = session.exec(select(Gpu).where(Gpu.slug == slug)).first()
        if gpu is None:
            return None
        specs = [
            (label, _spec_text(getattr(gpu, name), unit))
            for name, label, unit in SPEC_FIELDS
            if getattr(gpu, name) is not None
        ]
        rows = session.exec(
            select(Result, Workload)
            .join(Workload, col(Workload.id) == Result.workload_id)
            .where(Result.gpu_id == gpu.id, Result.status == "accepted")
            .order_by(col(Workload.slug), col(Result.id))
        ).all()
        groups: dict[tuple[str, str, int], list[float]] = {}
        for result, workload in rows:
            key = (f"{workload.slug} {result.precision}", workload.unit, result.gpu_count)
            groups.setdefault(key, []).append(result.value)
        strips = [
            Strip(label if count == 1 else f"{label} x{count}", values, unit)
            for (label, unit, count), values in groups.items()
        ]
        prices = [
            PricePoint(p.observed_at, p.condition, p.usd, p.usd_per_hour, p.provider, p.source)
            for p in session.exec(
                select(Price).where(Price.gpu_id == gpu.id).order_by(col(Price.observed_at))
            ).all()
        ]
        by_condition: dict[str, list[tuple[date, float]]] = {}
        by_provider: dict[str, list[tuple[date, float]]] = {}
        for p in prices:
            if p.usd is not None:
                by_condition.setdefault(p.condition, []).append((p.observed_at, p.usd))
            if p.usd_per_hour is not None:
                by_provider.setdefault(p.provider or "cloud", []).append(
                    (p.observed_at, p.usd_per_hour)
                )
        calibrations = list(
            session.exec(
                select(Calibration)
                .where(Calibration.gpu_id == gpu.id)
                .order_by(col(Calibration.created_at).desc())
                .limit(50)
            ).all()
        )
        session.expunge_all()
    return GpuPage(
        gpu=gpu,
        specs=specs,
        results_chart=strip_chart(f"Measured results of the {gpu.name}", strips),
        result_counts=[(s.label, len(s.values)) for s in strips],
        price_chart=line_chart(
            f"Price of the {gpu.name} over time (USD per card)",
            [Series(c, pts) for c, pts in sorted(by_condition.items())],
            "USD",
        ),
        cloud_chart=line_chart(
            f"Cloud price of the {gpu.name} over time (USD per GPU-hour)",
            [Series(c, pts) for c, pts in sorted(by_provider.items())],
            "USD/h",
        ),
        prices=prices[-40:][::-1],
        calibrations=calibrations,
    )
