"""Embedding settings, and ``resolve_embedder``: which embedder the settings ask for.

Resolution order (the documented one, except that with nothing configured the local model is
used instead of giving up):

0. ``local_model`` set (``MEMSTACK_LOCAL_MODEL``): that model folder, run locally
   (``embeddings/folder.py``); a provider or model set beside it must agree (local);
1. ``provider`` set (``MEMSTACK_MEMORY_EMBEDDING_PROVIDER``): that provider, with
   ``model`` or the provider's default model;
2. ``model`` set alone (``MEMSTACK_MEMORY_EMBEDDING_MODEL``): the provider the name
   implies (``openai:``/``gemini:``/``ollama:``/``local:``/``hash:`` prefix,
   ``gemini-embedding-*``, ``text-embedding-004`` and ``embedding-001`` -> gemini,
   other ``text-embedding-*`` -> openai, all-MiniLM-L6-v2 -> local, a known Ollama
   model or ``name:tag`` -> ollama), else the configured provider (OpenAI key first,
   then Gemini key, then Ollama URL);
3. ``OPENAI_API_KEY`` set: openai, ``text-embedding-3-small``;
4. ``GEMINI_API_KEY`` set: gemini, ``gemini-embedding-001``;
5. ``OLLAMA_API_URL`` set: ollama, ``nomic-embed-text``;
6. otherwise: local all-MiniLM-L6-v2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

from memstack._env import setting
from memstack.embeddings.base import Embedder
from memstack.embeddings.gemini import DEFAULT_GEMINI_MODEL, GeminiEmbedder
from memstack.embeddings.hashing import HashEmbedder
from memstack.embeddings.local import DEFAULT_LOCAL_MODEL, LocalEmbedder
from memstack.embeddings.ollama import DEFAULT_OLLAMA_MODEL, DEFAULT_OLLAMA_URL, OllamaEmbedder
from memstack.embeddings.openai import DEFAULT_OPENAI_BASE_URL, DEFAULT_OPENAI_MODEL, OpenAIEmbedder
from memstack.errors import ConfigError

__all__ = ["PROVIDERS", "EmbeddingSettings", "Provider", "resolve_embedder"]

Provider: TypeAlias = Literal["local", "openai", "gemini", "ollama", "hash"]
PROVIDERS: Final[tuple[Provider, ...]] = get_args(Provider)

_LOCAL_NAMES: Final = frozenset(
    {DEFAULT_LOCAL_MODEL.lower(), f"sentence-transformers/{DEFAULT_LOCAL_MODEL.lower()}"}
)
_GEMINI_NAMES: Final = frozenset({"text-embedding-004", "embedding-001"})
_OLLAMA_NAMES: Final = frozenset(
    {"nomic-embed-text", "mxbai-embed-large", "all-minilm", "snowflake-arctic-embed", "bge-m3"}
)


@dataclass(frozen=True, kw_only=True)
class EmbeddingSettings:
    """Which embedding model to use; read once from the environment at the edge."""

    model: str | None = None
    """``MEMSTACK_MEMORY_EMBEDDING_MODEL``: force a model, e.g. ``text-embedding-3-large``."""
    provider: str | None = None
    """``MEMSTACK_MEMORY_EMBEDDING_PROVIDER``: one of local, openai, gemini, ollama, hash."""
    openai_api_key: str | None = None
    """``OPENAI_API_KEY``."""
    openai_base_url: str | None = None
    """``OPENAI_BASE_URL``: an OpenAI-compatible API, default https://api.openai.com/v1."""
    gemini_api_key: str | None = None
    """``GEMINI_API_KEY``: a Gemini API key (Google AI Studio)."""
    ollama_url: str | None = None
    """``OLLAMA_API_URL``: e.g. http://localhost:11434."""
    local_model: str | None = None
    """``MEMSTACK_LOCAL_MODEL`` (or ``--local-model``): a local model folder to run
    instead of all-MiniLM-L6-v2, e.g. one ``memstack models export`` wrote."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> EmbeddingSettings:
        """Settings from ``env`` (pass ``os.environ`` at the edge); blank values are unset."""

        def read(name: str) -> str | None:
            value = setting(env, name)[1]  # MEMSTACK_* or its NODETOOL_* alias
            return value.strip() if value else None

        provider = read("MEMSTACK_MEMORY_EMBEDDING_PROVIDER")
        return cls(
            model=read("MEMSTACK_MEMORY_EMBEDDING_MODEL"),
            provider=provider.lower() if provider else None,
            openai_api_key=read("OPENAI_API_KEY"),
            openai_base_url=read("OPENAI_BASE_URL"),
            gemini_api_key=read("GEMINI_API_KEY"),
            ollama_url=read("OLLAMA_API_URL"),
            local_model=read("MEMSTACK_LOCAL_MODEL"),
        )


def resolve_embedder(settings: EmbeddingSettings) -> Embedder:
    """The embedder ``settings`` ask for (see the module docstring for the order).

    Raises ``ConfigError`` for an unknown provider, a model the chosen provider cannot
    run, or openai chosen with neither a key nor a base URL. Nothing is loaded or
    requested here: the local model loads, and remote APIs are called, on first use.
    """
    if settings.local_model is not None:
        return _folder(settings)
    provider, model = _choose(settings)
    if provider == "local":
        return _local(model)
    if provider == "hash":
        return _hash(model)
    if provider == "ollama":
        return OllamaEmbedder(
            model=model or DEFAULT_OLLAMA_MODEL, base_url=settings.ollama_url or DEFAULT_OLLAMA_URL
        )
    if provider == "gemini":
        if settings.gemini_api_key is None:
            raise ConfigError(
                "the gemini embedding provider needs GEMINI_API_KEY; set it, or choose "
                "another provider."
            )
        return GeminiEmbedder(api_key=settings.gemini_api_key, model=model or DEFAULT_GEMINI_MODEL)
    if settings.openai_api_key is None and settings.openai_base_url is None:
        raise ConfigError(
            "the openai embedding provider needs OPENAI_API_KEY (or OPENAI_BASE_URL for a "
            "server that takes no key); set it, or choose another provider."
        )
    return OpenAIEmbedder(
        api_key=settings.openai_api_key,
        model=model or DEFAULT_OPENAI_MODEL,
        base_url=settings.openai_base_url or DEFAULT_OPENAI_BASE_URL,
    )


def _choose(settings: EmbeddingSettings) -> tuple[Provider, str | None]:
    """The provider, and the model name without any ``provider:`` prefix."""
    model = settings.model
    prefixed = _split_prefix(model)
    if settings.provider is not None:
        provider = _check_provider(settings.provider)
        if prefixed is not None and prefixed[0] == provider:
            return prefixed
        return provider, model
    if prefixed is not None:
        return prefixed
    if model is not None:
        return _infer(model, settings), model
    if settings.openai_api_key is not None:
        return "openai", DEFAULT_OPENAI_MODEL
    if settings.gemini_api_key is not None:
        return "gemini", DEFAULT_GEMINI_MODEL
    if settings.ollama_url is not None:
        return "ollama", DEFAULT_OLLAMA_MODEL
    return "local", None


def _check_provider(value: str) -> Provider:
    for provider in PROVIDERS:
        if value.strip().lower() == provider:
            return provider
    raise ConfigError(
        f"embedding provider {value!r} is unknown; set MEMSTACK_MEMORY_EMBEDDING_PROVIDER "
        f"to one of {', '.join(PROVIDERS)}."
    )


def _split_prefix(model: str | None) -> tuple[Provider, str | None] | None:
    """``("openai", "text-embedding-3-large")`` for ``"openai:text-embedding-3-large"``.

    A bare provider name (``"hash"``, ``"local"``) means that provider's default model.
    """
    if model is None:
        return None
    head, _, rest = model.partition(":")
    for provider in PROVIDERS:
        if head.lower() == provider:
            return provider, rest or None
    return None


def _infer(model: str, settings: EmbeddingSettings) -> Provider:
    name = model.lower()
    if name in _LOCAL_NAMES:
        return "local"
    if name.removeprefix("models/") in _GEMINI_NAMES or name.startswith(
        ("gemini-embedding", "models/")
    ):
        return "gemini"
    if name.startswith("text-embedding-"):
        return "openai"
    if name.split(":", 1)[0] in _OLLAMA_NAMES or ":" in name:
        return "ollama"
    if settings.openai_api_key is not None:
        return "openai"
    if settings.gemini_api_key is not None:
        return "gemini"
    if settings.ollama_url is not None:
        return "ollama"
    raise ConfigError(
        f"cannot tell which provider serves embedding model {model!r}; set "
        f"MEMSTACK_MEMORY_EMBEDDING_PROVIDER to one of {', '.join(PROVIDERS)}."
    )


def _local(model: str | None) -> LocalEmbedder:
    if model is not None and model.lower() not in _LOCAL_NAMES:
        raise ConfigError(
            f"the local embedding provider runs {DEFAULT_LOCAL_MODEL} only, not {model!r}; "
            "unset MEMSTACK_MEMORY_EMBEDDING_MODEL or choose the openai, gemini or ollama "
            "provider."
        )
    return LocalEmbedder()


def _folder(settings: EmbeddingSettings) -> LocalEmbedder:
    """The model folder of ``local_model``; a provider or model named beside it that is not
    the local one is a conflict, not something to pick between silently."""
    if settings.provider is not None or settings.model is not None:
        provider, model = _choose(settings)
        if provider != "local" or model is not None:
            raise ConfigError(
                f"MEMSTACK_LOCAL_MODEL={settings.local_model!r} runs a local model folder, "
                f"but the embedding settings ask for {provider}:{model or 'its default'} "
                "(MEMSTACK_MEMORY_EMBEDDING_PROVIDER / _MODEL); unset one or the other."
            )
    return LocalEmbedder(folder=settings.local_model)


def _hash(model: str | None) -> HashEmbedder:
    if model is None or model.lower() == "hash":
        return HashEmbedder()
    if model.isdigit() and int(model) >= 1:
        return HashEmbedder(dim=int(model))
    raise ConfigError(
        f"the hash embedding provider takes a dimension as its model (e.g. hash:64), not {model!r}."
    )
