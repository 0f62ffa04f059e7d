"""The write path for results: the gate, the group statistics, idempotency."""
