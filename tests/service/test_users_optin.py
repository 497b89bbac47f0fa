"""Spec 001's opt-in for the users' long-term memory (issue 32): the server's
``MEMSTACK_MEMORY_ENABLED`` (on, off, unset) x the key's ``long_term`` right x the
request's ``memory_enabled``; and where the switch and the right come from: the
settings, the wiring, the stored key and ``memstack keys create --long-term``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memstack import ManualClock
from memstack.cli import main
from memstack.embeddings import HashEmbedder
from memstack.errors import ConfigError, Forbidden, InvalidInput
from memstack.service.api_keys import NAMESPACE, ApiKeys
from memstack.service.principal import Principal
from memstack.service.users import TurnIn, UserMemories
from memstack.settings import ServerSettings
from memstack.storage import RecordStore, SQLiteRecordStore
from memstack.wiring import open_records, open_services, services_from_settings

TURN = TurnIn(speaker="alice", text="I collect vintage maps.", session_id="s1", id="t0")
KEYS = {"with right": Principal(tenant="acme", long_term=True), "without": Principal(tenant="acme")}
CASES = [
    # server, key, request -> "stored" | "skipped" | "forbidden"
    (server, key, request, expected)
    for server in (True, False, None)
    for key in KEYS
    for request in (None, True, False)
    for expected in [
        "skipped"
        if request is False
        else "forbidden"
        if server is False or (server is None and key == "without")
        else "stored"
    ]
]


@pytest.mark.parametrize("server,key,request_switch,expected", CASES)
async def test_the_opt_in_matrix(
    records: RecordStore,
    clock: ManualClock,
    server: bool | None,
    key: str,
    request_switch: bool | None,
    expected: str,
):
    users = UserMemories(
        records=records, embedder=HashEmbedder(), memory_enabled=server, clock=clock
    )
    caller = KEYS[key]
    writes = [
        lambda: users.add_turns(caller, "u1", [TURN], memory_enabled=request_switch),
        lambda: users.remember(caller, "u1", "The user likes maps.", memory_enabled=request_switch),
    ]
    reads = [
        lambda: users.recall(caller, "u1", "maps", memory_enabled=request_switch),
        lambda: users.context(caller, "u1", "maps", memory_enabled=request_switch),
    ]
    for call in [*writes, *reads]:
        if expected == "forbidden":
            with pytest.raises(Forbidden) as raised:
                await call()
            assert raised.value.field == "memory_enabled"
            assert "MEMSTACK_MEMORY_ENABLED" in str(raised.value)
        else:
            await call()
    namespace = users.memory(caller, "u1").namespace
    assert records.count(namespace) == (2 if expected == "stored" else 0)
    if expected == "skipped":
        turns = (await users.add_turns(caller, "u1", [TURN], memory_enabled=False)).turns
        assert [(t.id, t.outcome) for t in turns] == [("t0", "skipped")]
        fact = await users.remember(caller, "u1", "x", memory_enabled=False)
        assert (fact.id, fact.outcome) == (None, "skipped")
    if expected == "stored":
        assert len(await users.recall(caller, "u1", "maps")) == 2
        assert await users.recall(caller, "u1", "maps", memory_enabled=False) == []
        assert await users.context(caller, "u1", "maps", memory_enabled=False) == ""


async def test_the_refusal_names_the_fix(records: RecordStore, clock: ManualClock):
    unset = UserMemories(records=records, embedder=HashEmbedder(), clock=clock)
    with pytest.raises(Forbidden) as raised:
        await unset.recall(KEYS["without"], "u1", "maps")
    assert "MEMSTACK_MEMORY_ENABLED=1" in str(raised.value)
    assert "memstack keys create --long-term" in str(raised.value)
    vetoed = UserMemories(
        records=records, embedder=HashEmbedder(), memory_enabled=False, clock=clock
    )
    with pytest.raises(Forbidden) as raised:
        await vetoed.recall(KEYS["with right"], "u1", "maps")
    assert "MEMSTACK_MEMORY_ENABLED=0" in str(raised.value)
    with pytest.raises(InvalidInput) as bad:
        await unset.recall(KEYS["with right"], "u1", "maps", memory_enabled="yes")  # type: ignore[arg-type]
    assert bad.value.field == "memory_enabled"


async def test_every_read_needs_the_opt_in_and_deleting_needs_the_right_only(
    records: RecordStore, clock: ManualClock
):
    on = UserMemories(records=records, embedder=HashEmbedder(), memory_enabled=True, clock=clock)
    stored = await on.remember(KEYS["without"], "u1", "The user likes maps.")
    assert stored.id is not None
    unset = UserMemories(records=records, embedder=HashEmbedder(), clock=clock)
    without = KEYS["without"]
    for call in (
        lambda: unset.memories(without, "u1"),
        lambda: unset.history(without, "u1", "x"),
        lambda: unset.job(without, "u1", "x"),
        lambda: unset.export(without, "u1"),
        lambda: unset.restore(without, "u1", [{"id": "a", "text": "b"}]),
        lambda: unset.forget(without, "u1", "x"),
        lambda: unset.erase(without, "u1"),
    ):
        with pytest.raises(Forbidden):
            await call()
    assert await on.forget(without, "u1", "unknown") is False  # the server's opt-in will do
    vetoed = UserMemories(
        records=records, embedder=HashEmbedder(), memory_enabled=False, clock=clock
    )
    assert await vetoed.forget(KEYS["with right"], "u1", stored.id) is True
    assert await vetoed.erase(KEYS["with right"], "u1") == 0


@pytest.mark.parametrize(
    "env,expected",
    [
        ({}, None),
        ({"MEMSTACK_MEMORY_ENABLED": "1"}, True),
        ({"MEMSTACK_MEMORY_ENABLED": "off"}, False),
        ({"NODETOOL_MEMORY_ENABLED": "true"}, True),
        ({"NODETOOL_MEMORY_ENABLED": "1", "MEMSTACK_MEMORY_ENABLED": "0"}, False),
        ({"MEMSTACK_MEMORY_ENABLED": " "}, None),
    ],
)
def test_the_server_switch_is_read_from_the_environment(env: dict[str, str], expected: bool | None):
    settings = ServerSettings.from_env(env, dotenv=None)
    assert settings.memory_enabled is expected
    assert ServerSettings.from_env(settings.to_env(), dotenv=None) == settings


def test_the_settings_name_a_bad_switch_and_read_the_model_and_cap():
    with pytest.raises(ConfigError, match="MEMSTACK_MEMORY_ENABLED"):
        ServerSettings.from_env({"MEMSTACK_MEMORY_ENABLED": "maybe"}, dotenv=None)
    env = {"MEMSTACK_LLM": "scripted:echo", "NODETOOL_MEMORY_MAX_ITEMS": "0"}
    settings = ServerSettings.from_env(env, dotenv=None)
    assert (settings.llm, settings.memory_max_items) == ("scripted:echo", 0)
    assert ServerSettings.from_env(env, dotenv=None, llm="ollama:qwen2.5:7b").llm == (
        "ollama:qwen2.5:7b"
    )
    assert ServerSettings.from_env(settings.to_env(), dotenv=None) == settings


def test_the_wiring_builds_the_users_from_the_settings(tmp_path: Path):
    settings = ServerSettings(
        db=tmp_path / "w.db", memory_enabled=True, memory_max_items=0, llm="scripted:echo"
    )
    services = services_from_settings(settings, env={})
    try:
        users = services.users
        assert (users.memory_enabled, users.max_items, users.extraction_model) == (True, 0, "echo")
        assert users.extraction_provider is not None
        assert users.records is services.records and users.embedder is services.embedder
    finally:
        services.close()
    plain = open_services(
        store_url=f"sqlite:///{tmp_path / 'p.db'}", redis_url=None, embedder=HashEmbedder()
    )
    try:
        assert (plain.users.memory_enabled, plain.users.extraction_provider) == (None, None)
    finally:
        plain.close()
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        services_from_settings(ServerSettings(db=tmp_path / "x.db", llm="openai:gpt"), env={})


def test_the_right_is_stored_with_the_key(tmp_path: Path):
    records = SQLiteRecordStore(tmp_path / "keys.db")
    records.setup()
    try:
        keys = ApiKeys(records)
        with_raw, with_info = keys.create(tenant="acme", long_term=True)
        without_raw, without_info = keys.create(tenant="acme", agents=["bot"])
        fresh = ApiKeys(records)
        assert [k.long_term for k in fresh.list()] == [True, False]
        principal = fresh.authenticate(with_raw)
        assert principal == Principal(tenant="acme", long_term=True)
        other = fresh.authenticate(without_raw)
        assert other is not None and other.long_term is False
        (record,) = records.get(NAMESPACE, [with_info.id])
        assert record.metadata["long_term"] is True
        with pytest.raises(InvalidInput) as raised:
            keys.create(tenant="acme", long_term="yes")  # type: ignore[arg-type]
        assert raised.value.field == "long_term"
    finally:
        records.close()
    assert without_info.long_term is False


def test_cli_creates_a_key_with_the_right(tmp_path: Path):
    db = str(tmp_path / "cli.db")
    runner = CliRunner()

    def create(*args: str) -> dict[str, Any]:
        done = runner.invoke(
            main, ["keys", "create", "--tenant", "acme", *args, "--db", db, "--json"]
        )
        assert done.exit_code == 0, done.output
        created: dict[str, Any] = json.loads(done.stdout)
        return created

    right, plain = create("--long-term"), create()
    assert (right["long_term"], plain["long_term"]) == (True, False)
    listed = json.loads(runner.invoke(main, ["keys", "list", "--db", db, "--json"]).stdout)
    assert {k["id"]: k["long_term"] for k in listed} == {right["id"]: True, plain["id"]: False}
    records = open_records(f"sqlite:///{db}")
    try:
        principal = ApiKeys(records).authenticate(right["key"])
    finally:
        records.close()
    assert principal == Principal(tenant="acme", long_term=True)


@pytest.mark.parametrize(
    "llm,env,message",
    [
        ("nonsense:x", {}, "not provider:model"),
        ("openai:gpt-4o-mini", {"OPENAI_API_KEY": ""}, "OPENAI_API_KEY"),
    ],
)
def test_serve_refuses_an_extraction_model_it_cannot_build(
    tmp_path: Path, llm: str, env: dict[str, str], message: str
):
    done = CliRunner().invoke(
        main, ["serve", "--db", str(tmp_path / "s.db"), "--port", "1", "--llm", llm], env=env
    )
    assert done.exit_code == 1
    assert "--llm" in done.output and message in done.output
    assert not (tmp_path / "s.db").exists()  # refused before anything opened
