"""The PostgreSQL schema as an append-only list of numbered migrations.

Never edit a released migration; append a new one. Statements name tables as
``{schema}.records``; the store fills in its (checked, quoted) schema name.

Choices:
- ``embedding`` is an untyped ``vector`` plus a ``dim`` column, so namespaces embedded
  by different models (384, 768, 1536 dimensions...) share one table; a search only
  compares rows of the query's dimension.
- No HNSW index. Searches are scoped to one namespace (one user's memories), where an
  exact scan over the ``(namespace, dim)`` index is fast and exact; an approximate index
  post-filters by namespace and would drop true neighbours. A later migration can add
  ``CREATE INDEX ... USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dim = 384``
  for one very large namespace.
- ``namespace_info`` (2) keeps each namespace's embedding dimension and model.
- ``tsv`` is generated from ``text`` with the ``english`` configuration and GIN-indexed.
"""

from __future__ import annotations

__all__ = ["LOCK_KEY", "MIGRATIONS"]

# pg_advisory_xact_lock key held while migrating, so concurrent setup() calls take turns.
LOCK_KEY = 0x6D656D737461636B  # "memstack"

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE EXTENSION IF NOT EXISTS vector",
        """CREATE TABLE {schema}.records (
            namespace text NOT NULL,
            id text NOT NULL,
            text text NOT NULL,
            metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
            kind text,
            importance double precision NOT NULL,
            created_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            last_accessed_at double precision,
            expires_at double precision,
            embedding vector,
            dim integer,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
            PRIMARY KEY (namespace, id)
        )""",
        "CREATE INDEX records_ns_created ON {schema}.records (namespace, created_at)",
        "CREATE INDEX records_ns_updated ON {schema}.records (namespace, updated_at)",
        "CREATE INDEX records_ns_dim ON {schema}.records (namespace, dim)",
        "CREATE INDEX records_ns_kind ON {schema}.records (namespace, kind)",
        "CREATE INDEX records_expires ON {schema}.records (expires_at)"
        " WHERE expires_at IS NOT NULL",
        "CREATE INDEX records_tsv ON {schema}.records USING gin (tsv)",
    ),
    (
        """CREATE TABLE {schema}.namespace_info (
            namespace text PRIMARY KEY,
            dim integer NOT NULL,
            model_id text
        )""",
        """INSERT INTO {schema}.namespace_info (namespace, dim)
            SELECT namespace, max(dim) FROM {schema}.records WHERE dim IS NOT NULL
            GROUP BY namespace""",
    ),
)
