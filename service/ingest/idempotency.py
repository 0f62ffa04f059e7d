"""Idempotency-Key for POSTs (IETF draft-ietf-httpapi-idempotency-key-header semantics).

Keys are scoped to the submitting API key. The record is claimed in the same transaction as
the write it protects, so a retry either finds the finished answer or waits for it; the same
key with another body is refused with 422.
"""

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from service.models import IdempotencyRecord


def fingerprint(payload: Any) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class KeyReused(Exception):
    """The Idempotency-Key was used before with a different request body."""


@dataclass(frozen=True)
class Replay:
    status_code: int
    body: Any


def find(session: Session, api_key_id: int, key: str) -> IdempotencyRecord | None:
    query = select(IdempotencyRecord).where(
        IdempotencyRecord.api_key_id == api_key_id, IdempotencyRecord.key == key
    )
    return session.exec(query).first()


def replay_of(record: IdempotencyRecord, request_sha256: str) -> Replay:
    if record.request_sha256 != request_sha256:
        raise KeyReused()
    return Replay(record.status_code, record.response)


def claim(
    session: Session, api_key_id: int, key: str, request_sha256: str
) -> IdempotencyRecord | Replay:
    """Reserve `key` in the current transaction, or return the stored answer of its first use.

    On a concurrent first use, the database's unique constraint makes the loser wait for the
    winner's commit; the loser then rolls back and replays the winner's answer.
    """
    existing = find(session, api_key_id, key)
    if existing is not None:
        return replay_of(existing, request_sha256)
    record = IdempotencyRecord(
        api_key_id=api_key_id, key=key, request_sha256=request_sha256, status_code=0, response={}
    )
    session.add(record)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        winner = find(session, api_key_id, key)
        if winner is None:  # pragma: no cover - the winner rolled back; let the client retry
            raise
        return replay_of(winner, request_sha256)
    return record
