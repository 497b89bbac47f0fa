"""A memory search filtered by metadata (issue 34): equality and ``$in`` on a memory's
metadata keys, selected in the database on every backend, within the caller's tenant and
agents; a filter the service cannot read is refused naming the key and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from memstack.errors import InvalidInput
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.types import Scope

ACME = Principal(tenant="acme")
OTHER = Principal(tenant="other")
BOT_ONLY = Principal(tenant="acme", agents=frozenset({"bot"}))

# key: (agent, scope, value, metadata)
MEMORIES: dict[str, tuple[str, Scope, str, dict[str, Any]]] = {
    "deploy": ("bot", "agent", "Deploys go out blue-green.", {"project": "apollo", "tier": "a"}),
    "editor": ("bot", "agent", "The user edits in Neovim.", {"project": "apollo", "tier": "b"}),
    "pager": ("bot", "agent", "Deploys page the on-call.", {"project": "gemini", "tier": "a"}),
    "budget": ("bot", "agent", "Deploys cost 3 credits.", {"project": "apollo", "n": 1}),
    "flag": ("bot", "agent", "Deploys need a flag.", {"project": "apollo", "n": True}),
    "shared": ("bot", "global", "Deploys freeze on Fridays.", {"project": "apollo", "tier": "c"}),
    "theirs": ("ops", "agent", "Deploys of ops run at noon.", {"project": "apollo", "tier": "a"}),
    "tags": ("bot", "agent", "Deploys are tagged.", {"project": ["apollo", "gemini"]}),
}


async def _stored(service: MemoryService) -> None:
    for key, (agent, scope, value, metadata) in MEMORIES.items():
        await service.store(
            ACME, agent_id=agent, key=key, value=value, scope=scope, metadata=metadata
        )
    # Another tenant with the same metadata: never found.
    await service.store(
        OTHER, agent_id="bot", key="deploy", value="Deploys.", metadata={"project": "apollo"}
    )


CASES: list[tuple[str, dict[str, Any], Principal, str | None, set[str]]] = [
    ("equality", {"project": "gemini"}, ACME, None, {"pager"}),
    ("in", {"tier": {"$in": ["a", "c"]}}, ACME, None, {"deploy", "pager", "shared", "theirs"}),
    (
        "both",
        {"project": "apollo", "tier": {"$in": ["a", "b"]}},
        ACME,
        None,
        {"deploy", "editor", "theirs"},
    ),
    ("agent and global", {"project": "apollo", "tier": "c"}, ACME, "bot", {"shared"}),
    ("an agent's own", {"tier": "a"}, ACME, "bot", {"deploy", "pager"}),
    ("a key's agents only", {"tier": "a"}, BOT_ONLY, None, {"deploy", "pager"}),
    ("1 is 1.0", {"n": 1.0}, ACME, None, {"budget"}),
    ("true is not 1", {"n": True}, ACME, None, {"flag"}),
    ("a list is not an item", {"project": {"$in": ["gemini"]}}, ACME, None, {"pager"}),
    ("no such key", {"owner": "x"}, ACME, None, set()),
    ("empty", {}, ACME, "bot", {"deploy", "editor", "pager", "budget", "flag", "shared", "tags"}),
]


@pytest.mark.parametrize(
    ("name", "wanted", "caller", "agent", "expected"), CASES, ids=[c[0] for c in CASES]
)
async def test_search_keeps_the_memories_whose_metadata_matches(
    service: MemoryService,
    name: str,
    wanted: dict[str, Any],
    caller: Principal,
    agent: str | None,
    expected: set[str],
):
    await _stored(service)
    for mode in ("hybrid", "text", "semantic"):
        hits = await service.search(
            caller, "deploys", agent_id=agent, mode=mode, limit=20, metadata=wanted
        )
        found = {h.memory.key for h in hits if h.memory.tenant == "acme"}
        assert found == expected or (mode == "text" and found <= expected), (mode, found)
        if mode == "text":  # the keyword match: the expected memories holding the word
            assert found == {k for k in expected if "Deploys" in MEMORIES[k][2]}, found
        assert all(h.memory.tenant == caller.tenant for h in hits)


async def test_the_filter_is_applied_before_the_limit(service: MemoryService):
    """The database selects the matching memories, which are then ranked: the one match
    comes back however many better ones the filter leaves out."""
    for n in range(30):
        await service.store(
            ACME, agent_id="bot", key=f"deploy-{n}", value="Deploys deploy deploys.", metadata={}
        )
    await service.store(
        ACME, agent_id="bot", key="far", value="Lunch is at noon.", metadata={"project": "x"}
    )
    unfiltered = await service.search(ACME, "deploys", agent_id="bot", limit=3)
    assert "far" not in {h.memory.key for h in unfiltered}
    hits = await service.search(ACME, "deploys", agent_id="bot", limit=3, metadata={"project": "x"})
    assert [h.memory.key for h in hits] == ["far"]


BAD: list[tuple[str, object, str, str]] = [
    ("not an object", ["project"], "metadata", "must be an object"),
    ("unknown operator", {"tier": {"$gt": 1}}, "metadata.tier.$gt", "unknown operator '$gt'"),
    ("operator beside $in", {"tier": {"$in": ["a"], "$nin": ["b"]}}, "metadata.tier.$nin", "$in"),
    ("top-level operator", {"$or": [{"a": 1}]}, "metadata.$or", "unknown operator"),
    ("nested object", {"owner": {"name": "x"}}, "metadata.owner", "not nested objects"),
    ("a list compared whole", {"tier": ["a", "b"]}, "metadata.tier", '{"$in": [values]}'),
    ("$in not a list", {"tier": {"$in": "a"}}, "metadata.tier.$in", "list of 1 to 100"),
    ("$in empty", {"tier": {"$in": []}}, "metadata.tier.$in", "list of 1 to 100"),
    ("$in too long", {"tier": {"$in": list(range(101))}}, "metadata.tier.$in", "1 to 100"),
    ("$in of objects", {"tier": {"$in": [{"a": 1}]}}, "metadata.tier.$in[0]", "a string"),
    ("$in of lists", {"tier": {"$in": ["a", ["b"]]}}, "metadata.tier.$in[1]", "a string"),
    ("not finite", {"n": float("inf")}, "metadata.n", "finite number"),
    ("NUL", {"n": "a\x00"}, "metadata.n", "a string"),
    ("empty key", {"": 1}, "metadata", "non-empty string"),
    ("too many keys", {f"k{i}": i for i in range(21)}, "metadata", "at most 20"),
]


@pytest.mark.parametrize(("name", "wanted", "field", "says"), BAD, ids=[b[0] for b in BAD])
async def test_a_bad_filter_is_refused_naming_the_key(
    service: MemoryService, name: str, wanted: object, field: str, says: str
):
    with pytest.raises(InvalidInput) as raised:
        await service.search(ACME, "deploys", metadata=wanted)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert says in str(raised.value)
