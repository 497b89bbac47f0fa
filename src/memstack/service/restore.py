"""What a restore takes (``memstack memories import``): memories with every version an
export listed, checked before anything is written.

A memory is given by its identity (agent, scope, session, key) and its versions as
``GET /api/memories?include_superseded=true`` shows them: value, metadata, times,
validity (``valid_from``, ``valid_to``), ``superseded_by`` and ``closed_reason``,
provenance. Its id follows from the caller's tenant and the identity, as for a store.
``check_chain`` turns one into the ``Memory`` values of its versions, oldest first, in
the form ``LongTermTier.restore`` writes: a version with ``superseded_by`` is a closed
copy (``memstack.storage.versions``); the one without is the memory's own record,
current, or closed in place by the cap (``evicted``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from memstack._json import JSON
from memstack.errors import InvalidInput
from memstack.service.checks import (
    check_key,
    check_metadata,
    check_provenance,
    check_provenance_detail,
    check_scope,
    check_value,
)
from memstack.service.principal import Principal
from memstack.service.secret_fields import refuse_memory_secrets
from memstack.service.types import (
    ClosedReason,
    Memory,
    Provenance,
    Scope,
    as_closed_reason,
    check_id_part,
    memory_id,
)
from memstack.storage.versions import KEPT_VERSIONS

__all__ = [
    "MAX_RESTORE_MEMORIES",
    "MemoryIn",
    "Restored",
    "VersionIn",
    "check_chain",
    "refuse_chain_secrets",
]

MAX_RESTORE_MEMORIES = 500
"""Memories per restore call (one transaction)."""


@dataclass(frozen=True, kw_only=True)
class VersionIn:
    """One version of a memory to restore; times in seconds since the epoch."""

    value: str
    agent_id: str | None = None
    """The agent that wrote this version of a global memory (each keeps its own); None:
    the memory's. Another scope's versions all belong to the memory's agent."""
    metadata: dict[str, JSON] = field(default_factory=dict)
    created_at: float | None = None
    """None: now."""
    updated_at: float | None = None
    """None: ``created_at``."""
    valid_from: float | None = None
    """None: ``created_at``."""
    valid_to: float | None = None
    """None: the current version."""
    expires_at: float | None = None
    superseded_by: str | None = None
    """Set on a version a newer one replaced (to anything: the next version by validity is
    the one it names); None on the memory's latest version."""
    closed_reason: ClosedReason | None = None
    version_id: str | None = None
    """The version's own id, as listed; None: a new one."""
    provenance: Provenance | None = None
    provenance_detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class MemoryIn:
    """A memory to restore: its identity and every version of it."""

    agent_id: str
    scope: Scope
    key: str
    session_id: str | None = None
    versions: Sequence[VersionIn]


@dataclass(frozen=True, kw_only=True)
class Restored:
    memories: int
    """Memories written, each with all its versions."""
    versions: int
    """Versions written, current and closed."""
    skipped: int = 0
    """Memories left as they were: the store held them already (a restore without
    ``replace``)."""


def check_chain(principal: Principal, given: MemoryIn, *, at: str, now: float) -> list[Memory]:
    """The versions of ``given`` as memories of ``principal``'s tenant, oldest first
    (by ``valid_from``); ``InvalidInput`` naming the field under ``at`` (such as
    ``memories[3]``) and the fix."""
    with _under(at):
        agent_id = check_id_part(given.agent_id, "agent_id")
        principal.check_agent(agent_id)
        scope = check_scope(given.scope)
        if scope == "global":
            principal.check_global_write(field="scope")
        session_id = given.session_id
        if scope == "session":
            if session_id is None:
                raise InvalidInput(
                    "a session memory needs its session_id, as an export lists it.",
                    field="session_id",
                )
            check_id_part(session_id, "session_id")
        elif session_id is not None:
            raise InvalidInput(
                "session_id is only for scope 'session'; drop it or set scope to 'session'.",
                field="session_id",
            )
        key = check_key(given.key)
        if not 1 <= len(given.versions) <= KEPT_VERSIONS + 1:
            raise InvalidInput(
                f"give 1 to {KEPT_VERSIONS + 1} versions (the store keeps {KEPT_VERSIONS} "
                f"closed ones beside the current one); got {len(given.versions)}.",
                field="versions",
            )
    identity = Memory(
        id=memory_id(
            tenant=principal.tenant, scope=scope, agent_id=agent_id, session_id=session_id, key=key
        ),
        tenant=principal.tenant,
        agent_id=agent_id,
        scope=scope,
        key=key,
        value="",
        session_id=session_id,
        created_at=now,
        updated_at=now,
    )
    versions: list[Memory] = []
    for number, version in enumerate(given.versions):
        with _under(f"{at}.versions[{number}]"):
            versions.append(_version(version, identity, principal, now=now))
    versions.sort(key=lambda m: (m.starts, math.inf if m.valid_to is None else m.valid_to))
    with _under(at):
        _check_heads(versions)
    return versions


