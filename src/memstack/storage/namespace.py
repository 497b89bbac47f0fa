"""Namespace: which owner's records, written as one string by one encoder.

Every part of memstack that keeps records names its namespaces with a ``Namespace``
under its own reserved root, so no owner can reach another's records whatever ids its
users pick (a MemoryBank named ``auth/keys`` lands in ``bank/auth%2Fkeys``, never in
the API keys' ``auth/keys``):

=============  ==============================================  ===========================
root           owner                                           parts
=============  ==============================================  ===========================
``ltm``        long-term memory (``LongTermMemory``)           user, namespace[, workspace]
``users``      a tenant's users' long-term memory, served      tenant, user, namespace[,
               (``UserMemories``; a ``Collection`` with a      workspace]
               ``tenant``)
``jobs``       the extraction jobs of a tenant's user          tenant, user
``mem``        memory service, long-term tier                  tenant, bucket
``memidx``     memory service, id -> bucket index              tenant
``memepoch``   memory service, the short-term tier's epoch     (none)
``kb``         knowledge documents, their text and passages    tenant, ``docs``/``parts``/
                                                               ``chunks``; or ``indexing``
                                                               alone (documents not yet
                                                               indexed, of every tenant)
``auth``       API keys                                        ``keys``
``bank``       MemoryBank (in memory or durable)               [bank name]
``lg``         LangGraph store (``MemstackStore``)             store name, LangGraph labels
``lgv``        the LangGraph store's field vectors, one        store name, LangGraph labels
               record per indexed text of an item
``oas``        Agents SDK sessions (``MemstackSession``)       session id
``reembed``    a namespace being embedded again by another     the namespace's encoded name
               model (``service.reembed``), until it replaces
               the namespace
=============  ==============================================  ===========================

The encoded form is ``root/part/part``, each part with ``%`` and ``/`` percent-encoded,
so two different namespaces never encode alike and ``decode`` inverts ``encode``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

from memstack.errors import InvalidInput

__all__ = ["ROOTS", "Namespace", "NamespaceRoot", "decode_part", "encode_part"]

NamespaceRoot = Literal[
    "ltm",
    "users",
    "jobs",
    "mem",
    "memidx",
    "memepoch",
    "kb",
    "auth",
    "bank",
    "lg",
    "lgv",
    "oas",
    "reembed",
]
ROOTS: Final[tuple[str, ...]] = get_args(NamespaceRoot)


def encode_part(part: str) -> str:
    """``part`` with ``%`` and ``/`` percent-encoded, so parts never run into each other."""
    return part.replace("%", "%25").replace("/", "%2F")


def decode_part(encoded: str) -> str:
    return encoded.replace("%2F", "/").replace("%25", "%")


@dataclass(frozen=True)
class Namespace:
    """``Namespace("mem", "acme", "agent:a1")`` encodes as ``mem/acme/agent:a1``."""

    root: NamespaceRoot
    parts: tuple[str, ...]

    def __init__(self, root: NamespaceRoot, *parts: str) -> None:
        if root not in ROOTS:
            raise InvalidInput(
                f"namespace root must be one of {', '.join(ROOTS)}; got {root!r}.", field="root"
            )
        for part in parts:
            if not isinstance(part, str) or not part:
                raise InvalidInput(
                    f"namespace parts must be non-empty strings; got {part!r}.", field="namespace"
                )
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "parts", tuple(parts))

    def encode(self) -> str:
        return "/".join((self.root, *map(encode_part, self.parts)))

    def prefix(self) -> str:
        """The encoded prefix every namespace below this one starts with."""
        return self.encode() + "/"

    def child(self, part: str) -> Namespace:
        return Namespace(self.root, *self.parts, part)

    @classmethod
    def decode(cls, encoded: str) -> Namespace:
        """The namespace ``encoded`` names; ``InvalidInput`` if no root owns it."""
        root, *parts = encoded.split("/")
        if root not in ROOTS:
            raise InvalidInput(f"{encoded!r} is not under a memstack root.", field="namespace")
        return cls(root, *map(decode_part, parts))  # type: ignore[arg-type]

    def __str__(self) -> str:
        return self.encode()
