"""The one wiring point: every service the server, MCP, the CLI and the benchmarks use,
opened from settings, and closed."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from memstack.clock import Clock, SystemClock
from memstack.embeddings import (
    BatchingEmbedder,
    CachedEmbedder,
    Embedder,
    LocalEmbedder,
    resolve_embedder,
)
from memstack.embeddings.cores import CoreSplit, split_cores, usable_cores
from memstack.longterm.memory import DEFAULT_MAX_ITEMS
from memstack.providers.base import ChatModel
from memstack.providers.resolve import resolve_model
from memstack.service.api_keys import ApiKeys
from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MemoryService
from memstack.service.stm import InProcessTier, ShortTermTier
from memstack.service.users import UserMemories
from memstack.storage import RecordStore, open_record_store

if TYPE_CHECKING:
    from memstack.settings import ServerSettings

__all__ = [
    "REMOTE_LANES",
    "Services",
    "extraction_model",
    "model_lanes",
    "open_records",
    "open_services",
    "services_from_settings",
]

REMOTE_LANES: Final = 8
"""Calls of a remote embedding provider in flight at once: they wait on the network, not
on this machine's cores, and each takes every text queued while the others ran."""


@dataclass(kw_only=True)
class Services:
    records: RecordStore
    short_term: ShortTermTier
    embedder: Embedder
    memories: MemoryService
    knowledge: KnowledgeBase
    keys: ApiKeys
    cores: CoreSplit | None = None
    """The cores the local model's calls are pinned to and those left to everything
    else (``open_services(pin_cores=True)``); None when nothing is pinned. The caller
    that asked for it moves its threads onto ``cores.requests`` (``cores.pin_threads``)."""
    batching: BatchingEmbedder | None = None
    """The lane threads that make the model's calls, stopped by ``close``; None when an
    embedder was given."""
    user_memories: UserMemories | None = None
    """What ``users`` answers with; None: users' memory over ``records`` and
    ``embedder``, off unless a key has the ``long_term`` right, with no extraction."""

    @property
    def users(self) -> UserMemories:
        """Every tenant's users' long-term memory (``service.users``)."""
        if self.user_memories is None:
            self.user_memories = UserMemories(records=self.records, embedder=self.embedder)
        return self.user_memories

    def close(self) -> None:
        if self.batching is not None:
            self.batching.close()
        self.short_term.close()
        self.records.close()


def open_records(
    url: str,
    *,
    clock: Clock | None = None,
    read_urls: Sequence[str] = (),
    max_lag_s: float | None = None,
) -> RecordStore:
    """The store of ``url`` (its reads on the PostgreSQL hot standbys ``read_urls``), set up."""
    records = open_record_store(url, clock=clock, read_urls=read_urls, max_lag_s=max_lag_s)
    records.setup()
    return records


def open_services(
    *,
    store_url: str,
    redis_url: str | None,
    redis_cluster: bool = False,
    read_urls: Sequence[str] = (),
    max_lag_s: float | None = None,
    embedder: Embedder | None = None,
    embedding_settings: object = None,
    stm_max_entries: int = 20,
    ltm_max_entries: int = 200,
    clock: Clock | None = None,
    pin_cores: bool = False,
    extraction_provider: ChatModel | None = None,
    extraction_model: str | None = None,
    memory_enabled: bool | None = None,
    memory_max_items: int = DEFAULT_MAX_ITEMS,
) -> Services:
    """Every service over one store. The model's calls are made by ``model_lanes`` lane
    threads that take whatever texts queued meanwhile (``BatchingEmbedder``); ``pin_cores``
    gives the local model's calls cores of their own and a spill lane (``embeddings.cores``),
    for ``memstack serve --pin-cores`` alone on its cores. ``memory_enabled`` switches the
    users' memory (``UserMemories``) on or off for every key; None: each key's right.
    ``read_urls``: hot standbys of the PostgreSQL ``store_url`` for reads, passed over
    past ``max_lag_s`` of replay lag."""
    clock = clock or SystemClock()
    cores: CoreSplit | None = None
    batching: BatchingEmbedder | None = None
    records = open_records(store_url, clock=clock, read_urls=read_urls, max_lag_s=max_lag_s)
    try:
        short_term = _short_term(redis_url, stm_max_entries, cluster=redis_cluster)
        if embedder is None:
            # Concurrent requests share model calls, and repeated queries skip the model.
            batching, cores = _batched_model(embedding_settings, pin_cores=pin_cores)
            embedder = CachedEmbedder(batching)
    except BaseException:
        records.close()
        raise
    knowledge = KnowledgeBase(records=records, embedder=embedder, clock=clock)
    return Services(
        records=records,
        short_term=short_term,
        embedder=embedder,
        memories=MemoryService(
            records=records,
            embedder=embedder,
            short_term=short_term,
            ltm_max_entries=ltm_max_entries,
            clock=clock,
            knowledge=knowledge,
        ),
        knowledge=knowledge,
        keys=ApiKeys(records, clock=clock),
        cores=cores,
        batching=batching,
        user_memories=UserMemories(
            records=records,
            embedder=embedder,
            extraction_provider=extraction_provider,
            extraction_model=extraction_model,
            memory_enabled=memory_enabled,
            max_items=memory_max_items,
            clock=clock,
        ),
    )


