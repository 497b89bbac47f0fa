"""mem0's memory operations carried out by memstack's own services: ``Mem0Dialect``.

Nothing here stores anything itself: a user's memories are ``UserMemories``'s, an
agent's and an app's are ``MemoryService``'s (``subjects`` says which is where), so what
a mem0 client writes is what memstack's REST API, MCP tools and inspector show, and the
other way round. Every call runs as the API key's principal: its tenant, its agents, its
long-term right. What mem0 asks for that memstack keeps otherwise is carried over here:
an update is a new version and the old id keeps answering; ``delete`` closes a user's
memory (its history shows the ``DELETE``) and erases an agent's (memstack's keyed
memories keep no deleted version); mem0's filters are matched on the memories of the
users, agents and apps they name.
"""

from __future__ import annotations

import builtins
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from memstack._json import JSON
from memstack.errors import InvalidInput, NotFound
from memstack.longterm.memory import MAX_K
from memstack.secrets import refuse_secrets
from memstack.service.memories import MAX_LIST_LIMIT, MemoryService
from memstack.service.principal import Principal
from memstack.service.types import Scope
from memstack.service.user_types import TurnIn
from memstack.service.users import MAX_PAGE, UserMemories
from memstack.service.writes import MemoryWrite
from memstack.transports.mem0.filters import Node, Subject, Wanted, matches
from memstack.transports.mem0.ids import (
    UserRef,
    event_id,
    parse_event_id,
    parse_memory_id,
    user_memory_id,
)
from memstack.transports.mem0.subjects import (
    DEFAULT_RUN,
    agent_subject,
    history_out,
    iso,
    memory_out,
    user_subject,
)

__all__ = ["MAX_SCAN", "Entity", "Mem0Dialect", "Message", "Scored"]

MAX_SCAN: Final = 50_000
"""Memories one listing or filter reads at most; past it, the filter must be narrower."""
_JOB_STATES: Final = {
    "queued": "PENDING",
    "running": "RUNNING",
    "done": "SUCCEEDED",
    "failed": "FAILED",
}
_T = TypeVar("_T")


@dataclass(frozen=True, kw_only=True)
class Entity:
    """Whose memory a write is: mem0's four entity ids."""

    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Message:
    role: str
    content: str
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class Scored:
    subject: Subject
    score: float


