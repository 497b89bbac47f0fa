"""OpenAIEmbedder against httpx.MockTransport, with replies shaped like the real API."""

import json

import httpx
import numpy as np
import pytest

from memstack.embeddings import Embedder, OpenAIEmbedder
from memstack.errors import ConfigError, InvalidInput, StoreUnavailable


def vector_for(text: str, dim: int = 4) -> list[float]:
    """A deterministic, not normalized vector: its first entry encodes the text's length."""
    return [float(len(text)), 1.0, 2.0, 3.0][:dim] + [0.5] * max(0, dim - 4)


def openai_reply(
    request: httpx.Request, *, reverse: bool = False, width: int | None = None
) -> httpx.Response:
    """The reply of OpenAI's API; ``width`` overrides the ``dimensions`` asked for."""
    body = json.loads(request.content)
    dim = width or body.get("dimensions", 4)
    data = [
        {"object": "embedding", "index": i, "embedding": vector_for(text, dim)}
        for i, text in enumerate(body["input"])
    ]
    if reverse:
        data.reverse()
    return httpx.Response(
        200,
        json={
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 8, "total_tokens": 8},
        },
    )


def openai_error(status: int, message: str, code: str | None = None) -> httpx.Response:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    return httpx.Response(status, json={"error": error})


def test_request_is_shaped_like_openai_and_rows_are_normalized(mock_client):
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return openai_reply(request)

    embedder = OpenAIEmbedder(
        api_key="sk-test",
        model="my-embedding-model",
        base_url="https://example.test/v1/",
        client=mock_client(handler),
    )
    vectors = embedder.embed_batch(["hi", "hello"])

    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == "https://example.test/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.content) == {
        "model": "my-embedding-model",
        "input": ["hi", "hello"],
        "encoding_format": "float",
    }
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    expected = np.array([vector_for("hi"), vector_for("hello")])
    np.testing.assert_allclose(
        vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6
    )
    assert embedder.model_id == "openai:my-embedding-model"
    assert isinstance(embedder, Embedder)


def test_out_of_order_data_is_sorted_by_index(mock_client):
    client = mock_client(lambda request: openai_reply(request, reverse=True))
    embedder = OpenAIEmbedder(api_key="k", model="custom", client=client)
    texts = ["a", "bbb", "cc"]
    vectors = embedder.embed_batch(texts)
    in_order = OpenAIEmbedder(api_key="k", model="custom", client=mock_client(openai_reply))
    np.testing.assert_array_equal(vectors, in_order.embed_batch(texts))
    assert vectors[0, 0] < vectors[2, 0] < vectors[1, 0]  # lengths 1 < 2 < 3


def test_batches_split_into_requests_of_at_most_batch_size(mock_client):
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sizes.append(len(json.loads(request.content)["input"]))
        return openai_reply(request)

    embedder = OpenAIEmbedder(api_key="k", model="m", batch_size=3, client=mock_client(handler))
    texts = [f"text {'x' * i}" for i in range(7)]
    vectors = embedder.embed_batch(texts)
    assert sizes == [3, 3, 1]
    assert vectors.shape == (7, 4)
    one_by_one = np.stack([embedder.embed_batch([t])[0] for t in texts])
    np.testing.assert_array_equal(vectors, one_by_one)


def test_default_batch_size_is_openais_2048_limit(mock_client):
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sizes.append(len(json.loads(request.content)["input"]))
        return openai_reply(request)

    OpenAIEmbedder(api_key="k", model="m", client=mock_client(handler)).embed_batch(["t"] * 2049)
    assert sizes == [2048, 1]


def test_dimensions_are_sent_and_become_dim(mock_client):
    bodies: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return openai_reply(request)

    embedder = OpenAIEmbedder(api_key="k", dimensions=8, client=mock_client(handler))
    assert embedder.dim == 8
    assert embedder.embed_batch(["a"]).shape == (1, 8)
    assert bodies[0]["dimensions"] == 8


def test_known_model_dim_needs_no_request(mock_client):
    embedder = OpenAIEmbedder(
        api_key="k",
        model="text-embedding-3-large",
        client=mock_client(lambda request: pytest.fail("no request expected")),
    )
    assert embedder.dim == 3072
    assert embedder.embed_batch([]).shape == (0, 3072)


