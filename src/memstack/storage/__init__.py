"""memstack.storage: the one persistence seam, a record store with vector and keyword search.

Records live in namespaces; every backend implements ``RecordStore`` and passes the
same contract tests:

- ``InMemoryRecordStore``: the reference implementation, in process memory.
- ``SQLiteRecordStore``: the default, one file (FTS5 keywords, numpy vector scan).
- ``PostgresRecordStore``: PostgreSQL with pgvector and tsvector (``memstack[postgres]``).

``open_record_store(url)`` builds one from a URL.
"""

from memstack.storage.base import RecordStore, get_one
from memstack.storage.factory import open_record_store
from memstack.storage.memory import InMemoryRecordStore
from memstack.storage.postgres import PostgresRecordStore
from memstack.storage.sqlite import SQLiteRecordStore
from memstack.storage.types import Filter, Order, Record, ScoredRecord, Vector

__all__ = [
    "Filter",
    "InMemoryRecordStore",
    "Order",
    "PostgresRecordStore",
    "Record",
    "RecordStore",
    "SQLiteRecordStore",
    "ScoredRecord",
    "Vector",
    "get_one",
    "open_record_store",
]
