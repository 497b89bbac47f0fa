"""ChatSession: recall injected before the user's message, never persisted; extraction
after the turn, in the background; the opt-in and veto rules of long-term memory."""

import json
from collections.abc import Sequence

import pytest

from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput
from memstack.longterm import (
    EXTRACTION_PROMPT,
    LongTermMemory,
    create_default_long_term_memory,
)
from memstack.longterm.chat import ChatSession
from memstack.longterm.reconcile import RECONCILE_PROMPT
from memstack.longterm.render import RECALLED_PREAMBLE
from memstack.providers import Completion, Message, ScriptedProvider
from memstack.storage import InMemoryRecordStore

EXTRACTED = json.dumps(
    {"memories": [{"text": "The user's dog is called Biscuit.", "kind": "fact", "importance": 0.8}]}
)


def model(messages: Sequence[Message]) -> Completion:
    """Chat turns answer plainly; the extraction call (JSON wanted) returns one memory."""
    if EXTRACTION_PROMPT in messages[0].content:
        return Completion(content=EXTRACTED)
    if RECONCILE_PROMPT in messages[0].content:  # the one candidate is already known
        return Completion(content='{"decisions": [{"candidate": 0, "action": "none"}]}')
    return Completion(content=f"reply {sum(m.role == 'user' for m in messages)}")


def open_memory(
    store: InMemoryRecordStore, provider: ScriptedProvider, **kwargs
) -> LongTermMemory | None:
    return create_default_long_term_memory(
        user_id="alice",
        extraction_provider=provider,
        extraction_model="m",
        store=store,
        embedder=HashEmbedder(),
        **kwargs,
    )


@pytest.fixture
def store():
    store = InMemoryRecordStore()
    store.setup()
    yield store
    store.close()


async def test_recall_is_injected_before_the_message_and_never_persisted(store):
    provider = ScriptedProvider(responder=model)
    memory = open_memory(store, provider, enabled=True, env={})
    assert memory is not None
    session = ChatSession(provider=provider, model="m", memory=memory, system_prompt="Be kind.")
    await session.send("My dog is called Biscuit.")
    await session.wait_for_extraction()
    assert [i.text for i in await memory.items()] == ["The user's dog is called Biscuit."]
    extraction = provider.calls[1]
    assert extraction.json_output and [m.role for m in extraction.messages][-1] == "user"

    answer = await session.send("What is my dog called?")
    chat_call = provider.calls[2]
    roles = [m.role for m in chat_call.messages]
    assert roles == ["system", "user", "assistant", "system", "user"]
    block = chat_call.messages[3].content
    assert block.startswith("<recalled-memories>") and RECALLED_PREAMBLE in block
    assert "Biscuit" in block and chat_call.messages[4].content == "What is my dog called?"
    assert answer == "reply 2"
    assert [m.role for m in session.history] == ["system", "user", "assistant", "user", "assistant"]
    assert not any("<recalled-memories>" in m.content for m in session.history)


async def test_send_does_not_wait_for_extraction(store):
    provider = ScriptedProvider(responder=model)
    memory = open_memory(store, provider, enabled=True, env={})
    assert memory is not None
    session = ChatSession(provider=provider, model="m", memory=memory)
    await session.send("My dog is called Biscuit.")
    assert await memory.count() == 0  # mined in the background, after send returned
    await session.wait_for_extraction()
    assert await memory.count() == 1


@pytest.mark.parametrize(
    ("env", "enabled", "session_toggle", "turn_toggle", "used"),
    [
        ({}, None, None, None, False),  # default off
        ({"MEMSTACK_MEMORY_ENABLED": "1"}, None, None, None, True),  # operator opt-in
        ({"NODETOOL_MEMORY_ENABLED": "1"}, None, None, None, True),  # the spec's name
        ({}, True, None, None, True),  # the caller's opt-in
        ({"MEMSTACK_MEMORY_ENABLED": "1"}, False, None, None, False),  # caller veto
        ({"MEMSTACK_MEMORY_ENABLED": "0"}, True, None, None, False),  # global veto
        ({"MEMSTACK_MEMORY_ENABLED": "1"}, None, False, None, False),  # session toggle off
        ({"MEMSTACK_MEMORY_ENABLED": "1"}, None, None, False, False),  # this message: off
        ({"MEMSTACK_MEMORY_ENABLED": "1"}, None, True, False, False),  # the veto wins
    ],
)
async def test_opt_in_and_veto(store, env, enabled, session_toggle, turn_toggle, used):
    provider = ScriptedProvider(responder=model)
    seeded = open_memory(store, provider, enabled=True, env={})
    assert seeded is not None
    await seeded.remember("The user's dog is called Biscuit.", importance=0.9)
    memory = open_memory(store, provider, enabled=enabled, env=env)
    session = ChatSession(
        provider=provider, model="m", memory=memory, memory_enabled=session_toggle
    )
    await session.send("My dog Biscuit likes walks.", memory_enabled=turn_toggle)
    await session.wait_for_extraction()
    recalled = any("<recalled-memories>" in m.content for m in provider.calls[0].messages)
    assert recalled is used
    extractions = [c for c in provider.calls if EXTRACTION_PROMPT in c.messages[0].content]
    assert (len(extractions) == 1) is used


async def test_an_extraction_failure_does_not_break_the_chat(store, caplog):
    provider = ScriptedProvider(responder=model)
    memory = open_memory(store, provider, enabled=True, env={})
    assert memory is not None
    memory.extraction_model = None  # remember_conversation refuses: no extraction model
    session = ChatSession(provider=provider, model="m", memory=memory)
    assert await session.send("My dog is called Biscuit.") == "reply 1"
    await session.wait_for_extraction()
    assert "extraction failed" in caplog.text


@pytest.mark.parametrize(("kwargs", "field"), [({"model": " "}, "model")])
def test_bad_arguments(kwargs, field):
    with pytest.raises(InvalidInput) as excinfo:
        ChatSession(provider=ScriptedProvider([]), **kwargs)
    assert excinfo.value.field == field
