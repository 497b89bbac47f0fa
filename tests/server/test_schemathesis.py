"""schemathesis against a live ``memstack serve``: its own ``/openapi.json`` read over HTTP,
generated requests (valid and invalid) sent over HTTP with a real key. No response may be
a server error, and its status, content type, headers and body must be ones the document
gives that operation. (``negative_data_rejection`` is left out: the server ignores query
parameters it does not know, as HTTP APIs do, and the document cannot say so.)

Bounded (``MAX_EXAMPLES`` per operation and mode) to stay under a minute; a longer run of
every schemathesis check is ``st run <url>/openapi.json -H "Authorization: Bearer <key>"
--checks all``. (It replaces an earlier run over ASGI in process: over HTTP, the fast
path, the body limits and the server's own error handling are in what is fuzzed.)

Each operation is driven by its own Hypothesis strategy (``as_strategy``) rather than the
schemathesis pytest plugin, whose lazy loader does not run on pytest 9. Also: every 405
names in ``Allow`` the methods its path answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memstack.service.api_keys import ApiKeys
from memstack.wiring import open_records
from tests.servers import ServeProcess, serve_env, serving_memstack

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
MAX_EXAMPLES = 40  # per operation and mode: about 1,300 requests, 30 s
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")
FRAMING = {"content-length", "transfer-encoding"}
"""Headers that frame the message: a generated one (``content-length: 5z``) is refused by
uvicorn's HTTP parser with a plain 400 before any route sees the request, so no document
of memstack's operations can say it; the HTTP client sets them from the body instead."""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, str]]:
    tmp = tmp_path_factory.mktemp("schemathesis")
    db = tmp / "fuzz.db"
    records = open_records(f"sqlite:///{db}")
    try:
        key = ApiKeys(records).create(tenant="fuzz")[0]
    finally:
        records.close()
    with serving_memstack(["--db", str(db)], env=serve_env(), log=tmp / "serve.log") as served:
        yield served, key


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_every_response_is_as_documented(live: tuple[ServeProcess, str], mode: str):
    served, key = live
    schema = schemathesis.openapi.from_url(f"{served.url}/openapi.json", timeout=30)
    headers = {"Authorization": f"Bearer {key}"}
    operations = [_loaded(result) for result in schema.get_all_operations()]
    if mode == "negative":  # only an operation that takes input has invalid input
        operations = [o for o in operations if o.query or o.path_parameters or o.body]
    generation = schemathesis.GenerationMode(mode)
    counts = {o.label: _fuzz(o, generation, headers) for o in operations}
    print(f"\nschemathesis {mode} over HTTP: {sum(counts.values())} cases, 0 failures")
    for label, count in counts.items():
        print(f"  {count:4d}  {label}")
    assert len(counts) >= 12 and all(counts.values())
    assert "Traceback" not in Path(served.log).read_text(errors="replace")


def test_every_405_names_the_methods_its_path_answers(live: tuple[ServeProcess, str]):
    served, key = live
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as client:
        document = client.get("/openapi.json").json()
        for template, operations in document["paths"].items():
            path = _filled(template)
            declared = {method.upper() for method in operations}
            for method in set(METHODS) - declared - {"HEAD", "OPTIONS"}:
                answer = client.request(method, path)
                if answer.status_code != 405:  # another route of the path answers it
                    continue
                allowed = {m.strip() for m in answer.headers["Allow"].split(",")}
                assert declared <= allowed and method not in allowed, (method, path, allowed)
                for other in allowed:  # each method named is answered
                    assert client.request(other, path).status_code != 405, (other, path)


ID_SAMPLES = [
    "bot",
    "機器人",
    "support-bot.v2:eu@acme/1_a",
    "9",
    "x" * 128,
    "x" * 129,
    "",
    "_bot",
    "-bot",
    "bot\n",
    "bot 2",
    "bot\u0301",  # a combining mark: not a letter or digit to Python's re
    "bot#1",
]


USERS = "/api/users/"


def test_the_id_pattern_is_what_the_server_accepts(live: tuple[ServeProcess, str]):
    """Every agent or session id parameter and field of the keyed memories carries the id
    rule as ``pattern``, and a value matches it (within its lengths) exactly when the
    server takes it. A user's conversation session (``/api/users/...``) is a free label of
    the caller's chat, not a memstack id: it has a rule of its own."""
    served, key = live
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as client:
        document = client.get("/openapi.json").json()
        keyed = {
            **document,
            "paths": {k: v for k, v in document["paths"].items() if not k.startswith(USERS)},
        }
        bodies = _request_components(keyed)
        schemas = [
            *(
                p["schema"]
                for o in _operations(keyed)
                for p in o.get("parameters", [])
                if p["name"] in ("agent_id", "session_id")
            ),
            *(
                prop
                for name in bodies
                for field, prop in document["components"]["schemas"][name]["properties"].items()
                if field in ("agent_id", "session_id")
            ),
        ]
        assert len(schemas) >= 9
        rules = {json.dumps(_string(schema), sort_keys=True) for schema in schemas}
        assert len(rules) == 1, rules  # one rule, everywhere
        rule = _string(schemas[0])
        for value in ID_SAMPLES:
            documented = (
                rule["minLength"] <= len(value) <= rule["maxLength"]
                and re.search(rule["pattern"], value) is not None
            )
            for answer in (
                client.get("/api/memories", params={"agent_id": value}),
                client.get("/api/memories", params={"session_id": value}),
                client.post("/api/memories/search", json={"query": "x", "session_id": value}),
            ):
                assert answer.status_code == (200 if documented else 422), (value, answer.text)
        for name, prefix in (("memory_id", "mem_"), ("document_id", "doc_")):
            ids = [  # a user's memories have long-term memory's ids, not mem_/doc_ ones
                p["schema"]
                for o in _operations(keyed)
                for p in o.get("parameters", [])
                if p["name"] == name
            ]
            assert ids and all(re.search(i["pattern"], prefix + "0" * 32) for i in ids)


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for path in document["paths"].values() for o in path.values()]


def _request_components(document: dict[str, Any]) -> set[str]:
    """The names of the component schemas a request body is made of."""
    found: set[str] = set()
    todo = [o["requestBody"] for o in _operations(document) if "requestBody" in o]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            name = ref.rpartition("/")[2]
            if ref and name not in found:
                found.add(name)
                todo.append(document["components"]["schemas"][name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


def _string(schema: dict[str, Any]) -> dict[str, Any]:
    """The string branch of an optional parameter's schema, its description left out."""
    branch = next((b for b in schema.get("anyOf", []) if b.get("type") == "string"), schema)
    return {k: v for k, v in branch.items() if k in ("minLength", "maxLength", "pattern")}


def _filled(template: str) -> str:
    """A path of ``template`` with each parameter filled in."""
    return template.replace("{memory_id}", "mem_" + "0" * 32).replace(
        "{document_id}", "doc_" + "0" * 32
    )


def _loaded(result: object) -> Any:
    """The operation, or the reason schemathesis could not read it from the schema."""
    assert isinstance(result, Ok), result
    return result.ok()


def _fuzz(
    operation: Any,
    mode: schemathesis.GenerationMode,
    headers: dict[str, str],
) -> int:
    """How many generated cases of ``operation`` were sent and passed every check."""
    sent = 0

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        nonlocal sent
        for name in [n for n in case.headers or {} if n.lower() in FRAMING]:
            del case.headers[name]
        case.call_and_validate(headers=headers, checks=CHECKS, timeout=30)
        sent += 1

    run()
    return sent
