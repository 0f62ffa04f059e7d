"""Client side of POST /results for lab machines: read, validate locally, send in batches.

Each batch's Idempotency-Key is the SHA-256 of its content, so rerunning the same submission
(after a crash, or by hand) never stores a result twice. Network errors, 5xx and 429 are
retried with exponential backoff; 4xx other than 429 are final.
"""

import csv
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from service.schemas.results import MAX_BATCH, ResultIn

INT_FIELDS = {"batch_size", "gpu_count"}
FLOAT_FIELDS = {"value"}


class InvalidFile(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _coerce_csv_row(row: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, raw in row.items():
        if key is None or raw is None or raw.strip() == "":
            continue
        value = raw.strip()
        if key in INT_FIELDS:
            out[key] = int(value) if value.lstrip("-").isdigit() else value
        elif key in FLOAT_FIELDS:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
        else:
            out[key] = value
    return out


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a .json (a list, or {"results": [...]}) or a .csv file with a header line."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        return [_coerce_csv_row(row) for row in csv.DictReader(text.splitlines())]
    data = json.loads(text)
    if isinstance(data, dict) and "results" in data:
        data = data["results"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InvalidFile(['expected a list of results or {"results": [...]}'])
    return data


def validate_rows(rows: Sequence[Any]) -> list[ResultIn]:
    """Every row through the server's own schema; all problems reported at once."""
    problems: list[str] = []
    valid: list[ResultIn] = []
    for index, row in enumerate(rows):
        try:
            valid.append(ResultIn.model_validate(row))
        except ValidationError as exc:
            for error in exc.errors(include_url=False, include_input=False):
                where = ".".join(str(p) for p in error["loc"])
                problems.append(f"row {index}: {where}: {error['msg']}")
    if problems:
        raise InvalidFile(problems)
    return valid


def batches(items: Sequence[ResultIn], size: int = MAX_BATCH) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(items), size):
        yield [item.model_dump(exclude_none=True) for item in items[start : start + size]]


def batch_key(batch: list[dict[str, Any]]) -> str:
    canonical = json.dumps(batch, sort_keys=True, separators=(",", ":"))
    return "submit-" + hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class SubmitReport:
    statuses: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    retries: int = 0


def post_batch(
    client: httpx.Client,
    batch: list[dict[str, Any]],
    *,
    attempts: int = 6,
    backoff_s: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    report: SubmitReport | None = None,
) -> dict[str, Any]:
    """POST one batch, retrying transport errors, 5xx and 429 with exponential backoff."""
    headers = {"Idempotency-Key": batch_key(batch)}
    delay = backoff_s
    for attempt in range(1, attempts + 1):
        try:
            response = client.post("/results", json={"results": batch}, headers=headers)
        except httpx.TransportError:
            if attempt == attempts:
                raise
        else:
            if response.status_code < 500 and response.status_code != 429:
                response.raise_for_status()
                body: dict[str, Any] = response.json()
                return body
            if attempt == attempts:
                response.raise_for_status()
            retry_after = response.headers.get("Retry-After", "")
            if retry_after.isdigit():
                delay = max(delay, float(retry_after))
        if report is not None:
            report.retries += 1
        sleep(delay)
        delay = min(delay * 2, 30.0)
    raise AssertionError("unreachable")  # pragma: no cover


def submit(
    client: httpx.Client, items: Sequence[ResultIn], batch_size: int = MAX_BATCH, **kw: Any
) -> SubmitReport:
    report = SubmitReport()
    for batch in batches(items, batch_size):
        body = post_batch(client, batch, report=report, **kw)
        report.batches += 1
        for outcome in body["results"]:
            report.statuses[outcome["status"]] += 1
            if outcome.get("reason"):
                report.reasons[outcome["reason"].split("=")[0]] += 1
    return report
