"""Issue 30: the one secret filter on every string every write path stores.

Each path gets every credential of the corpus (``tests/longterm/secret_corpus.py``) in
each field it stores: value, key, metadata values and keys (nested), ids, provenance; and
benign look-alikes, each in a third of a path's fields (an id field gets the benign
corpus's id-shaped words). A field takes only the texts its own format accepts (an
``agent_id`` takes ``eyJ...`` but not ``password = letmein``); the rest are left out of
its counts. Then the bytes of every store the path wrote (SQLite files with their
write-ahead logs, every Redis key and value, every row of the PostgreSQL schema) are
searched for every credential's tokens (``harness.needles``): none may be there, while
the benign texts stored are found. Printed per path and field: credentials caught of
those placed, benign texts refused of those placed (targets, per path and per field:
>= 97% caught, at most one benign text in 30 refused).

The paths: REST over real HTTP to a served app (SQLite and Redis: store, update, restore,
knowledge), MCP through the official client over the same server, the Python client,
``memstack memories import``; on SQLite and on PostgreSQL, the library
(``LongTermMemory``, ``MemoryBank``), the LangGraph store and the Agents SDK session (which
redacts, ``[REDACTED:<kind>]``, rather than refuses).
Working memory (``AgentMemory``) keeps nothing beyond its process: it is no write path.

A path added without being walked here fails ``test_every_write_route_is_walked``
(POST/PUT/PATCH routes of the app), the MCP test (the server's tool list) or
``test_every_client_method_is_walked`` (the clients' public methods), by name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from langgraph.store.base import PutOp, validate_op_namespace

from memstack.adapters.langgraph import MemstackStore
from memstack.adapters.openai_agents import MemstackSession
from memstack.bank import MemoryBank
from memstack.cli import main
from memstack.client import AsyncMemoryClient, MemoryClient
from memstack.context import ProcessingContext
from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput, ToolInputError
from memstack.longterm import LongTermMemory
from memstack.longterm.collection import Collection
from memstack.longterm.turns import Turn
from memstack.secrets import KINDS
from memstack.service.checks import check_key, check_metadata, check_provenance_detail
from memstack.service.knowledge import MAX_TITLE_CHARS
from memstack.service.types import check_id_part
from memstack.storage import PostgresRecordStore, RecordStore
from memstack.storage._validate import check_key as check_record_id
from memstack.transports.app import create_app
from memstack.transports.mem0.routes import NOT_SERVED_PATHS
from memstack.wiring import Services, open_records, open_services
from tests.mcp.conftest import http_client
from tests.mcp.test_stdio import error_text
from tests.security.harness import (
    BENIGN,
    SECRETS,
    Tally,
    accepts,
    anything,
    check_storage,
    file_bytes,
    postgres_bytes,
    redis_bytes,
)
from tests.server.conftest import LiveServer, serve_in_thread

Body = dict[str, Any]
Case = tuple[str, str, bool]
"""A corpus text: its label, the text, and whether it is a credential."""
SECRET_CASES: list[Case] = [(label, text, True) for label, text in SECRETS]
BENIGN_CASES: list[Case] = [(label, text, False) for label, text in BENIGN]


@dataclass(frozen=True)
class Slot:
    """One field of a write: whether a text fits it, the request body with the text in
    it, and the ``field`` a refusal must name; ``ids`` for an id field."""

    name: str
    fits: Callable[[str], bool]
    body: Callable[[str, int], Body]
    field: str
    ids: bool = False


def cases(fits: Callable[[str], bool], k: int, *, ids: bool = False) -> list[Case]:
    """What goes into the ``k``-th field of a path: every credential that fits it, and a
    third of the benign texts (each benign text goes into a third of a path's fields,
    which keeps the run short) or, for an id, the benign corpus's id-shaped words."""
    benign = BENIGN_IDS if ids else [c for i, c in enumerate(BENIGN_CASES) if i % 3 == k % 3]
    return [c for c in SECRET_CASES if fits(c[1])] + [c for c in benign if fits(c[1])]


