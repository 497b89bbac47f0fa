"""memstack.storage: the one persistence seam, a record store with vector and keyword search.

Records live in namespaces (``Namespace``: one encoder, a reserved root per owner).
``RecordStore`` validates every call once and delegates to a narrow ``Backend``; every
backend passes the same contract tests:

- ``InMemoryRecordStore`` (``InMemoryBackend``): the reference, in process memory.
- ``SQLiteRecordStore`` (``SQLiteBackend``): the default, one file (FTS5 keywords,
  numpy vector scan).
- ``PostgresRecordStore`` (``PostgresBackend``): PostgreSQL with pgvector and tsvector
  (``memstack[postgres]``).

Every ranked answer (vector, keyword and hybrid search, listings by time) has one order
on every backend: exact ties are ordered by id ascending, at a ``k`` or ``limit``
boundary too (the smallest ids are kept). Ids compare as Python strings, by code point:
SQLite's BINARY collation and PostgreSQL's ``COLLATE "C"`` of UTF-8 text. Approximate
(HNSW) searches order their hits so, but cannot choose among rows tied across the ``k``
boundary inside the graph.

``open_record_store(url)`` builds one from a URL.
"""

from memstack.storage.backend import Backend, Cap, Expect, NamespaceInfo, WriteResult
from memstack.storage.base import NamespaceLike, RecordStore, get_one
from memstack.storage.factory import open_record_store
from memstack.storage.memory import InMemoryBackend, InMemoryRecordStore
from memstack.storage.namespace import Namespace
from memstack.storage.postgres import PostgresBackend, PostgresRecordStore
from memstack.storage.sqlite import SQLiteBackend, SQLiteRecordStore
from memstack.storage.types import Filter, MetadataIn, Order, Record, ScoredRecord, Vector

__all__ = [
    "Backend",
    "Cap",
    "Expect",
    "Filter",
    "InMemoryBackend",
    "InMemoryRecordStore",
    "MetadataIn",
    "Namespace",
    "NamespaceInfo",
    "NamespaceLike",
    "Order",
    "PostgresBackend",
    "PostgresRecordStore",
    "Record",
    "RecordStore",
    "SQLiteBackend",
    "SQLiteRecordStore",
    "ScoredRecord",
    "Vector",
    "WriteResult",
    "get_one",
    "open_record_store",
]
