"""GET /model/accuracy: how well the estimator predicts GPUs it has not seen."""

import math
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from service.domain.evaluation import WorkloadAccuracy
from service.read_model import accuracy as acc


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


class WorkloadAccuracyRead(BaseModel):
    workload: str = Field(description="`slug@precision`, as the model names it.")
    gpus: int = Field(description="Measured GPUs, each held out in turn.")
    predicted: int = Field(description="Of those, how many the model gave a number for.")
    mdape: float | None = Field(description="Median absolute percentage error (0.08 = 8%).")
    p90_ape: float | None = Field(description="90th percentile absolute percentage error.")
    coverage: float | None = Field(
        description="Share of held-out results inside their 80% band (nominal 0.8)."
    )
    spearman_perf_per_dollar: float | None = Field(
        description="Spearman's rho of predicted vs measured perf per dollar over held-out GPUs "
        "with a current price; null with fewer than 3."
    )
    priced: int = Field(description="Held-out GPUs with a current price.")
    spearman_throughput: float | None = Field(
        description="Spearman's rho of predicted vs measured throughput."
    )
    meets_targets: bool | None = Field(
        description="MdAPE <= 10%, p90 <= 25%, coverage 70-90%, perf-per-dollar rho >= 0.9 "
        "(where 3+ held-out GPUs are priced); null with fewer than 6 measured GPUs."
    )

    @classmethod
    def of(cls, row: WorkloadAccuracy) -> "WorkloadAccuracyRead":
        return cls(
            workload=row.workload,
            gpus=row.n_gpus,
            predicted=row.n_predicted,
            mdape=_finite(row.mdape),
            p90_ape=_finite(row.p90_ape),
            coverage=_finite(row.coverage),
            spearman_perf_per_dollar=_finite(row.spearman_ppd),
            priced=row.n_priced,
            spearman_throughput=_finite(row.spearman_throughput),
            meets_targets=acc.meets_targets(row),
        )


class AccuracyRead(BaseModel):
    status: Literal["ready", "computing"] = Field(
        description="`computing`: no report yet; ask again after Retry-After seconds."
    )
    mode: Literal["gpu"] = Field(
        "gpu",
        description="`gpu`: each GPU held out of every workload at once, as for a card nobody "
        "has measured (`gpu-advisor evaluate --mode cell` holds out single results).",
    )
    band: float = Field(0.8, description="Nominal coverage of the bands scored.")
    min_gpus: int = Field(acc.DEFAULT_MIN_GPUS, description="Workloads with fewer are skipped.")
    data_version: str | None = Field(description="The data the report describes.")
    current_data_version: str = Field(description="The data the service answers from now.")
    stale: bool = Field(description="The data changed since; a new report is being computed.")
    computed_at: datetime | None = None
    seconds: float | None = Field(None, description="How long the evaluation took.")
    observations: int | None = Field(None, description="(GPU, workload) medians in the data.")
    workloads: list[WorkloadAccuracyRead] = Field(default_factory=list)

    @classmethod
    def of(cls, served: acc.Served) -> "AccuracyRead":
        r = served.report
        if r is None:
            return cls(
                status="computing",
                data_version=None,
                current_data_version=served.current_version,
                stale=False,
            )
        return cls(
            status="ready",
            min_gpus=r.min_gpus,
            data_version=r.data_version,
            current_data_version=served.current_version,
            stale=served.stale,
            computed_at=r.computed_at,
            seconds=r.seconds,
            observations=r.n_observations,
            workloads=[WorkloadAccuracyRead.of(w) for w in r.workloads],
        )
