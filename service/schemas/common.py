"""Shared pieces of the API contract: text checks, number types, pages and problems."""

import math
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, Field, field_validator

Format = Literal["json", "csv"]  # ?format= of the read routes that can answer CSV
SLUG_PATTERN = r"^[a-z0-9]+([-_][a-z0-9]+)*$"  # "_" for weight formats: llama-3-8b-q4_k_m-tg512
Slug = Annotated[str, Field(min_length=2, max_length=64, pattern=SLUG_PATTERN)]


def finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number (no NaN or infinity)")
    return value


# Physically meaningful bounds for every measured or specified quantity (GB, GB/s, TFLOPS, W,
# units/s, USD): at least 1e-6 and below 1e12. Between those, logs, ratios and products of two
# such numbers stay far from float underflow and overflow, so no stored value can make the
# estimator's log-space arithmetic fail (a subnormal 5e-324 once did).
MIN_QUANTITY = 1e-6
MAX_QUANTITY = 1e12
Positive = Annotated[float, Field(ge=MIN_QUANTITY, lt=MAX_QUANTITY), AfterValidator(finite)]
NonNegative = Annotated[float, Field(ge=0, lt=MAX_QUANTITY), AfterValidator(finite)]
Finite = Annotated[float, Field(ge=0, lt=1e9), AfterValidator(finite)]

T = TypeVar("T")


def _check_text(value: Any) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("NUL characters are not allowed")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("lone surrogate characters are not allowed") from None
    elif isinstance(value, list):
        for item in value:
            _check_text(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check_text(item)


class Input(BaseModel):
    """Base of every request body: text must be storable as-is in any database (Postgres
    refuses NUL in text; UTF-8 cannot encode a lone surrogate), so such input is a 422."""

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        _check_text(value)
        return value


class Page(BaseModel, Generic[T]):
    """A page of a list; pass `next_cursor` back as `cursor` for the next page (null at the end)."""

    items: list[T]
    next_cursor: str | None = None


class Problem(BaseModel):
    """Error body for 4xx/5xx answers that are not request-validation errors."""

    detail: str
    suggestions: list[str] = Field(default_factory=list)


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    database: str
    revision: str | None
    head: str | None