def refuse_chain_secrets(chains: Sequence[Sequence[Memory]]) -> None:
    """``InvalidInput`` naming the memory and the field when a version holds a
    credential, as a store refuses one."""
    for i, chain in enumerate(chains):
        for version in chain:
            with _under(f"memories[{i}]"):
                refuse_memory_secrets(version)  # every stored string, ids included


def _version(given: VersionIn, identity: Memory, principal: Principal, *, now: float) -> Memory:
    """One version of the memory ``identity``, checked."""
    created_at = _time(given.created_at, "created_at", now)
    valid_from = _time(given.valid_from, "valid_from", created_at)
    valid_to = None if given.valid_to is None else _time(given.valid_to, "valid_to", 0.0)
    if valid_to is not None and valid_to < valid_from:
        raise InvalidInput(
            "valid_to is before valid_from; a version ends after it starts.", field="valid_to"
        )
    if valid_to is None and (given.superseded_by is not None or given.closed_reason is not None):
        raise InvalidInput(
            "a version with superseded_by or closed_reason is closed: give its valid_to.",
            field="valid_to",
        )
    reason = given.closed_reason
    if reason is not None and as_closed_reason(reason) is None:
        raise InvalidInput(
            f"closed_reason must be superseded, deleted or evicted; got {reason!r}.",
            field="closed_reason",
        )
    expires_at = given.expires_at
    return replace(
        identity,
        agent_id=_writer(given.agent_id, identity, principal),
        value=check_value(given.value),
        metadata=check_metadata(given.metadata),
        expires_at=None if expires_at is None else _time(expires_at, "expires_at", 0.0),
        created_at=created_at,
        updated_at=_time(given.updated_at, "updated_at", created_at),
        valid_from=valid_from,
        valid_to=valid_to,
        superseded_by=None if given.superseded_by is None else identity.id,
        closed_reason=reason,
        version_id=None
        if given.version_id is None
        else check_id_part(given.version_id, "version_id"),
        provenance=check_provenance(given.provenance),
        provenance_detail=check_provenance_detail(given.provenance_detail),
    )


def _writer(agent_id: str | None, identity: Memory, principal: Principal) -> str:
    """The agent a version belongs to: its own writer for a global memory."""
    if agent_id is None or agent_id == identity.agent_id:
        return identity.agent_id
    if identity.scope != "global":
        raise InvalidInput(
            f"agent_id {agent_id[:40]!r} is not the memory's {identity.agent_id!r}; only a "
            "global memory's versions may come from other agents.",
            field="agent_id",
        )
    principal.check_agent(check_id_part(agent_id, "agent_id"))
    return agent_id


def _check_heads(versions: list[Memory]) -> None:
    """One version at most is the memory's own record (no ``superseded_by``): the
    current one, or the latest when the cap closed it; no ``version_id`` twice."""
    named = [m.version_id for m in versions if m.version_id is not None]
    if len(set(named)) != len(named):
        raise InvalidInput(
            "two versions have the same version_id; give each version its own, as an "
            "export lists them, or leave version_id out.",
            field="versions",
        )
    heads = [i for i, m in enumerate(versions) if m.superseded_by is None]
    if len(heads) > 1 or (heads and heads[0] != len(versions) - 1):
        raise InvalidInput(
            "only the latest version (the current one, or the one the cap evicted) may "
            "have superseded_by null; every earlier version was replaced: set its "
            "superseded_by to the memory's id, as an export lists it.",
            field="versions",
        )


def _time(value: object, name: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(
            f"{name} must be a finite number of seconds since the epoch; got {value!r}.",
            field=name,
        )
    return float(value)


@contextmanager
def _under(at: str) -> Iterator[None]:
    """An ``InvalidInput`` raised inside names its field under ``at``, of the same class
    (a ``Forbidden`` stays one)."""
    try:
        yield
    except InvalidInput as exc:
        named = f"{at}.{exc.field}" if exc.field else at
        raise type(exc)(f"{at}: {exc}", field=named) from exc
