"""``/openapi.json`` tells the truth (issue 11): each operation lists the error statuses
it can answer, all with the real error body; every success body is a named model."""

import pytest

ERROR_REF = "#/components/schemas/ErrorResponse"
# (method, path): the error statuses beyond 401/405/503, which every /api route answers
EXPECTED = {
    ("post", "/api/memories"): {400, 403, 413, 422},
    ("post", "/api/memories:batch"): {400, 403, 413, 422},
    ("get", "/api/memories"): {403, 422},
    ("delete", "/api/memories"): {403, 422},
    ("post", "/api/memories/search"): {400, 403, 413, 422},
    ("post", "/api/memories/restore"): {400, 403, 413, 422},
    ("get", "/api/memories/{memory_id}"): {404, 422},
    ("get", "/api/memories/{memory_id}/history"): {404, 422},
    ("put", "/api/memories/{memory_id}"): {400, 403, 404, 413, 422},
    ("delete", "/api/memories/{memory_id}"): {403, 404, 422},
    ("get", "/api/context"): {403, 422},
    ("post", "/api/knowledge"): {400, 403, 413, 422},
    ("get", "/api/knowledge"): {422},
    ("post", "/api/knowledge/search"): {400, 413, 422},
    ("get", "/api/knowledge/{document_id}"): {404, 422},
    ("get", "/api/knowledge/{document_id}/status"): {404, 422},
    ("delete", "/api/knowledge/{document_id}"): {403, 404, 422},
    ("post", "/api/users/{user_id}/turns"): {400, 403, 413, 422},
    ("get", "/api/users/{user_id}/jobs/{job_id}"): {403, 404, 422},
    ("post", "/api/users/{user_id}/memories"): {400, 403, 413, 422},
    ("get", "/api/users/{user_id}/memories"): {403, 422},
    ("post", "/api/users/{user_id}/recall"): {400, 403, 413, 422},
    ("get", "/api/users/{user_id}/context"): {403, 422},
    ("get", "/api/users/{user_id}/memories/{memory_id}/history"): {403, 404, 422},
    ("delete", "/api/users/{user_id}/memories/{memory_id}"): {403, 404, 422},
    ("delete", "/api/users/{user_id}"): {403, 422},
    ("get", "/api/users/{user_id}/export"): {403, 422},
    ("post", "/api/users/{user_id}/import"): {400, 403, 413, 422},
    ("get", "/api/users"): {403, 422},
}


@pytest.fixture
async def spec(api):
    response = await api.get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def _operations(spec):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


async def test_each_operation_lists_its_error_statuses(spec):
    found = {
        (method, path): {int(s) for s in op["responses"] if int(s) >= 400} - {401, 405, 503}
        for method, path, op in _operations(spec)
        if path.startswith("/api/")
    }
    assert found == EXPECTED
    for method, path, op in _operations(spec):
        if path.startswith("/api/"):
            assert {"401", "405", "503"} <= set(op["responses"]), (method, path)


async def test_every_error_has_the_real_body_and_an_example(spec):
    for method, path, op in _operations(spec):
        for status, response in op["responses"].items():
            if int(status) < 400 or (method, path, status) == ("get", "/healthz", "503"):
                continue  # /healthz's 503 is a Health, checked below
            content = response["content"]["application/json"]
            assert content["schema"] == {"$ref": ERROR_REF}
            example = content["example"]["error"]  # a null field is left out of examples
            assert {"code", "message"} <= set(example) <= {"code", "message", "field"}
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    error = spec["components"]["schemas"]["ErrorInfo"]
    assert set(error["required"]) == {"code", "message", "field"}


async def test_every_503_says_when_to_retry_and_healthz_says_which_tier(spec):
    for method, path, op in _operations(spec):
        if "503" in op["responses"]:
            headers = op["responses"]["503"]["headers"]
            assert headers["Retry-After"]["schema"]["type"] == "integer", (method, path)
    health = spec["paths"]["/healthz"]["get"]["responses"]
    for status in ("200", "503"):
        schema = health[status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/Health"}
    fields = spec["components"]["schemas"]["Health"]["properties"]
    assert fields["status"]["enum"] == ["ok", "degraded"]
    assert fields["long_term"]["enum"] == ["up", "down"]
    assert fields["short_term"]["enum"] == ["up", "down", "in-process"]


# (method, path): its success statuses, where there are several
SUCCESSES = {("post", "/api/knowledge"): {"201", "202"}}
NO_CONTENT = {("delete", "/api/users/{user_id}/memories/{memory_id}")}
"""Operations answering 204: no body at all."""


async def test_every_success_body_is_a_named_model(spec):
    for method, path, op in _operations(spec):
        ok = {s: r for s, r in op["responses"].items() if int(s) < 400}
        assert len(ok) == 1 or set(ok) == SUCCESSES.get((method, path)), (method, path)
        if (method, path) in NO_CONTENT:
            assert set(ok) == {"204"} and "content" not in ok["204"], (method, path)
            continue
        for response in ok.values():
            schema = response["content"]["application/json"]["schema"]
            assert schema.get("$ref", "").startswith("#/components/schemas/"), (method, path)


async def test_request_bodies_carry_examples(spec):
    schemas = spec["components"]["schemas"]
    for name in (
        "MemoryCreate",
        "SearchRequest",
        "KnowledgeCreate",
        "KnowledgeSearch",
        "TurnsRequest",
        "FactCreate",
        "RecallRequest",
    ):
        assert schemas[name]["examples"], name
