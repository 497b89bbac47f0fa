"""The secret filter over a memory: every string it stores, its ids included.

One list of a memory's stored strings, so a write path added later (a store, an update,
a restore) cannot check fewer of them than the others: ``agent_id`` and ``session_id``
(its bucket and its session, kept as they are), ``key``, ``value``, ``metadata`` (keys
and values, at any depth) and ``provenance_detail``. The tenant comes from the API key,
not from the request.
"""

from __future__ import annotations

from memstack._json import JSON
from memstack.secrets import refuse_secrets
from memstack.service.types import Memory

__all__ = ["memory_fields", "refuse_memory_secrets"]


def memory_fields(memory: Memory) -> dict[str, JSON]:
    """The strings ``memory`` stores, by the field names a request gives them."""
    return {
        "agent_id": memory.agent_id,
        "session_id": memory.session_id,
        "key": memory.key,
        "value": memory.value,
        "metadata": memory.metadata,
        "provenance_detail": memory.provenance_detail,
    }


def refuse_memory_secrets(memory: Memory) -> None:
    """``InvalidInput`` naming the field (``metadata.auth.token``, ``session_id``) when a
    string ``memory`` stores looks like a credential; the message never holds it."""
    refuse_secrets(memory_fields(memory), where="memory")
