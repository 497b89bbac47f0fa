"""open_record_store(url): pick and build a backend from a URL."""

from __future__ import annotations

from collections.abc import Sequence

from memstack.clock import Clock
from memstack.errors import ConfigError
from memstack.storage.base import RecordStore

__all__ = ["open_record_store"]


def open_record_store(
    url: str,
    *,
    clock: Clock | None = None,
    read_urls: Sequence[str] = (),
    max_lag_s: float | None = None,
) -> RecordStore:
    """A store for ``url``; call ``setup()`` on it before use.

    - ``memory://``: ``InMemoryRecordStore``
    - ``sqlite:///relative.db``, ``sqlite:////absolute.db``, or a bare file path:
      ``SQLiteRecordStore``
    - ``postgresql://...`` or ``postgres://...``: ``PostgresRecordStore`` (needs the
      ``postgres`` extra), its reads on the hot standbys ``read_urls`` when given, those
      lagging past ``max_lag_s`` (default ``postgres.MAX_REPLICA_LAG_S``) skipped
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(
            "the store URL is empty; use memory://, sqlite:///file.db or postgresql://..."
        )
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if read_urls and scheme not in ("postgresql", "postgres"):
        raise ConfigError(
            "read URLs (--postgres-read-url) are hot standbys of a PostgreSQL primary; "
            "give the primary with --postgres-url, or drop them."
        )
    if scheme == "memory":
        from memstack.storage.memory import InMemoryRecordStore

        return InMemoryRecordStore.from_url(url, clock=clock)
    if scheme == "sqlite":
        from memstack.storage.sqlite import SQLiteRecordStore

        return SQLiteRecordStore.from_url(url, clock=clock)
    if scheme == "":
        from memstack.storage.sqlite import SQLiteRecordStore

        return SQLiteRecordStore(url, clock=clock)
    if scheme in ("postgresql", "postgres"):
        from memstack.storage.postgres import MAX_REPLICA_LAG_S, PostgresRecordStore

        lag = MAX_REPLICA_LAG_S if max_lag_s is None else max_lag_s
        return PostgresRecordStore.from_url(url, clock=clock, read_urls=read_urls, max_lag_s=lag)
    raise ConfigError(
        f"unknown store URL scheme {scheme!r} in {url!r}; "
        "use memory://, sqlite:///path/to/file.db or postgresql://user@host/db."
    )