def _id_words() -> list[Case]:
    """The words of the benign corpus an id could be: 8 characters or more with a digit
    or a separator (``session-7f3a9c2e4b1d``, ``user:42:profile``, a uuid, a sha)."""
    words: dict[str, str] = {}
    for label, text in BENIGN:
        for word in re.split(r"[\s,;'\"()]+", text):
            word = word.rstrip(".:")
            if len(word) >= 8 and re.search(r"[0-9_.:/@-]", word):
                words.setdefault(word, label)
    return [(f"{label} (id word)", word, False) for word, label in words.items()]


BENIGN_IDS = _id_words()


# -- the fields of a memory (POST /api/memories, store_memory, client.store, import) ------


def _memory(n: int, **changes: Any) -> Body:
    return {"agent_id": "sec-bot", "scope": "agent", "key": f"note-{n}", "value": "A note."} | (
        changes
    )


def _metadata(text: str) -> Body:
    return {"ctx": {"notes": ["ok", text]}}


MEMORY_SLOTS = [
    Slot("value", anything, lambda t, n: _memory(n, value=t), "value"),
    Slot("key", accepts(check_key), lambda t, n: _memory(n, key=t), "key"),
    Slot(
        "metadata (nested value)",
        accepts(lambda t: check_metadata(_metadata(t))),
        lambda t, n: _memory(n, metadata=_metadata(t)),
        "metadata.ctx.notes[1]",
    ),
    Slot(
        "metadata (nested key)",
        accepts(lambda t: check_metadata({"ctx": {t: "x"}})),
        lambda t, n: _memory(n, metadata={"ctx": {t: "x"}}),
        "metadata.ctx",
    ),
    Slot(
        "agent_id",
        accepts(lambda t: check_id_part(t, "agent_id")),
        lambda t, n: _memory(n, agent_id=t),
        "agent_id",
        ids=True,
    ),
    Slot(
        "session_id",
        accepts(lambda t: check_id_part(t, "session_id")),
        lambda t, n: _memory(n, scope="session", session_id=t),
        "session_id",
        ids=True,
    ),
    Slot(
        "provenance_detail",
        accepts(check_provenance_detail),
        lambda t, n: _memory(n, provenance_detail=t),
        "provenance_detail",
    ),
]

UPDATE_SLOTS = [
    Slot("value", anything, lambda t, n: {"value": t}, "value"),
    Slot(
        "metadata (nested value)",
        accepts(lambda t: check_metadata(_metadata(t))),
        lambda t, n: {"metadata": _metadata(t)},
        "metadata.ctx.notes[1]",
    ),
    Slot(
        "provenance_detail",
        accepts(check_provenance_detail),
        lambda t, n: {"provenance_detail": t},
        "provenance_detail",
    ),
]


def _document(n: int, **changes: Any) -> Body:
    return {"title": f"Runbook {n}", "text": "Restart the pods one at a time."} | changes


KNOWLEDGE_SLOTS = [
    Slot(
        "title",
        lambda t: len(t) <= MAX_TITLE_CHARS,
        lambda t, n: _document(n, title=t),
        "title",
    ),
    Slot("text", anything, lambda t, n: _document(n, text=t), "text"),
    Slot("tags", lambda t: len(t) <= 64, lambda t, n: _document(n, tags=["ops", t]), "tags[1]"),
    Slot("source", lambda t: len(t) <= 2_000, lambda t, n: _document(n, source=t), "source"),
]


def _restored(body: Body) -> Body:
    """A memory of ``MEMORY_SLOTS`` as ``POST /api/memories/restore`` takes it."""
    names = ("agent_id", "scope", "key", "session_id")
    identity: Body = {name: body[name] for name in names if name in body}
    version = {
        name: body[name] for name in ("value", "metadata", "provenance_detail") if name in body
    }
    return {"memories": [identity | {"versions": [version]}]}


# -- the served app: REST, MCP, the client and the CLI share it -----------------------------


