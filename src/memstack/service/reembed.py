"""Embedding a store's namespaces again with another model (``memstack memories reembed``).

A namespace never mixes two models' vectors: they are not comparable, and often not even
the same length, so the store refuses a write or search with a model other than the one
a namespace records (``storage.backend.check_model``). Switching models therefore means
embedding every record again, every version and expired one included.

A namespace is embedded again beside itself, never in place: its records are copied, a
batch per transaction, with new vectors into ``Namespace("reembed", <its name>)``, which
no reader lists; then the copy replaces the namespace, in one transaction and only if
it holds the records the namespace holds then (``RecordStore.replace_namespace``). A
server may keep writing meanwhile: what it changed after its page was copied makes the
swap refuse, and the next pass copies just that, so nothing it wrote is lost. After
the swap, a server still on the old model is refused (``check_model``) until it is
restarted with the new one. Until the swap the namespace stays whole and searchable
with its old model; a run that stops half way (interrupted, crashed) is taken up where
it stopped by the next run, since a record already copied unchanged is not embedded
again; a copy whose namespace was emptied since (erased) is dropped, never put back.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

from memstack.embeddings import Embedder
from memstack.errors import WriteConflict
from memstack.service.knowledge_index import embedded_passage
from memstack.storage import Filter, Namespace, Record, RecordStore
from memstack.storage.backend import stamp
from memstack.storage.namespace import decode_part

__all__ = [
    "DEFAULT_BATCH",
    "PASSES",
    "NamespaceModel",
    "Progress",
    "Reembedded",
    "embedded_text",
    "namespace_models",
    "reembed",
    "to_reembed",
]

DEFAULT_BATCH: Final = 256
PASSES: Final = 5
"""Passes over a namespace that writers keep changing before a run gives up (each pass
after the first copies only what changed)."""
_EVERY: Final = Filter(include_expired=True, include_superseded=True)
"""Every record of a namespace: current, closed (history) and expired alike."""
_STAGING: Final = Namespace("reembed").prefix()

Progress = Callable[[str, int, int], None]
"""Told ``(namespace, records done, records in it)`` after each batch."""


@dataclass(frozen=True, kw_only=True)
class NamespaceModel:
    """A namespace with embeddings: their length and the model that made them."""

    namespace: str
    dim: int
    model_id: str | None
    records: int
    """Every record of it: current, closed and expired."""


@dataclass(frozen=True, kw_only=True)
class Reembedded:
    """One namespace embedded again: how many records, and from which model."""

    namespace: str
    records: int
    embedded: int
    """How many of them were embedded now (the others had no vector, or a run that
    stopped had copied them already)."""
    from_model: str | None


def namespace_models(records: RecordStore, prefix: str = "") -> list[NamespaceModel]:
    """Each namespace starting with ``prefix`` that holds embeddings, with their model."""
    found = []
    for name in records.namespaces(prefix):
        info = records.namespace_info(name)
        if info is not None and not name.startswith(_STAGING):
            count = records.count(name, _EVERY)
            found.append(
                NamespaceModel(namespace=name, dim=info.dim, model_id=info.model_id, records=count)
            )
    return found


def to_reembed(
    spaces: builtins.list[NamespaceModel], embedder: Embedder, *, every: bool = False
) -> builtins.list[NamespaceModel]:
    """Those of ``spaces`` whose vectors come from another model than ``embedder``'s
    (``every``: all of them)."""
    return [s for s in spaces if every or s.model_id != embedder.model_id or s.dim != embedder.dim]


def embedded_text(record: Record) -> str:
    """The text a record's vector is made from: its text, but for a knowledge passage,
    which is embedded as ``title: passage`` (``knowledge_index.embed_passages``)."""
    parts = record.namespace.split("/")
    passage = record.metadata.get("passage")
    if parts[0] == "kb" and parts[-1] == "chunks" and isinstance(passage, str):
        return embedded_passage(str(record.metadata.get("title", "")), passage)
    return record.text


def reembed(
    records: RecordStore,
    embedder: Embedder,
    *,
    prefix: str = "",
    every: bool = False,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> list[Reembedded]:
    """Embed again with ``embedder`` each namespace starting with ``prefix`` whose vectors
    come from another model (``every``: all of them). Returns what was done, namespace
    by namespace."""
    for staging in _orphans(records, prefix):
        records.delete_namespace(staging)
    done = []
    for space in to_reembed(namespace_models(records, prefix), embedder, every=every):
        done.append(_reembed_one(records, embedder, space, batch, progress))
    return done


def _reembed_one(
    records: RecordStore,
    embedder: Embedder,
    space: NamespaceModel,
    batch: int,
    progress: Progress | None,
) -> Reembedded:
    name = space.namespace
    staging = Namespace("reembed", name).encode()
    held = records.namespace_info(staging)
    if held is not None and held.model_id != embedder.model_id:
        records.delete_namespace(staging)  # a stopped run's copy, by yet another model
    embedded = 0
    for _ in range(PASSES):
        seen, copied = _copy_all(records, embedder, space, staging, batch, progress)
        embedded += copied
        _drop_gone(records, staging, seen)
        try:
            records.replace_namespace(staging, name)
        except WriteConflict:
            continue  # written meanwhile: the next pass copies only what changed
        return Reembedded(
            namespace=name, records=len(seen), embedded=embedded, from_model=space.model_id
        )
    raise WriteConflict(
        f"namespace {name!r} changed during each of {PASSES} passes of embedding it again; "
        "its copy is kept: run `memstack memories reembed` again when fewer writers are busy."
    )


def _copy_all(
    records: RecordStore,
    embedder: Embedder,
    space: NamespaceModel,
    staging: str,
    batch: int,
    progress: Progress | None,
) -> tuple[set[str], int]:
    """One pass over the namespace: each record not in the copy as it is now, copied.
    A pass reads as many pages as the namespace held when it began (and one more), so a
    writer adding records as fast as they are copied cannot keep it going; what it adds
    after that is the next pass's. Returns the ids seen and how many were embedded."""
    name = space.namespace
    pages = records.count(name, _EVERY) // batch + 2
    seen: set[str] = set()
    embedded = 0
    after: tuple[float, str] | None = None
    for _ in range(pages):
        page = records.list(name, filter=_EVERY, limit=batch, order="created_asc", after=after)
        if not page:
            break
        after = (page[-1].created_at, page[-1].id)
        seen.update(r.id for r in page)
        embedded += _copy_page(records, embedder, staging, page)
        if progress is not None:
            progress(name, len(seen), space.records)
    return seen, embedded


