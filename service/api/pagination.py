"""Opaque keyset cursors: the client passes `next_cursor` back as `cursor`."""

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sqlmodel import Session

from service.core.errors import InvalidInput

K = TypeVar("K", int, str)
R = TypeVar("R")
# A cursor carries a row id (a 32-bit integer column on both databases) or a slug/name key
# (text columns of at most 255 characters). Anything else could only fail in the database.
MAX_CURSOR_ID = 2**31 - 1
MAX_CURSOR_TEXT = 255
MAX_CURSOR_CHARS = 1024  # the encoded cursor itself


def encode_cursor(after: Any) -> str:
    raw = json.dumps({"after": after}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: type[K]) -> K | None:
    """The key to continue after, or None for the first page; a forged cursor is a 422."""
    if cursor is None:
        return None
    if len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidInput.one(("query", "cursor"), "invalid cursor", "value_error")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))["after"]
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        value = None
    if not isinstance(value, kind) or isinstance(value, bool) or not _storable(value):
        raise InvalidInput.one(("query", "cursor"), "invalid cursor", "value_error")
    return value


def _storable(value: int | str) -> bool:
    """Within the key column's range: ids in 0..2^31-1; text short, no NUL, valid UTF-8."""
    if isinstance(value, int):
        return 0 <= value <= MAX_CURSOR_ID
    if len(value) > MAX_CURSOR_TEXT or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def split_page(
    rows: Sequence[R], limit: int, key: Callable[[R], Any]
) -> tuple[list[R], str | None]:
    """Rows fetched with `limit + 1`: the page, and the cursor after it when there is more."""
    page = list(rows[:limit])
    return page, encode_cursor(key(page[-1])) if len(rows) > limit else None


def id_page(
    session: Session,
    query: Any,
    id_column: Any,
    cursor: str | None,
    limit: int,
    newest_first: bool = False,
) -> tuple[list[Any], str | None]:
    """One page of `query` (rows of entities, the first with the `id` in `id_column`) in id
    order, continuing after `cursor`; and the cursor after it when there is more."""
    after = decode_cursor(cursor, int)
    query = query.order_by(id_column.desc() if newest_first else id_column)
    if after is not None:
        query = query.where(id_column < after if newest_first else id_column > after)
    rows = session.exec(query.limit(limit + 1)).all()
    return split_page(rows, limit, key=lambda row: row[0].id)