class Mem0Dialect:
    """mem0's operations over ``users`` and ``memories``."""

    def __init__(self, *, users: UserMemories, memories: MemoryService) -> None:
        self.users = users
        self.memories = memories

    # -- writing --------------------------------------------------------------------

    async def add(
        self,
        caller: Principal,
        entity: Entity,
        messages: Sequence[Message],
        *,
        metadata: dict[str, JSON] | None,
        infer: bool,
        timestamp: float | None,
    ) -> dict[str, JSON]:
        """Store each message verbatim: a user's as a turn of its conversation (facts
        are extracted from them afterwards when the server has a model and ``infer``),
        an agent's or app's as a keyed memory. All or none: a message, metadata or id the
        secret filter refuses stores nothing."""
        texts: list[JSON] = [{"content": m.content, "name": m.name} for m in messages]
        ids: dict[str, JSON] = {
            "user_id": entity.user_id,
            "agent_id": entity.agent_id,
            "app_id": entity.app_id,
            "run_id": entity.run_id,
        }
        refuse_secrets({"messages": texts, "metadata": metadata, **ids}, where="memory")
        if entity.user_id is not None:
            return await self._add_turns(caller, entity, messages, metadata, infer, timestamp)
        if entity.agent_id is not None or entity.app_id is not None:
            return await self._add_keyed(caller, entity, messages, metadata)
        if entity.run_id is not None:
            raise InvalidInput(
                "run_id needs a user_id or agent_id beside it: memstack keeps a run's "
                "memories under its user or its agent.",
                field="run_id",
            )
        raise InvalidInput(
            "say whose memories these are: give user_id (or agent_id, app_id).",
            field="user_id",
        )

    async def _add_turns(
        self,
        caller: Principal,
        entity: Entity,
        messages: Sequence[Message],
        metadata: dict[str, JSON] | None,
        infer: bool,
        timestamp: float | None,
    ) -> dict[str, JSON]:
        assert entity.user_id is not None
        user_id = entity.user_id
        tags = {"agent_id": entity.agent_id, "app_id": entity.app_id}
        kept = {**(metadata or {}), **{k: v for k, v in tags.items() if v is not None}}
        turns = [
            TurnIn(
                speaker=m.name or m.role,
                text=m.content,
                session_id=entity.run_id or DEFAULT_RUN,
                time=timestamp,
                metadata=kept,
            )
            for m in messages
        ]
        done = await _renamed(self.users.add_turns(caller, user_id, turns, extract=infer))
        ids = [o.id for o in done.turns if o.outcome == "stored"]
        stored = {i.id: i for i in await self.users.get_many(caller, user_id, ids)}
        results: list[JSON] = []
        for message, outcome in zip(messages, done.turns, strict=True):
            item = stored.get(outcome.id)
            if item is None:  # a duplicate or a refusal: nothing of it was written now
                results.append(
                    {
                        "id": user_memory_id(user_id, outcome.id),
                        "memory": message.content,
                        "event": "NONE",
                        "reason": outcome.reason,
                    }
                )
                continue
            shown = memory_out(user_subject(user_id, item))
            shown["event"] = "ADD"
            results.append(shown)
        if done.job_id is None:
            return {
                "results": results,
                "status": "SUCCEEDED",
                "event_id": None,
                "message": f"{len(results)} messages stored verbatim.",
            }
        event = event_id(user_id, done.job_id)
        return {
            "results": results,
            "status": "PENDING",
            "event_id": event,
            "message": f"{len(results)} messages stored verbatim; facts are being extracted "
            f"from them: GET /v1/event/{event}/ follows it.",
        }

    async def _add_keyed(
        self,
        caller: Principal,
        entity: Entity,
        messages: Sequence[Message],
        metadata: dict[str, JSON] | None,
    ) -> dict[str, JSON]:
        agent_id = entity.agent_id or entity.app_id
        assert agent_id is not None
        scope: Scope = "global" if entity.agent_id is None else "agent"
        if entity.run_id is not None and entity.agent_id is not None:
            scope = "session"
        kept = dict(metadata or {})
        if entity.app_id is not None:
            kept["app_id"] = entity.app_id
        writes = [
            MemoryWrite(
                agent_id=agent_id,
                key=f"mem0-{uuid.uuid4().hex}",
                value=m.content,
                scope=scope,
                session_id=entity.run_id if scope == "session" else None,
                metadata=kept,
            )
            for m in messages
        ]
        app = {"agent_id": "app_id"} if entity.agent_id is None else None
        stored = await _renamed(self.memories.store_many(caller, writes), ids=app)
        results: list[JSON] = []
        for memory in stored:
            item = memory_out(agent_subject(memory))
            item["event"] = "ADD"
            results.append(item)
        return {
            "results": results,
            "status": "SUCCEEDED",
            "event_id": None,
            "message": f"{len(results)} memories stored.",
        }

    async def update(
        self,
        caller: Principal,
        memory_id: str,
        *,
        text: str | None,
        metadata: dict[str, JSON] | None,
    ) -> Subject:
        """A new ``text`` is a new version (the old one stays in ``history``); metadata
        alone is changed in place. Returns the memory as it is now."""
        ref = _ref(memory_id)
        if isinstance(ref, UserRef):
            item = await self.users.update(
                caller, ref.user_id, ref.item_id, text=text, metadata=metadata
            )
            return user_subject(ref.user_id, item)
        current = await _keyed(self.memories.get(caller, ref))
        if metadata is not None and "app_id" in current.metadata:
            metadata = {**metadata, "app_id": current.metadata["app_id"]}
        changed = await _renamed(
            self.memories.update(caller, ref, value=text, metadata=metadata), value="text"
        )
        return agent_subject(changed)

    async def delete(self, caller: Principal, memory_id: str) -> None:
        ref = _ref(memory_id)
        if isinstance(ref, UserRef):
            await self.users.retire(caller, ref.user_id, ref.item_id)
        else:
            await _keyed(self.memories.delete(caller, ref))

    async def delete_all(self, caller: Principal, entity: Entity) -> int:
        """Erase every memory of the entity named (``"*"``: of every such entity): a
        user's (of one run only with ``run_id``), an agent's, an app's. Returns how many
        went."""
        if entity.user_id is not None:
            users = await self._all_users(caller) if entity.user_id == "*" else [entity.user_id]
            return sum([await self._erase_user(caller, u, entity.run_id) for u in users])
        if entity.agent_id is not None:
            agents = await self._all_agents(caller) if entity.agent_id == "*" else [entity.agent_id]
            total = 0
            for agent_id in agents:
                total += await self.memories.delete_many(
                    caller,
                    agent_id=agent_id,
                    session_id=entity.run_id,
                    scope="session" if entity.run_id else None,
                )
            return total
        if entity.app_id is not None:
            if entity.app_id == "*":
                raise InvalidInput(
                    "app_id '*' is not served: name the app, or erase global memories "
                    "with DELETE /api/memories?scope=global.",
                    field="app_id",
                )
            return await self.memories.delete_many(caller, agent_id=entity.app_id, scope="global")
        raise InvalidInput(
            "say whose memories to delete: give user_id, agent_id or app_id ('*' for "
            "every one); a run_id goes with a user_id or agent_id.",
            field="user_id",
        )

    async def _erase_user(self, caller: Principal, user_id: str, run_id: str | None) -> int:
        if run_id is None:
            return await self.users.erase(caller, user_id)
        gone = 0
        for subject in await self._user_subjects(caller, user_id):
            if subject.run_id == run_id:
                ref = parse_memory_id(subject.id)
                assert isinstance(ref, UserRef)
                gone += await self.users.forget(caller, user_id, ref.item_id)
        return gone

    # -- reading --------------------------------------------------------------------

    async def get(self, caller: Principal, memory_id: str) -> Subject:
        ref = _ref(memory_id)
        if isinstance(ref, UserRef):
            return user_subject(ref.user_id, await self.users.get(caller, ref.user_id, ref.item_id))
        return agent_subject(await _keyed(self.memories.get(caller, ref)))

    async def history(self, caller: Principal, memory_id: str) -> list[JSON]:
        ref = _ref(memory_id)
        if isinstance(ref, UserRef):
            items = await self.users.history(caller, ref.user_id, ref.item_id)
            last = items[-1] if items else None
            closed = None if last is None or last.valid_to is None else iso(last.valid_to)
            versions = [user_subject(ref.user_id, i) for i in items]
        else:
            memories = await _keyed(self.memories.history(caller, ref))
            ended = memories[-1].valid_to if memories[-1].closed_reason == "evicted" else None
            closed = None if ended is None else iso(ended)
            versions = [agent_subject(m) for m in memories]
        return history_out(memory_id, versions, closed)

    async def listed(self, caller: Principal, node: Node, wanted: Wanted) -> list[Subject]:
        """Every current memory of the entities ``wanted`` names that ``node`` matches,
        newest first."""
        found: dict[str, Subject] = {}
        for subject in await self._subjects(caller, wanted):
            if matches(node, subject):
                found[subject.id] = subject
        return sorted(found.values(), key=lambda s: (-s.created_at, s.id))

    async def search(
        self,
        caller: Principal,
        query: str,
        node: Node,
        wanted: Wanted,
        *,
        top_k: int,
        threshold: float,
        narrowed: bool,
    ) -> list[Scored]:
        """The ``top_k`` best memories for ``query`` among those ``node`` matches whose
        score (the calibrated relevance, as ``min_score`` reads it) is at least
        ``threshold``, best first. ``narrowed``: the filter says more than whose memories
        to search, so more candidates are read before it is applied."""
        pool = min(MAX_K, max(top_k * 5, 50)) if narrowed else top_k
        scored: list[Scored] = []
        for user_id in await self._wanted_users(caller, wanted):
            for r in await self.users.recall(caller, user_id, query, k=pool, touch=False):
                scored.append(Scored(subject=user_subject(user_id, r), score=r.scores.calibrated))
        for agent_id, scope in await self._wanted_agents(caller, wanted):
            hits = await self.memories.search(
                caller, query, agent_id=agent_id, scope=scope, limit=pool
            )
            scored += [Scored(subject=agent_subject(h.memory), score=h.calibrated) for h in hits]
        kept = {
            s.subject.id: s for s in scored if s.score >= threshold and matches(node, s.subject)
        }
        best = sorted(kept.values(), key=lambda s: -s.score)
        return best[:top_k]

    async def entities(self, caller: Principal) -> list[JSON]:
        """The key's users and agents that hold memories, each with how many."""
        out: list[JSON] = []
        if caller.long_term or self.users.memory_enabled is True:
            for user_id in await self._all_users(caller):
                count = await self.users.memory(caller, user_id).count()
                out.append(_entity(caller, "user", user_id, count))
        offset = 0
        while True:
            page = await self.memories.agents(caller, limit=MAX_LIST_LIMIT, offset=offset)
            out += [_entity(caller, "agent", a.agent_id, a.memories) for a in page.agents]
            offset += len(page.agents)
            if not page.agents or offset >= page.total:
                return out

    async def event(self, caller: Principal, value: str) -> dict[str, JSON]:
        """An extraction job, as mem0's event of an ``add``."""
        ref = parse_event_id(value)
        if ref is None:
            raise NotFound(
                "no such event: an add answers with an event_id only when facts are being "
                "extracted after it.",
                field="event_id",
            )
        job = await self.users.job(caller, ref.user_id, ref.item_id)
        stored: list[JSON] = [
            {"id": user_memory_id(ref.user_id, i), "event": "ADD"} for i in job.stored
        ]
        return {
            "id": value,
            "event_type": "ADD",
            "status": _JOB_STATES[job.state],
            "payload": {},
            "metadata": {"error": job.error} if job.error else {},
            "results": stored,
            "created_at": iso(job.created_at),
            "updated_at": iso(job.updated_at),
        }

    # -- whose memories -------------------------------------------------------------

    async def _subjects(self, caller: Principal, wanted: Wanted) -> list[Subject]:
        out: list[Subject] = []
        for user_id in await self._wanted_users(caller, wanted):
            out += await self._user_subjects(caller, user_id)
            _bounded(len(out))
        for agent_id, scope in await self._wanted_agents(caller, wanted):
            cursor: str | None = None
            while True:
                page = await self.memories.list(
                    caller, agent_id=agent_id, scope=scope, limit=MAX_LIST_LIMIT, cursor=cursor
                )
                out += [agent_subject(m) for m in page.memories]
                _bounded(len(out))
                cursor = page.next_cursor
                if cursor is None:
                    break
        return out

    async def _user_subjects(self, caller: Principal, user_id: str) -> list[Subject]:
        out: list[Subject] = []
        cursor: str | None = None
        while True:
            page = await self.users.memories(caller, user_id, limit=MAX_PAGE, cursor=cursor)
            out += [user_subject(user_id, item) for item in page.items]
            _bounded(len(out))
            cursor = page.next_cursor
            if cursor is None:
                return out

    async def _wanted_users(self, caller: Principal, wanted: Wanted) -> list[str]:
        if wanted.users == "*":
            return await self._all_users(caller)
        return sorted(wanted.users)

    async def _wanted_agents(
        self, caller: Principal, wanted: Wanted
    ) -> list[tuple[str, Scope | None]]:
        agents = await self._all_agents(caller) if wanted.agents == "*" else sorted(wanted.agents)
        if wanted.apps == "*":
            raise InvalidInput(
                "app_id '*' is not served: name the app (memstack keeps an app's memories "
                "as the global memories of an agent of that name).",
                field="filters.app_id",
            )
        out: list[tuple[str, Scope | None]] = [(a, None) for a in agents]
        return out + [(app, "global") for app in sorted(wanted.apps)]

    async def _all_users(self, caller: Principal) -> list[str]:
        return await _pages(lambda cursor: self._user_page(caller, cursor))

    async def _user_page(
        self, caller: Principal, cursor: str | None
    ) -> tuple[list[str], str | None]:
        page = await self.users.users(caller, limit=MAX_PAGE, cursor=cursor)
        return page.users, page.next_cursor

    async def _all_agents(self, caller: Principal) -> list[str]:
        out: list[str] = []
        while True:
            page = await self.memories.agents(caller, limit=MAX_LIST_LIMIT, offset=len(out))
            out += [a.agent_id for a in page.agents]
            if not page.agents or len(out) >= page.total:
                return out


