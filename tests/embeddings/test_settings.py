"""EmbeddingSettings.from_env and resolve_embedder: the resolution table."""

import pytest

from memstack.embeddings import (
    EmbeddingSettings,
    GeminiEmbedder,
    HashEmbedder,
    LocalEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    resolve_embedder,
)
from memstack.errors import ConfigError

KEY = {"OPENAI_API_KEY": "sk-test"}
OLLAMA = {"OLLAMA_API_URL": "http://gpu-box:11434"}
BOTH = {**KEY, **OLLAMA}
GEMINI = {"GEMINI_API_KEY": "AIza-test"}


def model(name: str) -> dict[str, str]:
    return {"MEMSTACK_MEMORY_EMBEDDING_MODEL": name}


def provider(name: str) -> dict[str, str]:
    return {"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": name}


@pytest.mark.parametrize(
    ("env", "kind", "model_id"),
    [
        # nothing configured: the local model, not "give up"
        ({}, LocalEmbedder, "local:all-MiniLM-L6-v2"),
        # configured providers, OpenAI first
        (KEY, OpenAIEmbedder, "openai:text-embedding-3-small"),
        (OLLAMA, OllamaEmbedder, "ollama:nomic-embed-text"),
        (BOTH, OpenAIEmbedder, "openai:text-embedding-3-small"),
        # an explicit provider beats the configured ones
        ({**BOTH, **provider("ollama")}, OllamaEmbedder, "ollama:nomic-embed-text"),
        ({**BOTH, **provider("local")}, LocalEmbedder, "local:all-MiniLM-L6-v2"),
        ({**KEY, **provider("hash")}, HashEmbedder, "hash:64"),
        ({**provider(" Ollama ")}, OllamaEmbedder, "ollama:nomic-embed-text"),
        # explicit provider + model
        (
            {**BOTH, **provider("ollama"), **model("mxbai-embed-large")},
            OllamaEmbedder,
            "ollama:mxbai-embed-large",
        ),
        (
            {**KEY, **provider("openai"), **model("text-embedding-3-large")},
            OpenAIEmbedder,
            "openai:text-embedding-3-large",
        ),
        ({**provider("hash"), **model("hash:16")}, HashEmbedder, "hash:16"),
        ({**provider("hash"), **model("32")}, HashEmbedder, "hash:32"),
        # a model alone: the provider its name implies, over the configured ones
        ({**BOTH, **model("all-MiniLM-L6-v2")}, LocalEmbedder, "local:all-MiniLM-L6-v2"),
        ({**BOTH, **model("nomic-embed-text")}, OllamaEmbedder, "ollama:nomic-embed-text"),
        (
            {**BOTH, **model("text-embedding-3-large")},
            OpenAIEmbedder,
            "openai:text-embedding-3-large",
        ),
        ({**KEY, **model("ollama:my-embedder")}, OllamaEmbedder, "ollama:my-embedder"),
        ({**BOTH, **model("openai:my-embedder")}, OpenAIEmbedder, "openai:my-embedder"),
        (model("qwen3-embedding:0.6b"), OllamaEmbedder, "ollama:qwen3-embedding:0.6b"),
        (model("hash"), HashEmbedder, "hash:64"),
        (model("local"), LocalEmbedder, "local:all-MiniLM-L6-v2"),
        # a model whose name implies nothing: the configured provider serves it
        ({**BOTH, **model("e5-large")}, OpenAIEmbedder, "openai:e5-large"),
        ({**OLLAMA, **model("e5-large")}, OllamaEmbedder, "ollama:e5-large"),
        # Gemini (spec 001: GEMINI_API_KEY), after OpenAI and before Ollama
        (GEMINI, GeminiEmbedder, "gemini:gemini-embedding-001"),
        ({**GEMINI, **OLLAMA}, GeminiEmbedder, "gemini:gemini-embedding-001"),
        ({**KEY, **GEMINI}, OpenAIEmbedder, "openai:text-embedding-3-small"),
        ({**KEY, **GEMINI, **provider("gemini")}, GeminiEmbedder, "gemini:gemini-embedding-001"),
        (
            {**GEMINI, **provider("gemini"), **model("text-embedding-004")},
            GeminiEmbedder,
            "gemini:text-embedding-004",
        ),
        (
            {**BOTH, **GEMINI, **model("text-embedding-004")},
            GeminiEmbedder,
            "gemini:text-embedding-004",
        ),
        (
            {**GEMINI, **model("gemini-embedding-001")},
            GeminiEmbedder,
            "gemini:gemini-embedding-001",
        ),
        ({**GEMINI, **model("gemini:my-embedder")}, GeminiEmbedder, "gemini:my-embedder"),
        ({**GEMINI, **OLLAMA, **model("e5-large")}, GeminiEmbedder, "gemini:e5-large"),
        # blank values count as unset
        ({"OPENAI_API_KEY": " ", **model("")}, LocalEmbedder, "local:all-MiniLM-L6-v2"),
    ],
)
def test_resolution_table(env, kind, model_id):
    embedder = resolve_embedder(EmbeddingSettings.from_env(env))
    assert type(embedder) is kind
    assert embedder.model_id == model_id


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (provider("pinecone"), "one of local, openai, gemini, ollama, hash"),
        (provider("openai"), "needs OPENAI_API_KEY"),
        ({**KEY, **provider("gemini")}, "needs GEMINI_API_KEY"),
        (model("gemini-embedding-001"), "needs GEMINI_API_KEY"),
        ({**provider("local"), **model("text-embedding-3-small")}, "runs all-MiniLM-L6-v2 only"),
        ({**provider("hash"), **model("big")}, "takes a dimension"),
        (model("e5-large"), "cannot tell which provider"),
        ({**OLLAMA, **model("text-embedding-3-large")}, "needs OPENAI_API_KEY"),
    ],
)
def test_resolution_errors(env, message):
    with pytest.raises(ConfigError, match=message):
        resolve_embedder(EmbeddingSettings.from_env(env))


