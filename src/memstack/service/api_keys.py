"""API keys: stored hashed, each bound to a tenant and optionally to some agents (such a
key changes global memories and knowledge only if created with ``global_write``), and
with the ``long_term`` right or not (its tenant's users' long-term memory).

A raw key is ``msk_<id>_<secret>``. Only the SHA-256 of the whole key is stored, in the
record store's ``Namespace("auth", "keys")`` under ``<id>``; checking a key fetches that one
record and compares digests in constant time. The raw key is shown once, at creation.

``authenticate`` reads the store on every call. A server checks keys with ``principal``
instead: a key that checked out is trusted for ``recheck_s`` seconds (default
``RECHECK_S``, 1 s) without reading the store again, so most requests' keys are checked
from memory, with no store read and no worker thread. Creating or revoking a key through
the same ``ApiKeys`` forgets every verified key at once; a key revoked by another process
(``memstack keys revoke`` while a server runs) stops working within ``recheck_s``. Only
keys that checked out are kept (by digest, never the raw key), at most ``cached_keys`` of
them; a wrong key is read from the store every time.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import hmac
import re
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from memstack._counts import check_whole
from memstack._json import JSON
from memstack.clock import Clock, SystemClock
from memstack.errors import InvalidInput, NotFound
from memstack.secrets import refuse_secrets
from memstack.service.principal import Principal
from memstack.service.types import check_id_part
from memstack.storage import Namespace, Record, RecordStore

__all__ = ["RECHECK_S", "ApiKeys", "KeyInfo"]

NAMESPACE: Final = Namespace("auth", "keys")
RECHECK_S: Final = 1.0
"""Seconds a verified key is trusted before the store is read again (``ApiKeys``): one
store read a second per key, and a revocation from another process takes effect within it."""
_RAW = re.compile(r"^msk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True, kw_only=True)
class KeyInfo:
    id: str
    tenant: str
    agents: tuple[str, ...] | None
    label: str | None
    created_at: float
    revoked_at: float | None
    global_write: bool = False
    """Created with ``--global-write``: a key limited to ``agents`` may change global
    memories and knowledge too (``Principal.global_write``)."""
    long_term: bool = False
    """Created with ``--long-term``: the key may use its tenant's users' long-term memory
    (``Principal.long_term``)."""

    @property
    def may_write_global(self) -> bool:
        """What the key may do: a key for any agent always changes what they share."""
        return self.agents is None or self.global_write

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @property
    def hint(self) -> str:
        """How the key starts, to recognise it without revealing it."""
        return f"msk_{self.id}_…"


class ApiKeys:
    def __init__(
        self,
        records: RecordStore,
        *,
        clock: Clock | None = None,
        recheck_s: float = RECHECK_S,
        cached_keys: int = 1_024,
    ) -> None:
        if (
            isinstance(recheck_s, bool)
            or not isinstance(recheck_s, int | float)
            or not (0 <= recheck_s <= 3_600)
        ):
            raise InvalidInput(
                f"recheck_s is {recheck_s!r}; pass seconds between 0 and 3600 (0: read the "
                "store for every key).",
                field="recheck_s",
            )
        check_whole(cached_keys, "cached_keys")
        self.records = records
        self.clock: Clock = clock or SystemClock()
        self.recheck_s = float(recheck_s)
        self._verified = _Verified(cached_keys)

    def create(
        self,
        *,
        tenant: str,
        agents: list[str] | None = None,
        label: str | None = None,
        global_write: bool = False,
        long_term: bool = False,
    ) -> tuple[str, KeyInfo]:
        """A new key for ``tenant``: returns the raw key (shown only now) and its info.
        A key limited to ``agents`` changes global memories and knowledge only with
        ``global_write``; ``long_term`` lets it use the users' long-term memory."""
        check_id_part(tenant, "tenant")
        for name, right in (("global_write", global_write), ("long_term", long_term)):
            if not isinstance(right, bool):
                raise InvalidInput(f"{name} must be true or false.", field=name)
        if agents is not None:
            if not agents:
                raise InvalidInput(
                    "agents, when given, must name at least one agent.", field="agents"
                )
            for agent in agents:
                check_id_part(agent, "agents")
        if label is not None and (not isinstance(label, str) or len(label) > 200):
            raise InvalidInput("label must be a string of at most 200 characters.", field="label")
        stored: dict[str, JSON] = {"tenant": tenant, "agents": list(agents or []), "label": label}
        refuse_secrets(stored, where="API key records")
        key_id = secrets.token_hex(8)
        raw = f"msk_{key_id}_{secrets.token_urlsafe(32)}"
        now = self.clock.now()
        info = KeyInfo(
            id=key_id,
            tenant=tenant,
            agents=tuple(sorted(set(agents))) if agents else None,
            label=label,
            created_at=now,
            revoked_at=None,
            global_write=global_write,
            long_term=long_term,
        )
        self.records.upsert([_record(info, _digest(raw))])
        self._verified.clear()
        return raw, info

    def authenticate(self, raw: str) -> Principal | None:
        """The principal a raw key stands for, or None for an unknown, malformed or
        revoked key; read from the store every time."""
        match = _RAW.match(raw) if isinstance(raw, str) else None
        if match is None:
            return None
        checked_at, generation = self.clock.now(), self._verified.generation
        found = self.records.get(NAMESPACE, [match.group(1)])
        if not found:
            return None
        record = found[0]
        stored = str(record.metadata.get("digest", ""))
        digest = _digest(raw)
        if not hmac.compare_digest(stored, digest):
            return None
        info = _info(record)
        if not info.active:
            return None
        principal = Principal(
            tenant=info.tenant,
            agents=frozenset(info.agents) if info.agents else None,
            global_write=info.global_write,
            long_term=info.long_term,
        )
        self._verified.put(digest, principal, checked_at, generation)
        return principal

    async def principal(self, raw: str) -> Principal | None:
        """As ``authenticate``, but a key it accepted less than ``recheck_s`` ago is
        answered from memory (``verified``); otherwise the store is read in a worker
        thread."""
        known = self.verified(raw)
        if known is not None:
            return known
        return await asyncio.to_thread(self.authenticate, raw)

    def verified(self, raw: str) -> Principal | None:
        """The principal of a key ``authenticate`` accepted less than ``recheck_s`` ago
        (and not forgotten since), from memory; None when the store must be read."""
        if not isinstance(raw, str) or not raw.startswith("msk_") or self.recheck_s <= 0:
            return None
        return self._verified.get(_digest(raw), self.clock.now(), self.recheck_s)

    def list(self, *, tenant: str | None = None) -> builtins.list[KeyInfo]:
        keys: builtins.list[KeyInfo] = []
        offset = 0
        while True:
            page = self.records.list(NAMESPACE, limit=1000, offset=offset, order="created_asc")
            keys.extend(_info(r) for r in page)
            if len(page) < 1000:
                break
            offset += 1000
        return [k for k in keys if tenant is None or k.tenant == tenant]

    def revoke(self, key_id: str) -> KeyInfo:
        found = self.records.get(NAMESPACE, [key_id]) if isinstance(key_id, str) and key_id else []
        if not found:
            raise NotFound(
                f"no API key {key_id!r}; `memstack keys list` shows them.", field="key_id"
            )
        record = found[0]
        info = _info(record)
        if info.active:
            now = self.clock.now()
            info = KeyInfo(**{**vars(info), "revoked_at": now})
            self.records.upsert([_record(info, str(record.metadata.get("digest", "")))])
        self._verified.clear()
        return info

    def count_active(self) -> int:
        return sum(1 for k in self.list() if k.active)


