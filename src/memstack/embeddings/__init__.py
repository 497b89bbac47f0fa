"""Embeddings: text in, unit-length float32 vectors out.

- ``Embedder``: the protocol (``embed_batch``, ``dim``, ``model_id``); ``embed`` embeds one text.
- ``LocalEmbedder``: all-MiniLM-L6-v2 on this machine (onnxruntime, offline); the default.
- ``OpenAIEmbedder``, ``GeminiEmbedder``, ``OllamaEmbedder``: remote APIs over httpx.
- ``HashEmbedder``: a deterministic fake for tests.
- ``BatchingEmbedder``, ``CachedEmbedder``: wrappers that merge concurrent calls into
  calls made by threads of their own, and cache vectors per text.
- ``EmbeddingSettings`` and ``resolve_embedder``: pick one from the environment.
"""

from memstack.embeddings.base import Embedder, Vectors, embed, l2_normalize
from memstack.embeddings.batching import BatchingEmbedder
from memstack.embeddings.cache import CachedEmbedder
from memstack.embeddings.gemini import DEFAULT_GEMINI_BASE_URL, DEFAULT_GEMINI_MODEL, GeminiEmbedder
from memstack.embeddings.hashing import HashEmbedder
from memstack.embeddings.local import DEFAULT_LOCAL_MODEL, LocalEmbedder
from memstack.embeddings.ollama import DEFAULT_OLLAMA_MODEL, DEFAULT_OLLAMA_URL, OllamaEmbedder
from memstack.embeddings.openai import DEFAULT_OPENAI_BASE_URL, DEFAULT_OPENAI_MODEL, OpenAIEmbedder
from memstack.embeddings.settings import PROVIDERS, EmbeddingSettings, Provider, resolve_embedder

__all__ = [
    "DEFAULT_GEMINI_BASE_URL",
    "DEFAULT_GEMINI_MODEL",
    "DEFAULT_LOCAL_MODEL",
    "DEFAULT_OLLAMA_MODEL",
    "DEFAULT_OLLAMA_URL",
    "DEFAULT_OPENAI_BASE_URL",
    "DEFAULT_OPENAI_MODEL",
    "PROVIDERS",
    "BatchingEmbedder",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingSettings",
    "GeminiEmbedder",
    "HashEmbedder",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "Provider",
    "Vectors",
    "embed",
    "l2_normalize",
    "resolve_embedder",
]
