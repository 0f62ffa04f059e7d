"""A bounded get-or-compute memo for per-snapshot caches whose keys carry client input.

Snapshots (fixed workloads) and LlmData (language-model asks) keep what answers to different
budgets share: rows, cost accounts, fitting configurations. Their keys hold what the asker sent
(cost settings, frameworks, contexts), so a store cannot be allowed to grow without limit: a
store already holding `bound` keys is emptied before the next one is added. The whole store
goes with its snapshot when the data change.
"""

from collections.abc import Callable, Hashable
from typing import Any, TypeVar, cast

T = TypeVar("T")
_MISSING = object()


def bounded(store: dict[Any, Any], bound: int, key: Hashable, compute: Callable[[], T]) -> T:
    """`store[key]`, computed on a miss; a store already holding `bound` keys is emptied
    first."""
    found = store.get(key, _MISSING)
    if found is _MISSING:
        if len(store) >= bound:
            store.clear()
        found = store[key] = compute()
    return cast(T, found)
