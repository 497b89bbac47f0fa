"""API keys: stored hashed, each bound to a tenant and optionally to some agents.

A raw key is ``msk_<id>_<secret>``. Only the SHA-256 of the whole key is stored, in the
record store's ``Namespace("auth", "keys")`` under ``<id>``; checking a key fetches that one
record and compares digests in constant time. The raw key is shown once, at creation.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Final

from memstack.clock import Clock, SystemClock
from memstack.errors import InvalidInput, NotFound
from memstack.service.principal import Principal
from memstack.service.types import check_id_part
from memstack.storage import Namespace, Record, RecordStore

__all__ = ["ApiKeys", "KeyInfo"]

NAMESPACE: Final = Namespace("auth", "keys")
_RAW = re.compile(r"^msk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True, kw_only=True)
class KeyInfo:
    id: str
    tenant: str
    agents: tuple[str, ...] | None
    label: str | None
    created_at: float
    revoked_at: float | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @property
    def hint(self) -> str:
        """How the key starts, to recognise it without revealing it."""
        return f"msk_{self.id}_…"


class ApiKeys:
    def __init__(self, records: RecordStore, *, clock: Clock | None = None) -> None:
        self.records = records
        self.clock: Clock = clock or SystemClock()

    def create(
        self, *, tenant: str, agents: list[str] | None = None, label: str | None = None
    ) -> tuple[str, KeyInfo]:
        """A new key for ``tenant``: returns the raw key (shown only now) and its info."""
        check_id_part(tenant, "tenant")
        if agents is not None:
            if not agents:
                raise InvalidInput(
                    "agents, when given, must name at least one agent.", field="agents"
                )
            for agent in agents:
                check_id_part(agent, "agents")
        if label is not None and (not isinstance(label, str) or len(label) > 200):
            raise InvalidInput("label must be a string of at most 200 characters.", field="label")
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
        )
        self.records.upsert([_record(info, _digest(raw))])
        return raw, info

    def authenticate(self, raw: str) -> Principal | None:
        """The principal a raw key stands for, or None for an unknown, malformed or
        revoked key."""
        match = _RAW.match(raw or "")
        if match is None:
            return None
        found = self.records.get(NAMESPACE, [match.group(1)])
        if not found:
            return None
        record = found[0]
        stored = str(record.metadata.get("digest", ""))
        if not hmac.compare_digest(stored, _digest(raw)):
            return None
        info = _info(record)
        if not info.active:
            return None
        return Principal(tenant=info.tenant, agents=frozenset(info.agents) if info.agents else None)

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
        return info

    def count_active(self) -> int:
        return sum(1 for k in self.list() if k.active)


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
    )