async def _keyed(call: Awaitable[_T]) -> _T:
    """``call`` on an agent's memory; its ``NotFound`` names ``memory_id``, as a user's
    memory's does."""
    try:
        return await call
    except NotFound as exc:
        raise NotFound(str(exc), field="memory_id") from exc


def _ref(memory_id: str) -> UserRef | str:
    ref = parse_memory_id(memory_id)
    if ref is None:
        raise NotFound(
            "no memory with this id: use an id an add, a search or a listing answered with.",
            field="memory_id",
        )
    return ref


def _entity(caller: Principal, kind: str, name: str, count: int) -> JSON:
    return {
        "id": name,
        "name": name,
        "type": kind,
        "total_memories": count,
        "owner": caller.tenant,
        "metadata": {},
        "created_at": None,
        "updated_at": None,
    }


def _bounded(count: int) -> None:
    if count > MAX_SCAN:
        raise InvalidInput(
            f"the filter reads more than {MAX_SCAN} memories; name fewer users or agents.",
            field="filters",
        )


async def _pages(
    page: Callable[[str | None], Awaitable[tuple[builtins.list[str], str | None]]],
) -> list[str]:
    out: list[str] = []
    cursor: str | None = None
    while True:
        items, cursor = await page(cursor)
        out += items
        if cursor is None:
            return out


