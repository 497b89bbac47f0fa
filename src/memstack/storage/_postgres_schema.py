"""The PostgreSQL schema as an append-only list of numbered migrations.

Never edit a released migration; append a new one. Statements name tables as
``{schema}.records``; the store fills in its (checked, quoted) schema name.

Choices:
- ``embedding`` is an untyped ``vector`` plus a ``dim`` column, so namespaces embedded
  by different models (384, 768, 1536 dimensions...) share one table; a search only
  compares rows of the query's dimension.
- HNSW (3), replaced by IVFFlat (9): until migration 9 one partial HNSW index per
  dimension in use covered every namespace's rows (``WHERE dim = 384``), each insert paid
  its graph insert, and a bulk load could not defer it (one index for all namespaces).
  Migration 9 drops them; a namespace past ``postgres.PostgresBackend``'s ``exact_limit``
  gets an index of its own instead (``_postgres_ann``), built after its rows are in.
- Vectors stay in the row (3): ``STORAGE MAIN`` and ``toast_tuple_target = 8160``. A
  384-d vector is 1,544 bytes and the row passed the 2 KB toast threshold, so many
  vectors lived in the toast table and an exact scan read three buffers a row instead of
  one, which made it markedly slower. Rows written before keep their layout until
  rewritten.
- ``fillfactor = 75`` (4): a page keeps room for one more version of a ~2 KB row, so
  ``touch`` (every recall bumps ``last_accessed_at``, which no index holds) is a HOT
  update and adds no HNSW/GIN entries. With full pages (the default, 100) almost no
  touch was HOT and each cost index writes; at 75 nearly all are (80 left room for
  too few); the price is a table larger by the room kept free.
- ``namespace_info`` (2) keeps each namespace's embedding dimension and model.
- ``tsv`` is generated from ``text`` with the ``english`` configuration and GIN-indexed.
- validity and provenance (6): ``valid_from``, ``valid_to`` (NULL while current),
  ``superseded_by``, ``closed_reason``, ``provenance``, ``provenance_detail``; a partial
  index finds a namespace's closed records.
- No GIN pending list (8): ``fastupdate = off`` on ``records_tsv``, so a write adds its
  words to the index at once instead of to a pending list that every keyword search reads
  whole (up to 4 MB) until a vacuum merges it. After a large batch of writes each query
  word scanned a list of many pages, the planner then preferred a sequential scan for
  common words, and the capped keyword search took markedly longer than with the list
  merged. With the pending list a bulk load went faster, but it already loads past its
  target without one, and searches right after writes read it.
- No ``records_ns_dim`` (9): no query plan used it (``EXPLAIN`` of every statement, on one
  large namespace and on many small ones); every search filters by namespace, and
  ``records_ns_kind``, ``records_ns_created`` or the primary key serve that as well.
- ``write_marks`` (10): a counter per namespace that every write transaction bumps, so a
  read on a hot standby can tell it holds the namespace's last write (``_postgres_replicas``).
"""

from __future__ import annotations

__all__ = ["HNSW_PARAMS", "LOCK_KEY", "MIGRATIONS"]

# pg_advisory_xact_lock key held while migrating, so concurrent setup() calls take turns.
LOCK_KEY = 0x6D656D737461636B  # "memstack"

HNSW_PARAMS = "m = 16, ef_construction = 512"
"""The graph of every HNSW index (migration 7; migration 9 drops them). On ``bench
recall``'s corpus, whose top 10 lie very close together in cosine, pgvector's default
graph (m 16, ef_construction 64) missed many of the exact scan's top 10 whatever
ef_search was; a larger ``m`` helped little, a larger ``ef_construction`` helped most, and
512 met the recall target. (The iterative scan mode changed nothing, and the planner
used the index: the graph was the cause.) The price is paid at insert, which slows down
as ``ef_construction`` grows, for every namespace in one shared index: the reason
migration 9 replaced these graphs with an IVFFlat index per large namespace, built after
its rows are in (``_postgres_ann``).

What the graphs still missed were whole queries, not rows: a query between two of the
bench's topics landed in one and found none of its top 10 in the other, and even larger
graphs stranded the same queries."""


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
    (
        "ALTER TABLE {schema}.records ALTER COLUMN embedding SET STORAGE MAIN",
        "ALTER TABLE {schema}.records SET (toast_tuple_target = 8160)",
        "CREATE INDEX IF NOT EXISTS records_hnsw_384 ON {schema}.records"
        " USING hnsw ((embedding::vector(384)) vector_cosine_ops)"
        " WITH (m = 16, ef_construction = 64) WHERE dim = 384",
    ),
    ("ALTER TABLE {schema}.records SET (fillfactor = 75)",),
    (
        # Keyword search reads a record's context beside its text: the generated tsv
        # column is re-made over both (a generated expression cannot be altered in place).
        "ALTER TABLE {schema}.records ADD COLUMN context text",
        "ALTER TABLE {schema}.records DROP COLUMN tsv",
        "ALTER TABLE {schema}.records ADD COLUMN tsv tsvector GENERATED ALWAYS AS"
        " (to_tsvector('english'::regconfig, text || ' ' || coalesce(context, ''))) STORED",
        "CREATE INDEX records_tsv ON {schema}.records USING gin (tsv)",
    ),
    (
        # Validity and provenance (issue 15); a NULL valid_from means since created_at.
        "ALTER TABLE {schema}.records ADD COLUMN valid_from double precision,"
        " ADD COLUMN valid_to double precision, ADD COLUMN superseded_by text,"
        " ADD COLUMN closed_reason text, ADD COLUMN provenance text,"
        " ADD COLUMN provenance_detail text",
        "CREATE INDEX records_ns_closed ON {schema}.records (namespace, valid_to)"
        " WHERE valid_to IS NOT NULL",
    ),
    (
        # Every HNSW index (one per dimension in use) rebuilt with HNSW_PARAMS' graph.
        "DO $$ DECLARE hnsw regclass; BEGIN"
        " FOR hnsw IN SELECT oid::regclass FROM pg_class"
        " WHERE relnamespace = '{schema}'::regnamespace AND relkind = 'i'"
        " AND relname LIKE 'records\\_hnsw\\_%' LOOP"
        f" EXECUTE format('ALTER INDEX %s SET ({HNSW_PARAMS})', hnsw);"
        " EXECUTE format('REINDEX INDEX %s', hnsw);"
        " END LOOP; END $$",
    ),
    (
        # No pending list: keyword searches read only the index proper (see above); the
        # list of an existing database is merged now.
        "ALTER INDEX {schema}.records_tsv SET (fastupdate = off)",
        "SELECT gin_clean_pending_list('{schema}.records_tsv'::regclass)",
    ),
    (
        # The shared HNSW indexes and an index no plan used go (see above); a large
        # namespace gets its own IVFFlat index when next searched or made ready.
        "DO $$ DECLARE hnsw regclass; BEGIN"
        " FOR hnsw IN SELECT oid::regclass FROM pg_class"
        " WHERE relnamespace = '{schema}'::regnamespace AND relkind = 'i'"
        " AND relname LIKE 'records\\_hnsw\\_%' LOOP"
        " EXECUTE format('DROP INDEX %s', hnsw);"
        " END LOOP; END $$",
        "DROP INDEX IF EXISTS {schema}.records_ns_dim",
    ),
    (
        # A write counter per namespace, for reads on hot standbys (_postgres_replicas).
        "CREATE TABLE IF NOT EXISTS {schema}.write_marks"
        " (namespace text PRIMARY KEY, seq bigint NOT NULL)",
    ),
)