def _copy_page(
    records: RecordStore, embedder: Embedder, staging: str, page: builtins.list[Record]
) -> int:
    """The page's records copied into ``staging`` with new vectors, in one transaction;
    those copied already, unchanged since, are left. Returns how many were embedded."""
    held = records.fetch(staging, [r.id for r in page], _EVERY)
    todo = [r for r in page if r.id not in held or stamp(held[r.id]) != stamp(r)]
    if not todo:
        return 0
    embedded = [r for r in todo if r.embedding is not None]
    vectors = iter(embedder.embed_batch([embedded_text(r) for r in embedded]))
    copies = [
        replace(r, namespace=staging, embedding=None if r.embedding is None else next(vectors))
        for r in todo
    ]
    records.write(upserts=copies, model_id=embedder.model_id)
    return len(embedded)


def _drop_gone(records: RecordStore, staging: str, seen: set[str]) -> None:
    """Copies of records the namespace no longer holds (deleted since a stopped run)."""
    gone: builtins.list[str] = []
    after: tuple[float, str] | None = None
    while page := records.list(
        staging, filter=_EVERY, limit=DEFAULT_BATCH, order="created_asc", after=after
    ):
        after = (page[-1].created_at, page[-1].id)
        gone.extend(r.id for r in page if r.id not in seen)
    if gone:
        records.delete(staging, gone)


def _orphans(records: RecordStore, prefix: str) -> builtins.list[str]:
    """Copies whose namespace holds no record. ``replace_namespace`` swaps in one
    transaction, so no run stops half way through it: such a copy outlived a namespace
    emptied after the copy was made (erased, say), and is dropped, never put back."""
    staged = [n for n in records.namespaces(_STAGING) if _target(n).startswith(prefix)]
    return [n for n in staged if not records.count(_target(n), _EVERY)]


def _target(staging: str) -> str:
    """The namespace a copy in ``Namespace("reembed", name)`` is made for."""
    return decode_part(staging.removeprefix(_STAGING))