_TURN_FIELD: Final = re.compile(r"^(?:turns|memories)\[(\d+)\]\.?(.*)$")
_MENTION: Final = re.compile(r"(?:turns|memories)\[\d+\]\.?[\w.]*(?::\s*|\s+(?=is\b))")
"""memstack's own name of a field at the start of a message: the message names mem0's."""
_RENAMED: Final = {"text": "content", "value": "content", "speaker": "name", "": ""}


async def _renamed(
    call: Awaitable[_T], *, value: str = "content", ids: Mapping[str, str] | None = None
) -> _T:
    """``call``'s result; an ``InvalidInput`` naming ``turns[2].text`` or
    ``memories[2].value`` is raised again naming ``messages[2].content``, as mem0 calls
    it (``value`` for a field that is not a message's), and one naming memstack's id field
    (``session_id``) names mem0's (``run_id``; ``ids`` adds more: an app's ``agent_id`` is
    its ``app_id``)."""
    names = {"session_id": "run_id", **(ids or {})}
    try:
        return await call
    except InvalidInput as exc:
        field = exc.field or ""
        found = _TURN_FIELD.match(field)
        if field == "value":
            raise type(exc)(str(exc).replace("value", value, 1), field=value) from exc
        rest = field if found is None else found.group(2)
        head = rest.split(".")[0]
        if head in names:
            message = _MENTION.sub("", str(exc)).replace(head, names[head])
            raise type(exc)(message, field=names[head] + rest[len(head) :]) from exc
        if found is None:
            raise
        if head not in _RENAMED:  # not a message's own field: agent_id, ...
            raise type(exc)(_MENTION.sub("", str(exc)), field=rest) from exc
        named = _RENAMED[head]
        where = f"messages[{found.group(1)}]" + (f".{named}" if named else "")
        raise type(exc)(f"{where}: {_MENTION.sub('', str(exc))}", field=where) from exc