def _short_term(redis_url: str | None, max_entries: int, *, cluster: bool) -> ShortTermTier:
    """The short-term tier: in Redis (a Redis Cluster with ``cluster``) when ``redis_url``
    is given, else in process."""
    if redis_url:
        from memstack.service.stm_redis import RedisTier

        return RedisTier.from_url(redis_url, max_entries=max_entries, cluster=cluster)
    return InProcessTier(max_entries=max_entries)


def _batched_model(
    embedding_settings: object, *, pin_cores: bool
) -> tuple[BatchingEmbedder, CoreSplit | None]:
    """The model ``embedding_settings`` name (defaults when not ``EmbeddingSettings``),
    its calls made by ``model_lanes`` lane threads; with ``pin_cores``, the local model's
    lanes on cores of their own and a spill lane on the others, and that split (None:
    nothing pinned)."""
    from memstack.embeddings import EmbeddingSettings

    settings = (
        embedding_settings
        if isinstance(embedding_settings, EmbeddingSettings)
        else EmbeddingSettings()
    )
    model = resolve_embedder(settings)
    lanes = model_lanes(model)
    cores = split_cores(lanes) if pin_cores and isinstance(model, LocalEmbedder) else None
    batching = BatchingEmbedder(
        model,
        max_running=lanes,
        cores=cores.model if cores else None,
        spill_cores=cores.requests if cores else None,
    )
    return batching, cores


def services_from_settings(
    settings: ServerSettings, *, env: Mapping[str, str] | None = None
) -> Services:
    """The services ``memstack serve`` (and each of its workers) runs on; the extraction
    model ``settings.llm`` names reads its keys from ``env`` (default ``os.environ``)."""
    provider, model = extraction_model(settings, os.environ if env is None else env)
    return open_services(
        extraction_provider=provider,
        extraction_model=model,
        memory_enabled=settings.memory_enabled,
        memory_max_items=settings.memory_max_items,
        store_url=settings.store_url,
        read_urls=settings.postgres_read_urls,
        max_lag_s=settings.postgres_max_lag_s,
        redis_url=settings.redis_url,
        redis_cluster=settings.redis_cluster,
        embedding_settings=settings.embedding,
        stm_max_entries=settings.stm_max_entries,
        ltm_max_entries=settings.ltm_max_entries,
        pin_cores=settings.pin_cores,
    )


def extraction_model(
    settings: ServerSettings, env: Mapping[str, str]
) -> tuple[ChatModel | None, str | None]:
    """The provider and model of ``--llm PROVIDER:MODEL`` (``MEMSTACK_LLM``), with the
    keys of ``env``; ``(None, None)`` when none is set."""
    if not settings.llm:
        return None, None
    provider, model = resolve_model(settings.llm, env=env)
    return provider, model


def model_lanes(model: Embedder, cores: int | None = None) -> int:
    """How many calls of ``model`` the server runs at once: for the local model, one per
    two of the ``cores`` it may use (by default those this process may run on, as
    ``cores.split_cores`` counts them), at least one; for a remote one, ``REMOTE_LANES``.

    The local model computes on this machine's cores, and a small call costs more per
    text than a large one. With fewer lanes than cores, texts that arrive while a call
    runs wait and go in the next call together, so batches grow with the load and the
    other cores are left to the request threads."""
    if not isinstance(model, LocalEmbedder):
        return REMOTE_LANES
    return max(1, (cores or usable_cores()) // 2)
