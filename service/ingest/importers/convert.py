"""One entry point for API and CLI: raw tool output -> (ResultIn items, provenance)."""

from typing import Any

from sqlmodel import Session

from service.ingest.importers import lambda_csv, llama_bench, mlperf
from service.ingest.importers.base import ImportFailed
from service.ingest.importers.resolve import resolve
from service.schemas.results import MAX_BATCH, ResultIn

PARSERS = {
    "llama-bench": llama_bench.convert,
    "lambda-csv": lambda_csv.convert,
    "mlperf": mlperf.convert,
}


def read_import(
    session: Session, fmt: str, text: str
) -> tuple[list[ResultIn], list[dict[str, Any]]]:
    rows = PARSERS[fmt](text)
    if not rows:
        raise ImportFailed.one(("body",), f"no results in the {fmt} output", "empty_import")
    if len(rows) > MAX_BATCH:
        raise ImportFailed.one(
            ("body",), f"{len(rows)} results; at most {MAX_BATCH} per request", "too_many"
        )
    return resolve(session, rows, fmt)
