"""Per-process cache of snapshots (see SnapshotCache)."""

import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

T = TypeVar("T")


class SnapshotCache:
    """Per-process cache of snapshots, made stale by any local write or after `ttl_s`. A key
    decides what its entry is: a fixed workload's Snapshot (SnapshotKey) or a language-model
    ask's LlmData (llm.LlmDataKey).

    Rebuilds are single-flight: when an entry is stale, one caller rebuilds it while the others
    keep serving the stale snapshot (for about one rebuild, ~10 ms), so a stream of writes does
    not make every reader rebuild. A caller that finds no snapshot at all waits for the one
    rebuild instead of starting its own.
    """

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._generation = 0
        self._entries: dict[Hashable, tuple[int, float, object]] = {}
        # Build locks exist only while someone builds or waits for that key (reference
        # counted, removed at zero): keys come from client input, so none may stay behind.
        self._building: dict[Hashable, tuple[threading.Lock, int]] = {}

    def invalidate(self) -> None:
        with self._lock:
            self._generation += 1

    def _lookup(self, key: Hashable) -> tuple[object | None, bool]:
        """(snapshot of the current generation or None, whether it is still fresh)."""
        with self._lock:
            entry = self._entries.get(key)
            generation = self._generation
        if entry is None:
            return None, False
        return entry[2], entry[0] == generation and time.monotonic() - entry[1] < self.ttl_s

    def fresh(self, key: Hashable) -> object | None:
        snapshot, is_fresh = self._lookup(key)
        return snapshot if is_fresh else None

    def is_current(self, key: Hashable, snapshot: object) -> bool:
        """Whether `snapshot` is what this cache serves, fresh, for `key` (answers computed
        from it are then still right)."""
        return self.fresh(key) is snapshot

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The cached snapshot, rebuilding it (once, whoever asks) when needed. Blocking. The
        entry under `key` was built by a `build` of the same type: the key decides the type."""
        snapshot, is_fresh = self._lookup(key)
        if snapshot is not None and is_fresh:
            return cast(T, snapshot)
        key_lock = self._enter(key)
        try:
            if snapshot is not None and not key_lock.acquire(blocking=False):
                return cast(T, snapshot)  # expired, and someone is already rebuilding it
            if snapshot is None:
                key_lock.acquire()
            return self._build_locked(key, key_lock, build)
        finally:
            self._leave(key)

    def _enter(self, key: Hashable) -> threading.Lock:
        with self._lock:
            lock, refs = self._building.get(key, (threading.Lock(), 0))
            self._building[key] = (lock, refs + 1)
            return lock

    def _leave(self, key: Hashable) -> None:
        with self._lock:
            lock, refs = self._building[key]
            if refs <= 1:
                del self._building[key]
            else:
                self._building[key] = (lock, refs - 1)

    def _drop_earlier_days(self, key: Hashable) -> None:
        """Keys carry the day their data was read for (SnapshotKey, llm.LlmDataKey): once a
        later day's entry is built, no request asks for an earlier day's again, so those go
        (without this a long-running process kept every day's snapshots). Under self._lock."""
        day = getattr(key, "day", None)
        if day is None:
            return
        for old in [k for k in self._entries if getattr(k, "day", day) < day]:
            del self._entries[old]

    @property
    def pending_builds(self) -> int:
        """Keys with a build lock right now (0 when idle: nothing accumulates)."""
        with self._lock:
            return len(self._building)

    def _build_locked(self, key: Hashable, key_lock: threading.Lock, build: Callable[[], T]) -> T:
        """Rebuild under the key's lock (held on entry, released here)."""
        try:
            again, is_fresh = self._lookup(key)
            if again is not None and is_fresh:
                return cast(T, again)
            with self._lock:
                generation = self._generation
            built = build()
            with self._lock:
                if self._generation == generation:
                    self._entries[key] = (generation, time.monotonic(), built)
                self._drop_earlier_days(key)
            return built
        finally:
            key_lock.release()