@dataclass
class Served:
    live: LiveServer
    services: Services
    key: str
    folder: Path
    redis_url: str

    @property
    def url(self) -> str:
        return self.live.url

    def stored_bytes(self) -> bytes:
        return file_bytes(self.folder) + redis_bytes(self.redis_url)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Served]:
    """A real server on a loopback port: SQLite long-term tier, Redis short-term tier."""
    folder = tmp_path_factory.mktemp("served")
    services = open_services(
        store_url=f"sqlite:///{folder / 'server.db'}", redis_url=redis_url, embedder=HashEmbedder()
    )
    key = services.keys.create(tenant="sec30")[0]
    live = serve_in_thread(services)
    yield Served(live=live, services=services, key=key, folder=folder, redis_url=redis_url)
    live.server.should_exit = True
    live.thread.join(timeout=10)
    services.close()


def _refusal(response: httpx.Response, slot: Slot, path: str) -> bool:
    """True when the request was refused by the secret filter, naming the slot's field;
    False when it was stored. Anything else fails the test."""
    if response.status_code in (200, 201, 202):
        return False
    assert response.status_code == 422, f"{path} {slot.name}: {response.text}"
    error = response.json()["error"]
    assert "looks like a secret" in error["message"], error
    assert error["field"].endswith(slot.field), (slot.field, error)
    return True


REST_WRITES: dict[tuple[str, str], list[Slot]] = {
    ("POST", "/api/memories"): MEMORY_SLOTS,
    ("POST", "/api/memories:batch"): MEMORY_SLOTS,
    ("PUT", "/api/memories/{memory_id}"): UPDATE_SLOTS,
    ("POST", "/api/memories/restore"): MEMORY_SLOTS,
    ("POST", "/api/knowledge"): KNOWLEDGE_SLOTS,
}
REST_STORES_NOTHING = {
    ("POST", "/api/memories/search"): "a search: the query is embedded, never stored",
    ("POST", "/api/knowledge/search"): "a search: the query is embedded, never stored",
    ("*", "/mcp"): "the MCP server: its tools are walked by test_mcp",
    ("POST", "/api/users/{user_id}/turns"): "walked by tests/server/test_users_secrets.py",
    ("POST", "/api/users/{user_id}/memories"): "walked by tests/server/test_users_secrets.py",
    ("POST", "/api/users/{user_id}/import"): "walked by tests/server/test_users_secrets.py",
    ("POST", "/api/users/{user_id}/recall"): "a recall: the query is embedded, never stored",
    ("*", "/docs/assets"): "the API docs' static files",
    ("POST", "/v3/memories/add/"): "mem0's add: walked by tests/server/test_mem0_secrets.py",
    ("PUT", "/v1/memories/{memory_id}/"): "mem0's update: walked by test_mem0_secrets.py",
    ("PUT", "/v1/batch/"): "mem0's batch update: walked by test_mem0_secrets.py",
    ("POST", "/v3/memories/search/"): "mem0's search: the query is embedded, never stored",
    ("POST", "/v3/memories/"): "mem0's listing: its filters are read, never stored",
} | {
    (method, path): "mem0's platform route answered 404 not_served: stores nothing"
    for path in NOT_SERVED_PATHS
    for method in ("POST", "PUT", "PATCH")
}


def _write_routes(routes: Iterable[Any], prefix: str = "") -> set[tuple[str, str]]:
    """Every (method, path) of the app that may write, walking the routers it includes:
    POST, PUT and PATCH routes (in the OpenAPI document or not), and the routes and mounts
    that take any method (``*``)."""
    found: set[tuple[str, str]] = set()
    for route in routes:
        router = getattr(route, "original_router", None)
        if router is not None:
            found |= _write_routes(router.routes, prefix + router.prefix)
            continue
        path = route.path if route.path.startswith(prefix) else prefix + route.path
        methods = getattr(route, "methods", None)
        if methods is None:
            found.add(("*", path))
        found |= {(m, path) for m in ("POST", "PUT", "PATCH") if m in (methods or ())}
    return found


def test_every_write_route_is_walked(served: Served) -> None:
    app = create_app(served.services)
    unwalked = _write_routes(app.routes) - set(REST_WRITES) - set(REST_STORES_NOTHING)
    assert not unwalked, f"write routes this test does not walk: {sorted(unwalked)}"


