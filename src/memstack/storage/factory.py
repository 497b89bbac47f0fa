"""open_record_store(url): pick and build a backend from a URL."""

from __future__ import annotations

from memstack.clock import Clock
from memstack.errors import ConfigError
from memstack.storage.base import RecordStore

__all__ = ["open_record_store"]


def open_record_store(url: str, *, clock: Clock | None = None) -> RecordStore:
    """A store for ``url``; call ``setup()`` on it before use.

    - ``memory://``: ``InMemoryRecordStore``
    - ``sqlite:///relative.db``, ``sqlite:////absolute.db``, or a bare file path:
      ``SQLiteRecordStore``
    - ``postgresql://...`` or ``postgres://...``: ``PostgresRecordStore`` (needs the
      ``postgres`` extra)
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(
            "the store URL is empty; use memory://, sqlite:///file.db or postgresql://..."
        )
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
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
        from memstack.storage.postgres import PostgresRecordStore

        return PostgresRecordStore.from_url(url, clock=clock)
    raise ConfigError(
        f"unknown store URL scheme {scheme!r} in {url!r}; "
        "use memory://, sqlite:///path/to/file.db or postgresql://user@host/db."
    )
