"""CSV answers for procurement tools: `?format=csv` or `Accept: text/csv`.

Nested objects are flattened with `_` (price.usd -> price_usd); lists are joined with `|`.
Column names are stable and listed in the README.
"""

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel

from service.read_model.answer_cache import accept_asks_for_csv
from service.schemas.common import Format

CSV_MEDIA_TYPE = "text/csv; charset=utf-8"


def wants_csv(request: Request, format: Format | None) -> bool:
    if format is not None:
        return format == "csv"
    return accept_asks_for_csv(request.scope)


def flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}_"))
        elif isinstance(value, list):
            out[name] = "|".join(str(v) for v in value)
        else:
            out[name] = value
    return out


def header_value(text: str) -> str:
    """`text` as an HTTP header value: control characters (a CR/LF would end the header) as
    spaces, and what Latin-1 cannot carry as backslash escapes (a price source is free text: an
    en dash in one made the CSV answer a 500)."""
    flat = "".join(" " if ord(ch) < 32 or ord(ch) == 127 else ch for ch in text)
    return flat.encode("ascii", "backslashreplace").decode("ascii")


def csv_response(
    rows: Iterable[Mapping[str, Any]],
    columns: Sequence[str],
    headers: dict[str, str] | None = None,
    answer: Mapping[str, Any] | None = None,
) -> Response:
    """`rows` as CSV; `answer`'s fields (the workload and precision a JSON answer states once)
    fill each row's empty cell of that name: a saved file has no answer around its rows, and
    a ranking at fp16 could not be told from one at fp32."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        flat = flatten(row)
        for name, value in (answer or {}).items():
            if flat.get(name) is None:
                flat[name] = value
        writer.writerow(flat)
    return Response(buffer.getvalue(), media_type=CSV_MEDIA_TYPE, headers=headers)


def columns_for(model: type[BaseModel], prefix: str = "") -> list[str]:
    """CSV column names of a response model: its fields, nested models flattened with `_`."""
    columns: list[str] = []
    for name, info in model.model_fields.items():
        nested = _nested_model(info.annotation)
        if nested is not None:
            columns += columns_for(nested, f"{prefix}{name}_")
        else:
            columns.append(f"{prefix}{name}")
    return columns


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    candidates = get_args(annotation) or (annotation,)
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None
