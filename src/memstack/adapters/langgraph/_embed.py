"""Every embedder a LangGraph user passes, behind one interface the store calls.

LangGraph's ``IndexConfig["embed"]`` is a LangChain ``Embeddings``, a plain function
(sync or async) from texts to vectors, or a ``"provider:model"`` string; memstack users
pass a memstack ``Embedder``. ``StoreEmbedder`` takes any of them and returns float32
matrices of the configured size, from sync code (``documents``, ``query``) and from the
event loop (``adocuments``, ``aquery``): an async-only function still serves a sync
``put``, run on an event loop of its own, as a LangChain embedder's sync methods still
serve ``aput`` (LangChain runs them on an executor).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base.embed import ensure_embeddings

from memstack.embeddings import Embedder, Vectors
from memstack.errors import ConfigError, InvalidInput

__all__ = ["StoreEmbedder"]

SyncEmbed = Callable[[list[str]], Any]
AsyncEmbed = Callable[[list[str]], Awaitable[Any]]


class StoreEmbedder:
    """An embedder of any accepted kind; ``embeddings`` is what LangGraph's stores call
    ``store.embeddings`` (the LangChain object, or the memstack embedder as given)."""

    def __init__(self, embed: object, *, dims: int | None = None) -> None:
        if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
            raise InvalidInput(f"index.dims must be an int >= 1; got {dims!r}.", field="index.dims")
        self.dims = dims
        self.embeddings: object = embed
        self._sync: SyncEmbed | None
        self._async: AsyncEmbed | None
        self._sync_query: Callable[[str], Any] | None = None
        self._async_query: Callable[[str], Awaitable[Any]] | None = None
        if isinstance(embed, Embedder):
            self._memstack(embed)
        elif isinstance(embed, Embeddings | str):
            self._langchain(_langchain_embeddings(embed))
        elif callable(embed):
            self._function(embed)
        else:
            raise InvalidInput(
                f"index.embed is a {type(embed).__name__}; pass a LangChain Embeddings, a "
                "function from a list of texts to a list of vectors (sync or async), or a "
                "memstack Embedder such as LocalEmbedder().",
                field="index.embed",
            )

    def _memstack(self, embedder: Embedder) -> None:
        self.model_id = embedder.model_id
        self._sync = embedder.embed_batch
        self._async = None

    def _langchain(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self.model_id = _langchain_model_id(embeddings)
        self._sync, self._async = embeddings.embed_documents, embeddings.aembed_documents
        self._sync_query, self._async_query = embeddings.embed_query, embeddings.aembed_query

    def _function(self, function: Callable[..., Any]) -> None:
        name = getattr(function, "__qualname__", type(function).__qualname__)
        self.model_id = f"function:{getattr(function, '__module__', '')}.{name}"
        if _is_async(function):
            self._sync, self._async = None, function
        else:
            self._sync, self._async = function, None

    # -- sync ---------------------------------------------------------------------------

    def documents(self, texts: Sequence[str]) -> Vectors:
        """One row per text (no embedder call for none)."""
        items = list(texts)
        if not items:
            return np.zeros((0, self.dims or 1), dtype=np.float32)
        if self._sync is not None:
            return self._matrix(self._sync(items), len(items))
        assert self._async is not None
        return self._matrix(_run(self._async(items)), len(items))

    def query(self, text: str) -> Vectors:
        if self._sync_query is not None:
            return _first(self._matrix([self._sync_query(text)], 1))
        return _first(self.documents([text]))

    # -- async --------------------------------------------------------------------------

    async def adocuments(self, texts: Sequence[str]) -> Vectors:
        items = list(texts)
        if not items:
            return self.documents(items)
        if self._async is None:
            return await asyncio.to_thread(self.documents, items)
        return self._matrix(await self._async(items), len(items))

    async def aquery(self, text: str) -> Vectors:
        if self._async_query is not None:
            return _first(self._matrix([await self._async_query(text)], 1))
        return _first(await self.adocuments([text]))

    def _matrix(self, rows: Any, count: int) -> Vectors:
        """``rows`` as a float32 matrix, checked against ``dims`` and the text count."""
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(
                f"the embedder returned {type(rows).__name__}, not a list of vectors of one "
                "length; return one list of floats per text.",
                field="index.embed",
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != count:
            raise InvalidInput(
                f"the embedder returned {matrix.shape[0] if matrix.ndim else 0} vectors for "
                f"{count} texts; return one list of floats per text.",
                field="index.embed",
            )
        if self.dims is not None and matrix.shape[1] != self.dims:
            raise InvalidInput(
                f"index.dims is {self.dims} but the embedder returned {matrix.shape[1]}-"
                f"dimension vectors; set dims to {matrix.shape[1]}.",
                field="index.dims",
            )
        return matrix


def _first(matrix: Vectors) -> Vectors:
    row: Vectors = matrix[0]
    return row


def _is_async(function: Callable[..., Any]) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 - a callable object's method
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _langchain_embeddings(embed: Embeddings | str) -> Embeddings:
    try:
        return ensure_embeddings(embed)
    except ValueError as exc:  # a "provider:model" string without langchain installed
        raise ConfigError(f"index.embed: {exc}") from exc


def _langchain_model_id(embeddings: Embeddings) -> str:
    """The class and, when it says, the model: vectors of two models never mix."""
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    name = type(embeddings).__qualname__
    return f"langchain:{name}" + (f":{model}" if isinstance(model, str) and model else "")


def _run(awaitable: Awaitable[Any]) -> Any:
    """The result of an async embedder called from sync code: on this thread's own loop,
    or on a helper thread when this thread already runs one."""

    async def wait() -> Any:
        return await awaitable

    coroutine: Coroutine[Any, Any, Any] = wait()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