def test_unknown_model_dim_is_learnt_from_the_first_reply(mock_client):
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return openai_reply(request)

    embedder = OpenAIEmbedder(api_key="k", model="my-model", client=mock_client(handler))
    assert embedder.embed_batch([]).shape == (0, 4)  # probes once
    assert embedder.dim == 4
    assert len(calls) == 1


def test_a_reply_of_another_width_is_an_error(mock_client):
    client = mock_client(lambda request: openai_reply(request, width=4))  # ignores dimensions
    embedder = OpenAIEmbedder(api_key="k", dimensions=16, client=client)
    with pytest.raises(StoreUnavailable, match=r"4-dimensional vectors .* expected 16"):
        embedder.embed_batch(["a"])


def test_no_api_key_sends_no_authorization_header(mock_client):
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return openai_reply(request)

    OpenAIEmbedder(
        api_key=None, model="m", base_url="http://vllm.test/v1", client=mock_client(handler)
    ).embed_batch(["a"])
    assert "authorization" not in seen[0].headers


@pytest.mark.parametrize(
    ("response", "error", "message"),
    [
        (
            openai_error(401, "Incorrect API key provided: sk-bad.", "invalid_api_key"),
            ConfigError,
            "OPENAI_API_KEY",
        ),
        (
            openai_error(403, "You are not allowed to use this model."),
            ConfigError,
            "OPENAI_API_KEY",
        ),
        (
            openai_error(404, "The model `nope` does not exist", "model_not_found"),
            ConfigError,
            "model name 'nope'",
        ),
        (openai_error(400, "'$.input' is invalid."), InvalidInput, "refused the texts"),
        (openai_error(429, "Rate limit reached"), StoreUnavailable, "retry later"),
        (openai_error(500, "The server had an error"), StoreUnavailable, "The server had an error"),
        (httpx.Response(502, text="<html>Bad Gateway</html>"), StoreUnavailable, "Bad Gateway"),
        (httpx.Response(200, text="not json"), StoreUnavailable, "non-JSON"),
        (httpx.Response(200, json={"object": "list"}), StoreUnavailable, "without a data list"),
        (
            httpx.Response(200, json={"data": [{"index": 0, "embedding": ["x"]}]}),
            StoreUnavailable,
            "not lists of numbers",
        ),
        (
            httpx.Response(200, json={"data": [{"index": 1, "embedding": [1.0]}]}),
            StoreUnavailable,
            "indexes",
        ),
    ],
)
def test_http_failures_become_memstack_errors(mock_client, response, error, message):
    embedder = OpenAIEmbedder(
        api_key="sk-bad", model="nope", client=mock_client(lambda request: response)
    )
    with pytest.raises(error, match=message):
        embedder.embed_batch(["a"])


def test_the_api_key_never_appears_in_error_messages(mock_client):
    client = mock_client(lambda request: openai_error(401, "Incorrect API key provided."))
    embedder = OpenAIEmbedder(api_key="sk-secret-123", model="m", client=client)
    with pytest.raises(ConfigError) as info:
        embedder.embed_batch(["a"])
    assert "sk-secret-123" not in str(info.value)


@pytest.mark.parametrize(
    ("exception", "message"),
    [
        (httpx.ConnectError("Connection refused"), "cannot reach OpenAI embeddings"),
        (httpx.ReadTimeout("timed out"), "timed out"),
    ],
)
def test_network_failures_are_store_unavailable(mock_client, exception, message):
    def handler(request: httpx.Request) -> httpx.Response:
        raise exception

    embedder = OpenAIEmbedder(api_key="k", model="m", client=mock_client(handler))
    with pytest.raises(StoreUnavailable, match=message) as info:
        embedder.embed_batch(["a"])
    assert info.value.__cause__ is exception


def test_non_string_item_is_named_before_any_request(mock_client):
    embedder = OpenAIEmbedder(api_key="k", client=mock_client(lambda r: pytest.fail("no request")))
    with pytest.raises(InvalidInput, match=r"texts\[1\]"):
        embedder.embed_batch(["a", {"b": 1}])  # type: ignore[list-item]


def test_an_own_client_is_closed_and_an_injected_one_is_not(mock_client):
    injected = mock_client(openai_reply)
    with OpenAIEmbedder(api_key="k", client=injected):
        pass
    assert not injected.is_closed
    own = OpenAIEmbedder(api_key="k")
    own.close()
    assert own._client.is_closed