def test_urls_and_keys_reach_the_embedders():
    env = {**KEY, "OPENAI_BASE_URL": "http://vllm.test/v1", **OLLAMA}
    openai = resolve_embedder(EmbeddingSettings.from_env(env))
    assert isinstance(openai, OpenAIEmbedder)
    assert openai.base_url == "http://vllm.test/v1"
    assert openai._api_key == "sk-test"
    ollama = resolve_embedder(EmbeddingSettings.from_env({**env, **provider("ollama")}))
    assert isinstance(ollama, OllamaEmbedder)
    assert ollama.base_url == "http://gpu-box:11434"
    gemini = resolve_embedder(EmbeddingSettings.from_env({**GEMINI, **provider("gemini")}))
    assert isinstance(gemini, GeminiEmbedder)
    assert gemini._api_key == "AIza-test"
    assert gemini.base_url == "https://generativelanguage.googleapis.com/v1beta"


def test_a_base_url_alone_lets_openai_run_without_a_key():
    settings = EmbeddingSettings.from_env({**provider("openai"), "OPENAI_BASE_URL": "http://x/v1"})
    embedder = resolve_embedder(settings)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder._api_key is None


def test_from_env_reads_every_variable():
    settings = EmbeddingSettings.from_env(
        {
            "MEMSTACK_MEMORY_EMBEDDING_MODEL": "m",
            "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "OpenAI",
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": "u",
            "OLLAMA_API_URL": "o",
            "GEMINI_API_KEY": "g",
            "UNRELATED": "x",
        }
    )
    assert settings == EmbeddingSettings(
        model="m",
        provider="openai",
        openai_api_key="k",
        openai_base_url="u",
        gemini_api_key="g",
        ollama_url="o",
    )


def test_default_settings_are_empty():
    assert EmbeddingSettings.from_env({}) == EmbeddingSettings()