class _Verified:
    """Principals of keys that checked out, by digest, with when they were checked; the
    ``size`` most recently used. Thread-safe. ``generation`` counts the ``clear`` calls:
    a check that read the store before a key was revoked here is not kept after it."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._keys: OrderedDict[str, tuple[Principal, float]] = OrderedDict()
        self.generation = 0

    def get(self, digest: str, now: float, recheck_s: float) -> Principal | None:
        with self._lock:
            found = self._keys.get(digest)
            if found is None:
                return None
            principal, checked_at = found
            if not 0 <= now - checked_at < recheck_s:  # stale, or the clock went back
                del self._keys[digest]
                return None
            self._keys.move_to_end(digest)
            return principal

    def put(self, digest: str, principal: Principal, checked_at: float, generation: int) -> None:
        with self._lock:
            if generation != self.generation:
                return
            self._keys[digest] = (principal, checked_at)
            self._keys.move_to_end(digest)
            while len(self._keys) > self._size:
                self._keys.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()
            self.generation += 1


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _record(info: KeyInfo, digest: str) -> Record:
    return Record(
        id=info.id,
        namespace=NAMESPACE.encode(),
        text=info.label or "",
        kind="api_key",
        metadata={
            "tenant": info.tenant,
            "agents": list(info.agents) if info.agents else None,
            "label": info.label,
            "digest": digest,
            "revoked_at": info.revoked_at,
            "global_write": info.global_write,
            "long_term": info.long_term,
        },
        created_at=info.created_at,
        updated_at=info.revoked_at or info.created_at,
    )


def _info(record: Record) -> KeyInfo:
    meta = record.metadata
    agents = meta.get("agents")
    revoked = meta.get("revoked_at")
    label = meta.get("label")
    return KeyInfo(
        id=record.id,
        tenant=str(meta.get("tenant", "")),
        agents=tuple(str(a) for a in agents) if isinstance(agents, list) else None,
        label=label if isinstance(label, str) else None,
        created_at=record.created_at,
        revoked_at=float(revoked) if isinstance(revoked, int | float) else None,
        global_write=meta.get("global_write") is True,  # absent in keys made before it
        long_term=meta.get("long_term") is True,
    )