async def test_rest(served: Served) -> None:
    tally = Tally("REST")
    headers = {"Authorization": f"Bearer {served.key}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=30) as http:
        # its own agent: the cap (200 an agent) evicts the oldest of sec-bot's
        base = await http.post("/api/memories", json=_memory(0, agent_id="put-bot"))
        memory_id = base.json()["id"]
        n = 0
        for (method, path), slots in REST_WRITES.items():
            for k, slot in enumerate(slots):
                for label, text, secret in cases(slot.fits, k, ids=slot.ids):
                    n += 1
                    body = slot.body(text, n)
                    if path.endswith("/restore"):
                        body = _restored(body)
                    elif path.endswith(":batch"):
                        body = {"memories": [body]}
                    url = path.replace("{memory_id}", memory_id)
                    response = await http.request(method, url, json=body)
                    stored = not _refusal(response, slot, path)
                    tally.add(f"{method} {path} {slot.name}", label, secret=secret, stored=stored)
    tally.check()
    check_storage(served.stored_bytes(), tally)


# -- MCP ------------------------------------------------------------------------------------

MCP_WRITES = {"store_memory": MEMORY_SLOTS, "update_memory": UPDATE_SLOTS}
MCP_WALKED_ELSEWHERE = {
    # The tools hand their fields to services.users, which the service test walks with
    # the corpus through every turn field; the REST doors over it are walked by
    # tests/server/test_users_secrets.py.
    "add_turns": "tests/service/test_users.py (the service every door calls)",
    "remember": "tests/service/test_users.py (the service every door calls)",
}
MCP_STORES_NOTHING = {
    "recall",
    "get_recalled_context",
    "forget",
    "search_memories",
    "list_memories",
    "get_memory",
    "memory_history",
    "delete_memory",
    "get_context",
    "search_knowledge",
    "delete_agent_memories",
    "list_agents",
}


def _mcp_fits(fits: Callable[[str], bool]) -> Callable[[str], bool]:
    """The MCP SDK parses a string argument of an optional field that reads as JSON
    (``{"password": "x"}``) and refuses it as not a string: it never reaches memstack."""

    def mcp_fits(text: str) -> bool:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        return fits(text) and isinstance(parsed, str)

    return mcp_fits


async def test_mcp(served: Served) -> None:
    tally = Tally("MCP")
    async with http_client(served.url, served.key) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        unwalked = tools - set(MCP_WRITES) - set(MCP_WALKED_ELSEWHERE) - MCP_STORES_NOTHING
        assert not unwalked, f"MCP tools this test does not walk: {sorted(unwalked)}"
        base = await client.call_tool("store_memory", _memory(0, agent_id="mcp-put-bot"))
        memory_id = (base.structured_content or {})["id"]
        n = 0
        for tool, slots in MCP_WRITES.items():
            for k, slot in enumerate(slots):
                fits = _mcp_fits(slot.fits)
                for label, text, secret in cases(fits, k, ids=slot.ids):
                    n += 1
                    arguments = slot.body(text, 10_000 + n)
                    if tool == "update_memory":
                        arguments = {"memory_id": memory_id, **arguments}
                    result = await client.call_tool(tool, arguments)
                    if result.is_error:
                        assert "looks like a secret" in error_text(result), error_text(result)
                    tally.add(
                        f"{tool} {slot.name}", label, secret=secret, stored=not result.is_error
                    )
    tally.check()
    check_storage(served.stored_bytes(), tally)


# -- the Python client and the CLI ----------------------------------------------------------

CLIENT_WRITES: dict[str, list[Slot]] = {
    "store": MEMORY_SLOTS,
    "store_many": MEMORY_SLOTS,
    "update": UPDATE_SLOTS,
    "add_document": KNOWLEDGE_SLOTS,
}
CLIENT_WALKED_ELSEWHERE = {
    "import_jsonl": "test_cli_import (memstack memories import calls it)",
    "restore": "test_cli_import (import_jsonl sends restore calls)",
    "add_turns": "tests/server/test_users_secrets.py (the route it calls)",
    "remember": "tests/server/test_users_secrets.py (the route it calls)",
    "import_user": "tests/server/test_users_secrets.py (the route it calls)",
}
CLIENT_STORES_NOTHING = {
    "get", "history", "delete", "delete_many", "list", "search", "context", "get_document",
    "document_status", "list_documents", "search_knowledge", "delete_document", "health",
    "wait_for_document", "iter_memories", "export_jsonl", "send", "close", "aclose",
    "base_url", "get_job", "recall", "recalled_context", "user_memories", "user_history",
    "forget", "erase_user", "export_user", "list_users",
}  # fmt: skip


def test_every_client_method_is_walked() -> None:
    known = set(CLIENT_WRITES) | set(CLIENT_WALKED_ELSEWHERE) | CLIENT_STORES_NOTHING
    for client in (MemoryClient, AsyncMemoryClient):
        public = {name for name in dir(client) if not name.startswith("_")}
        assert not public - known, f"{client.__name__} methods not walked: {public - known}"


def _client_call(client: MemoryClient, method: str, memory_id: str, body: Body) -> None:
    if method == "store":
        rest = {k: v for k, v in body.items() if k not in ("agent_id", "key", "value")}
        client.store(body["agent_id"], body["key"], body["value"], **rest)
    elif method == "store_many":
        client.store_many([body])
    elif method == "update":
        client.update(memory_id, **body)
    else:
        client.add_document(**body)


def test_client(served: Served) -> None:
    tally = Tally("Python client")
    with MemoryClient(served.url, api_key=served.key) as client:
        memory_id = client.store("client-put-bot", "base", "A note.")["id"]
        n = 20_000
        for method, slots in CLIENT_WRITES.items():
            for k, slot in enumerate(slots):
                for label, text, secret in cases(slot.fits, k, ids=slot.ids):
                    n += 1
                    try:
                        _client_call(client, method, memory_id, slot.body(text, n))
                        stored = True
                    except InvalidInput as exc:
                        assert "looks like a secret" in str(exc), exc
                        assert (exc.field or "").endswith(slot.field), (slot.field, exc.field)
                        stored = False
                    tally.add(f"{method} {slot.name}", label, secret=secret, stored=stored)
    tally.check()
    check_storage(served.stored_bytes(), tally)


def test_cli_import(served: Served, tmp_path: Path) -> None:
    tally = Tally("memstack memories import")
    # The server is plain HTTP: no CA bundle for httpx to load (40 ms a command otherwise).
    (tmp_path / "no-certs").mkdir()
    env: dict[str, str | None] = {
        "MEMSTACK_URL": served.url,
        "MEMSTACK_API_KEY": served.key,
        "SSL_CERT_FILE": None,
        "SSL_CERT_DIR": str(tmp_path / "no-certs"),
    }
    runner = CliRunner()
    line = tmp_path / "export.jsonl"
    n = 30_000
    for k, slot in enumerate(MEMORY_SLOTS):
        for label, text, secret in cases(slot.fits, k, ids=slot.ids):
            n += 1
            line.write_text(json.dumps(slot.body(text, n)) + "\n", encoding="utf-8")
            result = runner.invoke(main, ["memories", "import", str(line)], env=env)
            if result.exit_code != 0:
                assert "looks like a secret" in result.output, result.output
            tally.add(f"import {slot.name}", label, secret=secret, stored=result.exit_code == 0)
    tally.check()
    check_storage(served.stored_bytes(), tally)


# -- the library and the adapters, on SQLite and on PostgreSQL ------------------------------


@dataclass
class Backend:
    records: RecordStore
    stored_bytes: Callable[[], bytes]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A record store and what it has written: the SQLite file (with its log), or every
    row of a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        records = open_records(f"sqlite:///{tmp_path / 'store.db'}")
        yield Backend(records=records, stored_bytes=lambda: file_bytes(tmp_path))
    else:
        url: str = request.getfixturevalue("postgres_url")
        schema: str = request.getfixturevalue("pg_schema")
        records = PostgresRecordStore(url, schema=schema)
        records.setup()
        yield Backend(records=records, stored_bytes=lambda: postgres_bytes(url, schema))
    records.close()


def _non_empty(limit: int) -> Callable[[str], bool]:
    return lambda t: bool(t.strip()) and len(t) <= limit


async def test_long_term_memory(backend: Backend) -> None:
    tally = Tally("LongTermMemory")
    records = backend.records
    embedder = HashEmbedder()

    def memory(**ids: str) -> LongTermMemory:
        collection = Collection(**({"user_id": "ada"} | ids))
        return LongTermMemory(collection=collection, store=records, embedder=embedder)

    ltm = memory()
    calls: dict[str, tuple[Callable[[str], bool], Callable[[str, int], Any]]] = {
        "remember text": (anything, lambda t, n: ltm.remember(t)),
        "remember metadata (nested value)": (
            anything,
            lambda t, n: ltm.remember(f"Plain fact {n}.", metadata=_metadata(t)),
        ),
        "remember metadata (nested key)": (
            anything,
            lambda t, n: ltm.remember(f"Plain fact {n}.", metadata={"ctx": {t: 1}}),
        ),
        "remember provenance_detail": (
            anything,
            lambda t, n: ltm.remember(f"Plain fact {n}.", provenance_detail=t),
        ),
        "turn text": (
            _non_empty(3_000),
            lambda t, n: ltm.remember_turns([Turn(speaker="ada", text=t, time=n, session_id="s")]),
        ),
        "turn session_id": (
            _non_empty(200),
            lambda t, n: ltm.remember_turns(
                [Turn(speaker="ada", text="Hi.", time=n, session_id=t)]
            ),
        ),
        "turn id": (
            accepts(lambda t: check_record_id(t, "id")),
            lambda t, n: ltm.remember_turns(
                [Turn(speaker="ada", text="Hi.", time=n, session_id="s", id=t)]
            ),
        ),
        "collection user_id": (
            _non_empty(200),
            lambda t, n: memory(user_id=t).remember(f"Plain fact {n}."),
        ),
        "collection workspace_id": (
            _non_empty(200),
            lambda t, n: memory(workspace_id=t).remember(f"Plain fact {n}."),
        ),
    }
    n = 0
    for k, (slot, (fits, call)) in enumerate(calls.items()):
        for label, text, secret in cases(fits, k):
            n += 1
            try:
                outcome = await call(text, n)
                outcomes = outcome if isinstance(outcome, list) else [outcome]
                stored = all(o.status != "secret" for o in outcomes)
            except InvalidInput as exc:
                assert "looks like a secret" in str(exc), exc
                stored = False
            tally.add(slot, label, secret=secret, stored=stored)
    tally.check()
    check_storage(backend.stored_bytes(), tally)


async def test_memory_bank(backend: Backend) -> None:
    tally = Tally("MemoryBank")
    records = backend.records
    bank = MemoryBank(store=records)
    name_fits = accepts(lambda t: MemoryBank(namespace=t, secret_filter=False))

    async def tool_write(agent: str) -> None:
        write = bank.tools(agent)[1]
        await write.process(ProcessingContext(), {"content": "Plain notes."})

    async def call(slot: str, text: str) -> None:
        if slot == "write content":
            bank.write("bot", text)
        elif slot == "write key (agent name)":
            bank.write(text, "Plain notes.")
        elif slot == "tools agent name":
            await tool_write(text)
        else:
            MemoryBank(store=records, namespace=text).write("bot", "Plain notes.")

    for k, (slot, fits) in enumerate(
        {
            "write content": anything,
            "write key (agent name)": _non_empty(1_000),
            "tools agent name": _non_empty(1_000),
            "bank name": name_fits,
        }.items()
    ):
        for label, text, secret in cases(fits, k):
            try:
                await call(slot, text)
                stored = True
            except (InvalidInput, ToolInputError) as exc:
                assert "looks like a secret" in str(exc), exc
                stored = False
            tally.add(slot, label, secret=secret, stored=stored)
    tally.check()
    check_storage(backend.stored_bytes(), tally)


# -- the adapters ---------------------------------------------------------------------------


def _label_fits(text: str) -> bool:
    try:
        validate_op_namespace(PutOp(namespace=("notes", text), key="k", value={}))
        check_record_id(f"lg/default/notes/{text}", "namespace")
    except Exception:
        return False
    return True


def test_langgraph_store(backend: Backend) -> None:
    tally = Tally("LangGraph store")
    records = backend.records
    store = MemstackStore(records, embedder=HashEmbedder())
    calls: dict[str, tuple[Callable[[str], bool], Callable[[str, int], object]]] = {
        "put value (nested)": (
            anything,
            lambda t, n: store.put(("notes",), f"k{n}", {"note": {"text": ["ok", t]}}),
        ),
        "put value key": (anything, lambda t, n: store.put(("notes",), f"k{n}", {t: 1})),
        "put key": (
            accepts(lambda t: check_record_id(t, "key")),
            lambda t, n: store.put(("notes",), t, {"note": "plain"}),
        ),
        "put namespace label": (
            _label_fits,
            lambda t, n: store.put(("notes", t), f"k{n}", {"note": "plain"}),
        ),
        "batch value": (
            anything,
            lambda t, n: store.batch([PutOp(("notes",), f"b{n}", {"text": t})]),
        ),
        "store name": (
            _label_fits,
            lambda t, n: MemstackStore(records, name=t).put(("notes",), "k", {"note": "plain"}),
        ),
    }
    n = 0
    for k, (slot, (fits, call)) in enumerate(calls.items()):
        for label, text, secret in cases(fits, k):
            n += 1
            try:
                call(text, n)
                stored = True
            except InvalidInput as exc:
                assert "looks like a secret" in str(exc), exc
                stored = False
            tally.add(slot, label, secret=secret, stored=stored)
    tally.check()
    check_storage(backend.stored_bytes(), tally)


AGENT_ITEMS: dict[str, Callable[[str], Body]] = {
    "user message": lambda t: {"role": "user", "content": t},
    "assistant message parts": lambda t: {
        "role": "assistant",
        "content": [{"type": "output_text", "text": t, "annotations": []}],
    },
    "function call arguments": lambda t: {
        "type": "function_call",
        "call_id": "c1",
        "name": "lookup",
        "arguments": json.dumps({"q": t}),
    },
    "function call output": lambda t: {
        "type": "function_call_output",
        "call_id": "c1",
        "output": t,
    },
}
_KINDS = KINDS | {"random_token", "too_many_candidates"}


async def test_agents_sdk_session_redacts(backend: Backend) -> None:
    """An item is never refused (a run must not break): a credential in it is stored as
    ``[REDACTED:<kind>]``. Caught: the stored item holds a redaction; a benign text
    counts as refused when its item was changed."""
    tally = Tally("Agents SDK session")
    records = backend.records
    session = MemstackSession("chat-1", records)
    for k, (slot, item) in enumerate(AGENT_ITEMS.items()):
        for label, text, secret in cases(anything, k):
            given = item(text)
            await session.add_items([given])  # type: ignore[list-item]
            (kept,) = await session.get_items(limit=1)
            redactions = _redactions(json.dumps(kept))
            assert redactions <= _KINDS, redactions
            changed = kept != given
            assert changed == bool(redactions), (label, kept)
            tally.add(slot, label, secret=secret, stored=not changed)
    for label, text, secret in cases(anything, len(AGENT_ITEMS)):  # an id: refused
        try:
            await MemstackSession(text, records).add_items([{"role": "user", "content": "Hi."}])
            stored = True
        except InvalidInput as exc:
            assert exc.field == "session_id" and "looks like a secret" in str(exc)
            stored = False
        tally.add("session_id", label, secret=secret, stored=stored)
    tally.check()
    check_storage(backend.stored_bytes(), tally)


def _redactions(text: str) -> set[str]:
    kinds: set[str] = set()
    for part in text.split("[REDACTED:")[1:]:
        kinds.add(part.split("]", 1)[0])
    return kinds
