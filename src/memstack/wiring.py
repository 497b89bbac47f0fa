"""The one wiring point: every service the server, MCP, the CLI and the benchmarks use,
opened from settings, and closed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstack.clock import Clock, SystemClock
from memstack.embeddings import (
    BatchingEmbedder,
    CachedEmbedder,
    Embedder,
    LocalEmbedder,
    resolve_embedder,
)
from memstack.embeddings.cores import CoreSplit, split_cores, usable_cores
from memstack.embeddings.lanes import LaneEmbedder
from memstack.service.api_keys import ApiKeys
from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MemoryService
from memstack.service.stm import InProcessTier, ShortTermTier
from memstack.storage import RecordStore, open_record_store

if TYPE_CHECKING:
    from memstack.settings import ServerSettings

__all__ = ["Services", "model_lanes", "open_records", "open_services", "services_from_settings"]


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
    else (``open_services(pin_model=True)``); None when nothing is pinned. The caller
    that asked for it moves its threads onto ``cores.requests`` (``cores.pin_threads``)."""
    lanes: LaneEmbedder | None = None
    """The threads that make the pinned model's calls; None when nothing is pinned."""

    def close(self) -> None:
        if self.lanes is not None:
            self.lanes.close()
        self.short_term.close()
        self.records.close()


def open_records(url: str, *, clock: Clock | None = None) -> RecordStore:
    records = open_record_store(url, clock=clock)
    records.setup()
    return records


def open_services(
    *,
    store_url: str,
    redis_url: str | None,
    embedder: Embedder | None = None,
    embedding_settings: object = None,
    stm_max_entries: int = 20,
    ltm_max_entries: int = 200,
    clock: Clock | None = None,
    pin_model: bool = False,
) -> Services:
    """Every service over one store. ``pin_model`` gives the local model's calls cores of
    their own (``memstack.embeddings.cores``), for a server that is the only process on its
    cores: ``memstack serve`` with one worker."""
    from memstack.embeddings import EmbeddingSettings

    clock = clock or SystemClock()
    cores: CoreSplit | None = None
    lane_embedder: LaneEmbedder | None = None
    records = open_records(store_url, clock=clock)
    try:
        short_term: ShortTermTier
        if redis_url:
            from memstack.service.stm_redis import RedisTier

            short_term = RedisTier.from_url(redis_url, max_entries=stm_max_entries)
        else:
            short_term = InProcessTier(max_entries=stm_max_entries)
        if embedder is None:
            settings = (
                embedding_settings
                if isinstance(embedding_settings, EmbeddingSettings)
                else EmbeddingSettings()
            )
            # Concurrent requests share model calls, and repeated queries skip the model.
            model = resolve_embedder(settings)
            lanes = model_lanes(model)
            cores = split_cores(lanes) if pin_model and lanes is not None else None
            if cores is None or lanes is None:
                embedder = CachedEmbedder(BatchingEmbedder(model, max_running=lanes))
            else:  # the model's calls made by threads that stay on its cores
                lane_embedder = LaneEmbedder(
                    model, lanes=lanes, cores=cores.model, spill_cores=cores.requests
                )
                embedder = CachedEmbedder(lane_embedder)
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
        lanes=lane_embedder,
    )


def services_from_settings(settings: ServerSettings, *, pin_model: bool = False) -> Services:
    """The services ``memstack serve`` (and each of its workers) runs on."""
    return open_services(
        store_url=settings.store_url,
        redis_url=settings.redis_url,
        embedding_settings=settings.embedding,
        stm_max_entries=settings.stm_max_entries,
        ltm_max_entries=settings.ltm_max_entries,
        pin_model=pin_model,
    )


def model_lanes(model: Embedder, cores: int | None = None) -> int | None:
    """How many calls of ``model`` the server runs at once: for the local model, one per
    two of the ``cores`` it may use (by default those this process may run on, as
    ``cores.split_cores`` counts them), at least one; for a remote one, no limit.

    The local model computes on this machine's cores, and a small call costs more per
    text than a large one (measured on 2 cores: one short text 4.3-6.4 ms of CPU, in
    batches of 6 to 9 3.5-4.4 ms; more again on a core the request threads just used).
    With one lane on 2 cores, texts that arrive while a call runs wait and go in the
    next call together: in a ``memstack bench server`` run, calls went from 1.5 texts to
    6, and a text's share of their CPU from 8.4 ms to 6.1 ms; the other core is left to
    the request threads, and to a spill lane that embeds in their idle time (``lanes``).
    A remote model computes elsewhere: its calls wait on the network, and a limit would
    only queue them."""
    if not isinstance(model, LocalEmbedder):
        return None
    return max(1, (cores or usable_cores()) // 2)
