"""When a host needs a calibration run, and what state it is in: pure functions."""

from datetime import datetime, timedelta
from typing import Literal

DueReason = Literal["requested", "stack_changed", "never", "interval"]
HostState = Literal["pending", "healthy", "stale", "failing", "retired"]


def due_reason(
    now: datetime,
    last_calibration_at: datetime | None,
    interval_s: int,
    requested: bool,
    stack_changed: bool,
) -> DueReason | None:
    """Why a calibration is due now, or None. An admin's request wins, then a changed stack."""
    if requested:
        return "requested"
    if stack_changed:
        return "stack_changed"
    if last_calibration_at is None:
        return "never"
    if now - last_calibration_at >= timedelta(seconds=interval_s):
        return "interval"
    return None


def host_state(
    now: datetime,
    stored_state: str,
    last_seen_at: datetime | None,
    stale_after_s: int,
) -> HostState:
    """The state to show: failing/retired/pending are stored; stale is derived from silence."""
    if stored_state in ("failing", "retired"):
        return stored_state  # type: ignore[return-value]
    if last_seen_at is None:
        return "pending"
    if now - last_seen_at > timedelta(seconds=stale_after_s):
        return "stale"
    return "healthy" if stored_state == "healthy" else "pending"
