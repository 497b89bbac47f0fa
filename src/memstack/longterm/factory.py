"""create_default_long_term_memory(): opt-in wiring of long-term memory."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from memstack.clock import Clock
from memstack.embeddings import Embedder, resolve_embedder
from memstack.errors import ConfigError
from memstack.longterm.collection import Collection
from memstack.longterm.memory import LongTermMemory
from memstack.longterm.settings import LongTermSettings
from memstack.providers.base import ChatModel
from memstack.storage import RecordStore, open_record_store

__all__ = ["create_default_long_term_memory"]

_log = logging.getLogger("memstack.longterm")


def create_default_long_term_memory(
    *,
    user_id: str,
    namespace: str = "chat",
    workspace_id: str | None = None,
    extraction_provider: ChatModel | None = None,
    extraction_model: str | None = None,
    enabled: bool | None = None,
    env: Mapping[str, str] | None = None,
    store: RecordStore | None = None,
    embedder: Embedder | None = None,
    clock: Clock | None = None,
) -> LongTermMemory | None:
    """A ready LongTermMemory for ``user_id``, or ``None`` when memory is off.

    Returns ``None`` when the caller vetoes (``enabled=False``), when the operator
    vetoes (``MEMSTACK_MEMORY_ENABLED`` is 0/false), when nobody opted in (``enabled``
    is not True and the variable is not truthy), or when no embedding model can be
    resolved. With no embedding settings at all, the local model is used.

    ``env`` defaults to ``os.environ``; ``store`` and ``embedder`` override what the
    settings would open.
    """
    settings = LongTermSettings.from_env(os.environ if env is None else env)
    if enabled is False or settings.enabled is False:
        return None
    if enabled is not True and settings.enabled is not True:
        return None
    collection = Collection(user_id=user_id, namespace=namespace, workspace_id=workspace_id)
    if embedder is None:
        try:
            embedder = resolve_embedder(settings.embedding)
        except ConfigError as exc:
            _log.warning("long-term memory is off: no embedding model could be resolved: %s", exc)
            return None
    owned = store is None
    if store is None:
        store = open_record_store(settings.store_url())
        store.setup()
    return LongTermMemory(
        collection=collection,
        store=store,
        embedder=embedder,
        extraction_provider=extraction_provider,
        extraction_model=extraction_model,
        max_items=settings.max_items,
        clock=clock,
        owns_store=owned,
    )
