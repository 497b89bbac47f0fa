"""Opening the store and embedder a benchmark runs on."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from memstack.embeddings import Embedder, EmbeddingSettings, HashEmbedder, LocalEmbedder
from memstack.errors import ConfigError
from memstack.storage import InMemoryRecordStore, RecordStore, SQLiteRecordStore

__all__ = ["open_bench_embedder", "open_bench_store"]


def open_bench_embedder(kind: str, env: Mapping[str, str] | None = None) -> Embedder:
    """The test embedder (``hash``), or the local model: all-MiniLM-L6-v2, or the model
    folder ``MEMSTACK_LOCAL_MODEL`` of ``env`` (default: this process's environment)
    names, so a benchmark measures a model brought by its user the same way."""
    if kind == "hash":
        return HashEmbedder()
    folder = EmbeddingSettings.from_env(os.environ if env is None else env).local_model
    return LocalEmbedder(folder=folder)


@contextmanager
def open_bench_store(
    kind: str, *, db: Path | None = None, postgres_url: str | None = None
) -> Iterator[RecordStore]:
    """A set-up store of ``kind``, closed (and a temporary SQLite file removed) after."""
    with tempfile.TemporaryDirectory(prefix="memstack-bench-") as tmp:
        store: RecordStore
        if kind == "memory":
            store = InMemoryRecordStore()
        elif kind == "sqlite":
            store = SQLiteRecordStore(db or Path(tmp) / "bench.db")
        elif kind == "postgres":
            if not postgres_url:
                raise ConfigError(
                    "--store postgres needs --postgres-url (or MEMSTACK_POSTGRES_URL)."
                )
            from memstack.storage.postgres import PostgresRecordStore

            store = PostgresRecordStore.from_url(postgres_url)
        else:
            raise ConfigError(f"unknown store {kind!r}; use sqlite, postgres or memory.")
        store.setup()
        try:
            yield store
        finally:
            store.close()
