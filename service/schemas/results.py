"""Benchmark results: what submitters send and what the API answers about them."""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from service.domain.vocabulary import Precision
from service.schemas.common import MIN_QUANTITY, Input, Slug, finite

MAX_BATCH = 1000
REASON_COLUMN = 256
ADMIN_REASON_PREFIX = "admin: "
ResultStatus = Literal["accepted", "outlier", "rejected", "verified"]
RESULT_STATUSES: tuple[str, ...] = ("accepted", "outlier", "rejected", "verified")
ShortText = Annotated[str, Field(min_length=1, max_length=64)]


class ResultIn(Input):
    """One benchmark result: `value` units/s (the workload's unit) on `gpu_count` GPUs."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    gpu: Slug
    workload: Slug
    value: Annotated[float, Field(ge=MIN_QUANTITY, lt=1e9, strict=True), AfterValidator(finite)]
    precision: Precision
    batch_size: Annotated[int, Field(ge=1, le=1_000_000, strict=True)] | None = None
    gpu_count: Annotated[int, Field(ge=1, le=64, strict=True)] = 1
    framework: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_.+-]+$")
    framework_version: ShortText | None = None
    driver: ShortText | None = None
    cuda: Annotated[str, Field(min_length=1, max_length=32)] | None = None
    notes: Annotated[str, Field(max_length=2000)] | None = None

    @field_validator("framework")
    @classmethod
    def _lowercase(cls, value: str) -> str:
        return value.lower()


class ResultBatchIn(Input):
    model_config = ConfigDict(extra="forbid")

    results: list[ResultIn] = Field(min_length=1, max_length=MAX_BATCH)


class ResultOutcome(BaseModel):
    id: int
    status: ResultStatus
    reason: str | None


class ResultBatchOut(BaseModel):
    results: list[ResultOutcome]


class ResultRead(BaseModel):
    id: int
    gpu: str
    workload: str
    value: float
    precision: Precision
    batch_size: int | None
    gpu_count: int
    framework: str
    framework_version: str | None
    driver: str | None
    cuda: str | None
    notes: str | None
    source: str | None = Field(
        description="Where the value comes from: the table or URL it was copied from, with the "
        "measurement's date where the source gives one (the shipped corpus), or what the "
        "submitter stated."
    )
    importer: str | None = Field(description="How it was posted: json, llama-bench, ...")
    device_string: str | None = Field(description="The device as the tool reported it.")
    system: str | None = Field(description="Vendor, system or node, as reported.")
    status: ResultStatus
    reason: str | None
    status_locked: bool
    submitter: str | None = Field(description="Public prefix of the submitting API key.")
    created_at: datetime
    updated_at: datetime


class ResultPatch(Input):
    model_config = ConfigDict(extra="forbid")

    status: ResultStatus
    # Stored as "admin: " + reason in a 256-character column (result.reason, audit.reason).
    reason: str = Field(min_length=1, max_length=REASON_COLUMN - len(ADMIN_REASON_PREFIX))
