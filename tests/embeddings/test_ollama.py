"""OllamaEmbedder against httpx.MockTransport, with replies shaped like Ollama's /api/embed."""

import json

import httpx
import numpy as np
import pytest

from memstack.embeddings import Embedder, OllamaEmbedder
from memstack.errors import ConfigError, StoreUnavailable


def ollama_reply(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    return httpx.Response(
        200,
        json={
            "model": body["model"],
            "embeddings": [[float(len(text)), 3.0, 4.0] for text in body["input"]],
            "total_duration": 14143917,
            "load_duration": 1019500,
            "prompt_eval_count": 8,
        },
    )


def test_request_is_shaped_like_ollama_and_rows_are_normalized(mock_client):
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ollama_reply(request)

    embedder = OllamaEmbedder(base_url="http://ollama.test:11434/", client=mock_client(handler))
    vectors = embedder.embed_batch(["", "twelve chars"])

    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == "http://ollama.test:11434/api/embed"
    assert json.loads(request.content) == {
        "model": "nomic-embed-text",
        "input": ["", "twelve chars"],
    }
    np.testing.assert_allclose(vectors, [[0.0, 0.6, 0.8], [12 / 13, 3 / 13, 4 / 13]], rtol=1e-6)
    assert vectors.dtype == np.float32
    assert embedder.dim == 3
    assert embedder.model_id == "ollama:nomic-embed-text"
    assert isinstance(embedder, Embedder)


def test_batches_split_into_requests(mock_client):
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sizes.append(len(json.loads(request.content)["input"]))
        return ollama_reply(request)

    embedder = OllamaEmbedder(model="all-minilm", batch_size=2, client=mock_client(handler))
    assert embedder.embed_batch(["a", "b", "c", "d", "e"]).shape == (5, 3)
    assert sizes == [2, 2, 1]


def test_configured_dim_needs_no_request(mock_client):
    embedder = OllamaEmbedder(dim=768, client=mock_client(lambda r: pytest.fail("no request")))
    assert embedder.embed_batch([]).shape == (0, 768)


def test_unknown_model_says_to_pull_it(mock_client):
    client = mock_client(
        lambda request: httpx.Response(
            404, json={"error": 'model "nomic-embed-text" not found, try pulling it first'}
        )
    )
    with pytest.raises(ConfigError, match="ollama pull nomic-embed-text") as info:
        OllamaEmbedder(client=client).embed_batch(["a"])
    assert "not found, try pulling it first" in str(info.value)


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(500, json={"error": "llama runner process has terminated"}),
        httpx.Response(503, text="service unavailable"),
        httpx.Response(200, json={"model": "m"}),
        httpx.Response(200, json={"model": "m", "embeddings": [[1.0, 2.0], [3.0, 4.0]]}),
        httpx.Response(200, json={"model": "m", "embeddings": [[]]}),
    ],
)
def test_server_failures_and_bad_replies_are_store_unavailable(mock_client, response):
    embedder = OllamaEmbedder(client=mock_client(lambda request: response))
    with pytest.raises(StoreUnavailable):
        embedder.embed_batch(["a"])


def test_connection_refused_is_store_unavailable(mock_client):
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused")

    with pytest.raises(StoreUnavailable, match="cannot reach Ollama at http://localhost:11434"):
        OllamaEmbedder(client=mock_client(handler)).embed_batch(["a"])


def test_an_embedder_without_a_client_cannot_reach_a_real_server():
    """The conftest refuses httpx's real transport, even on loopback."""
    with OllamaEmbedder() as embedder, pytest.raises(RuntimeError, match="MockTransport"):
        embedder.embed_batch(["a"])
