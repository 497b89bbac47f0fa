"""The one secret filter on every write path outside REST (issue 11): the store_memory
tool, long-term memory metadata, knowledge fields, and MemoryBank writes, each refused
with the field named; ``MemoryBank(secret_filter=False)`` opts out."""

from typing import Any

import pytest

from memstack import InvalidInput, ManualClock, ProcessingContext, ToolInputError
from memstack.bank import MemoryBank
from memstack.embeddings import HashEmbedder
from memstack.longterm import LongTermMemory
from memstack.secrets import find_secret
from memstack.service.knowledge import KnowledgeBase
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.stm import InProcessTier
from memstack.service.tools import StoreMemoryTool
from memstack.storage import InMemoryRecordStore
from tests.longterm.secret_corpus import _pem, tok

ACME = Principal(tenant="acme")
PEM = _pem("OPENSSH ")


@pytest.fixture
def service(store: InMemoryRecordStore) -> MemoryService:
    return MemoryService(
        records=store, embedder=HashEmbedder(), short_term=InProcessTier(), clock=ManualClock()
    )


def test_find_secret_names_the_path_and_never_the_secret():
    found = find_secret({"value": "fine", "metadata": {"a": [1, {"b": PEM}]}})
    assert found is not None
    assert (found.field, found.kind, found.in_key) == ("metadata.a[1].b", "private_key", False)
    assert "BEGIN" not in found.message("memory")
    assert find_secret({"value": "fine", "metadata": {"n": 3, "ok": [True, None]}}) is None


async def test_store_memory_tool_refuses_a_private_key_in_metadata(service: MemoryService):
    tool = StoreMemoryTool(service, ACME, agent_id="bot")
    params: dict[str, Any] = {"key": "ssh", "value": "the deploy key", "metadata": {"k": PEM}}
    with pytest.raises(ToolInputError) as excinfo:
        await tool.process(ProcessingContext(), params)
    assert excinfo.value.fields == ("metadata.k",)
    assert "looks like a secret (private key)" in str(excinfo.value)
    assert (await service.list(ACME)).total == 0


async def test_a_secret_in_the_key_is_refused(service: MemoryService):
    with pytest.raises(InvalidInput) as excinfo:
        await service.store(ACME, agent_id="bot", key=f"ghp_{tok(36)}", value="x")
    assert excinfo.value.field == "key"


async def test_knowledge_refuses_secrets_in_every_field(store: InMemoryRecordStore):
    kb = KnowledgeBase(records=store, embedder=HashEmbedder(), clock=ManualClock())
    cases: list[tuple[dict[str, Any], str]] = [
        ({"title": f"glpat-{tok(20)}", "text": "t"}, "title"),
        ({"title": "t", "text": f"use AKIA{tok(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}"}, "text"),
        ({"title": "t", "text": "t", "source": f"redis://:{tok(20)}@cache:6379"}, "source"),
        ({"title": "t", "text": "t", "tags": ["ok", f"hf_{tok(34)}"]}, "tags[1]"),
    ]
    for kwargs, field in cases:
        with pytest.raises(InvalidInput) as excinfo:
            await kb.add(ACME, **kwargs)
        assert excinfo.value.field == field
    assert (await kb.list(ACME))[1] == 0


async def test_long_term_memory_refuses_a_secret_in_metadata(memory: LongTermMemory):
    outcome = await memory.remember("The user deploys on Fridays", metadata={"key": PEM})
    assert outcome.status == "secret" and outcome.secret_kind == "private_key"
    keyed = await memory.remember("The user likes tea", metadata={f"sk-ant-api03-{tok(20)}": 1})
    assert keyed.status == "secret" and keyed.secret_kind == "anthropic_key"
    assert await memory.count() == 0


def test_bank_write_refuses_a_secret_and_changes_nothing():
    bank = MemoryBank()
    bank.write("bot", "notes")
    with pytest.raises(InvalidInput) as excinfo:
        bank.write("bot", f"deploy with\n{PEM}")
    assert excinfo.value.field == "content"
    assert bank.read("bot") == "notes"


async def test_bank_tool_refusal_is_a_message_for_the_model():
    write = MemoryBank().tools("bot")[1]
    with pytest.raises(ToolInputError) as excinfo:
        await write.process(ProcessingContext(), {"content": f"DB_PASSWORD={tok(12)}!9"})
    message = str(excinfo.value)
    assert "looks like a secret" in message and "Nothing was changed" in message
    assert excinfo.value.fields == ("content",)


def test_bank_secret_filter_opt_out():
    bank = MemoryBank(secret_filter=False)
    bank.write("bot", PEM)
    assert bank.read("bot") == PEM
    assert "secret_filter=False" in repr(bank)
    with pytest.raises(InvalidInput):
        MemoryBank(secret_filter="no")  # type: ignore[arg-type]
