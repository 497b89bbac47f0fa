"""Server settings: flags with environment-variable fallbacks, read once at the edge."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from memstack._env import setting, with_dotenv
from memstack.embeddings import EmbeddingSettings
from memstack.errors import ConfigError
from memstack.home import default_db
from memstack.longterm.memory import DEFAULT_MAX_ITEMS
from memstack.longterm.settings import parse_switch
from memstack.storage.postgres import MAX_REPLICA_LAG_S

__all__ = ["DEFAULT_DB", "DEFAULT_HOST", "DEFAULT_PORT", "ServerSettings"]

DEFAULT_DB: Final = Path(".memstack/memstack.db")
"""Only when a ``ServerSettings`` is built by hand; ``from_env`` uses ``memstack.home``."""
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000
DOTENV: Final = Path(".env")
"""The ``.env`` file ``from_env`` reads under the environment, relative to the working
directory."""


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    db: Path = DEFAULT_DB
    """SQLite file of the long-term tier (``--db`` / ``MEMSTACK_DB``)."""
    postgres_url: str | None = None
    """PostgreSQL instead of SQLite (``--postgres-url`` / ``MEMSTACK_POSTGRES_URL``)."""
    postgres_read_urls: tuple[str, ...] = ()
    """Hot standbys of ``postgres_url`` that answer recall, search and listing
    (``--postgres-read-url``, repeatable / ``MEMSTACK_POSTGRES_READ_URL``, comma-separated
    ``postgresql://`` URLs)."""
    postgres_max_lag_s: float = MAX_REPLICA_LAG_S
    """Seconds of replay lag past which a standby is passed over (``--postgres-max-lag``
    / ``MEMSTACK_POSTGRES_MAX_LAG_S``)."""
    redis_url: str | None = None
    """Redis for the short-term tier, in-process when unset (``--redis-url``,
    ``MEMSTACK_REDIS_URL``)."""
    redis_cluster: bool = False
    """``--redis-cluster`` / ``MEMSTACK_REDIS_CLUSTER=1``: ``redis_url`` names one node of a
    Redis Cluster."""
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    workers: int = 1
    """Server processes (``--workers`` / ``MEMSTACK_WORKERS``); more than one needs Redis."""
    stm_max_entries: int = 20
    """``STM_MAX_ENTRIES``: recent memories per agent kept in the short-term tier."""
    ltm_max_entries: int = 200
    """``LTM_MAX_ENTRIES``: memories per agent in the long-term tier; 0 = unlimited."""
    max_body_bytes: int = 1_048_576
    mcp_stream_s: int = 300
    """``MEMSTACK_MCP_STREAM_S``: seconds a ``GET /mcp`` stream stays open (it carries
    nothing: the MCP server is stateless; a client opens another)."""
    durable: bool = False
    """``--durable`` / ``MEMSTACK_DURABLE=1``: SQLite ``synchronous=FULL``, so acknowledged
    writes survive power loss too (one fsync per write; PostgreSQL is durable already)."""
    pin_cores: bool = False
    """``--pin-cores`` / ``MEMSTACK_PIN_CORES=1``: the local model's calls on cores of their
    own and a spill lane in the request cores' idle time; for one server process alone on
    its machine (it raises the tail latency of stores)."""
    memory_enabled: bool | None = None
    """``MEMSTACK_MEMORY_ENABLED`` (or ``NODETOOL_MEMORY_ENABLED``): the users' long-term
    memory on for every key (True), off even for keys with the ``long_term`` right
    (False), or on for those keys only (None, unset)."""
    memory_max_items: int = DEFAULT_MAX_ITEMS
    """``MEMSTACK_MEMORY_MAX_ITEMS``: current memories kept per user; 0 = unlimited."""
    llm: str | None = None
    """``--llm`` / ``MEMSTACK_LLM``: the ``provider:model`` that extracts memories from
    the users' conversations after each write; None: turns are stored verbatim only."""
    metrics_token: str | None = None
    """``MEMSTACK_METRICS_TOKEN``: the Bearer token a client off the loopback interface
    reads ``/metrics`` with; None: loopback clients only."""
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    """Which embedding model; ``--local-model`` (``local_model`` flag) over
    ``MEMSTACK_LOCAL_MODEL``."""

    @classmethod
    def from_env(cls, env: Mapping[str, str], **flags: object) -> ServerSettings:
        """Settings from ``flags`` (None = not given), then ``env``, then a ``.env`` file,
        then defaults. The flag ``dotenv`` names that file: ``.env`` of the working
        directory unless given; None reads none."""
        env = with_dotenv(env, _dotenv_path(flags.pop("dotenv", DOTENV)))

        def pick(flag: str, *names: str) -> str | None:
            value = flags.get(flag)
            if value is not None:
                return str(value)
            for name in names:
                if env.get(name):
                    return env[name]
            return None

        db = pick("db", "MEMSTACK_DB")
        embedding = EmbeddingSettings.from_env(env)
        if flags.get("local_model") is not None:
            embedding = replace(embedding, local_model=str(flags["local_model"]))
        postgres_url = pick("postgres_url", "MEMSTACK_POSTGRES_URL")
        read_urls = _read_urls(flags.get("postgres_read_urls"), env, postgres_url)
        enabled_variable, enabled = setting(env, "MEMSTACK_MEMORY_ENABLED")
        items_variable, items = setting(env, "MEMSTACK_MEMORY_MAX_ITEMS")
        return cls(
            memory_enabled=parse_switch(enabled, variable=enabled_variable),
            memory_max_items=_int(items, items_variable, DEFAULT_MAX_ITEMS, 0, 10_000_000),
            llm=pick("llm", "MEMSTACK_LLM"),
            db=Path(db) if db else default_db(env),
            postgres_url=postgres_url,
            postgres_read_urls=read_urls,
            postgres_max_lag_s=_seconds(
                pick("postgres_max_lag", "MEMSTACK_POSTGRES_MAX_LAG_S"),
                "MEMSTACK_POSTGRES_MAX_LAG_S",
                MAX_REPLICA_LAG_S,
            ),
            redis_url=pick("redis_url", "MEMSTACK_REDIS_URL"),
            redis_cluster=_bool(
                pick("redis_cluster", "MEMSTACK_REDIS_CLUSTER"), "MEMSTACK_REDIS_CLUSTER"
            ),
            host=pick("host", "MEMSTACK_HOST") or DEFAULT_HOST,
            port=_int(pick("port", "MEMSTACK_PORT"), "MEMSTACK_PORT", DEFAULT_PORT, 1, 65_535),
            workers=_int(pick("workers", "MEMSTACK_WORKERS"), "MEMSTACK_WORKERS", 1, 1, 256),
            stm_max_entries=_int(
                pick("stm_max_entries", "MEMSTACK_STM_MAX_ENTRIES", "STM_MAX_ENTRIES"),
                "STM_MAX_ENTRIES",
                20,
                1,
                10_000,
            ),
            ltm_max_entries=_int(
                pick("ltm_max_entries", "MEMSTACK_LTM_MAX_ENTRIES", "LTM_MAX_ENTRIES"),
                "LTM_MAX_ENTRIES",
                200,
                0,
                10_000_000,
            ),
            durable=_bool(pick("durable", "MEMSTACK_DURABLE"), "MEMSTACK_DURABLE"),
            pin_cores=_bool(pick("pin_cores", "MEMSTACK_PIN_CORES"), "MEMSTACK_PIN_CORES"),
            mcp_stream_s=_int(
                pick("mcp_stream_s", "MEMSTACK_MCP_STREAM_S"),
                "MEMSTACK_MCP_STREAM_S",
                300,
                1,
                86_400,
            ),
            metrics_token=env.get("MEMSTACK_METRICS_TOKEN") or None,
            embedding=embedding,
        )

    def to_env(self) -> dict[str, str]:
        """The environment variables ``from_env`` reads these settings back from.

        ``memstack serve --workers N`` hands its settings to the worker processes this
        way. The embedding settings are not included, but for the local model folder
        (``--local-model`` may have set it): they come from the environment, which the
        workers inherit.
        """
        return {
            "MEMSTACK_DB": str(self.db),
            "MEMSTACK_POSTGRES_URL": self.postgres_url or "",
            "MEMSTACK_POSTGRES_READ_URL": ",".join(self.postgres_read_urls),
            "MEMSTACK_POSTGRES_MAX_LAG_S": repr(self.postgres_max_lag_s),
            "MEMSTACK_REDIS_URL": self.redis_url or "",
            "MEMSTACK_REDIS_CLUSTER": "1" if self.redis_cluster else "0",
            "MEMSTACK_HOST": self.host,
            "MEMSTACK_PORT": str(self.port),
            "MEMSTACK_WORKERS": str(self.workers),
            "MEMSTACK_STM_MAX_ENTRIES": str(self.stm_max_entries),
            "MEMSTACK_LTM_MAX_ENTRIES": str(self.ltm_max_entries),
            "MEMSTACK_DURABLE": "1" if self.durable else "0",
            "MEMSTACK_PIN_CORES": "1" if self.pin_cores else "0",
            "MEMSTACK_MCP_STREAM_S": str(self.mcp_stream_s),
            "MEMSTACK_MEMORY_ENABLED": _switch(self.memory_enabled),
            "MEMSTACK_MEMORY_MAX_ITEMS": str(self.memory_max_items),
            "MEMSTACK_LLM": self.llm or "",
            "MEMSTACK_METRICS_TOKEN": self.metrics_token or "",
            "MEMSTACK_LOCAL_MODEL": self.embedding.local_model or "",
        }

    @property
    def store_url(self) -> str:
        if self.postgres_url:
            return self.postgres_url
        return f"sqlite:///{self.db}" + ("?synchronous=full" if self.durable else "")

    @property
    def described(self) -> str:
        """Where the data lives, for the startup banner (no passwords)."""
        long_term = "PostgreSQL" if self.postgres_url else f"SQLite {self.db}"
        if self.postgres_read_urls:
            long_term += f" (reads on {len(self.postgres_read_urls)} hot standbys)"
        if self.durable and not self.postgres_url:
            long_term += " (durable: synchronous=FULL)"
        short_term = "in-process"
        if self.redis_url:
            short_term = "Redis Cluster" if self.redis_cluster else "Redis"
        return f"long-term tier: {long_term}; short-term tier: {short_term}"


def _dotenv_path(value: object) -> Path | None:
    if value is None or isinstance(value, Path):
        return value
    if isinstance(value, str):
        return Path(value)
    raise ConfigError(f"dotenv must be a path or None, not {type(value).__name__}.")


def _read_urls(flag: object, env: Mapping[str, str], postgres_url: str | None) -> tuple[str, ...]:
    """The ``--postgres-read-url`` flags, else ``MEMSTACK_POSTGRES_READ_URL`` split at each
    comma that starts another ``postgresql://`` URL (a multi-host URL keeps its own)."""
    if isinstance(flag, str):
        flag = (flag,)
    if isinstance(flag, tuple | list) and flag:
        urls = tuple(str(url).strip() for url in flag)
    else:
        raw = env.get("MEMSTACK_POSTGRES_READ_URL") or ""
        urls = tuple(u.strip() for u in _NEXT_URL.split(raw) if u.strip())
    if urls and not postgres_url:
        raise ConfigError(
            "--postgres-read-url (MEMSTACK_POSTGRES_READ_URL) names hot standbys of a "
            "PostgreSQL primary: give the primary with --postgres-url too."
        )
    for url in urls:
        if not url.lower().startswith(("postgresql://", "postgres://")):
            raise ConfigError(
                f"read URL {url!r} must be a postgresql:// URL of a hot standby "
                "(MEMSTACK_POSTGRES_READ_URL separates several with commas)."
            )
    return urls


_NEXT_URL = re.compile(r",(?=\s*postgres(?:ql)?://)", re.IGNORECASE)


def _seconds(raw: str | None, name: str, default: float) -> float:
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400:
        raise ConfigError(f"{name}={raw!r} must be a number of seconds from 0 to 86400.")
    return value


def _switch(value: bool | None) -> str:
    """``MEMSTACK_MEMORY_ENABLED`` as ``from_env`` reads it back: blank is unset."""
    return "" if value is None else "1" if value else "0"


def _bool(raw: str | None, name: str) -> bool:
    if raw is None or raw.strip().lower() in ("", "0", "false", "no", "off"):
        return False
    if raw.strip().lower() in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name}={raw!r} must be 1 or 0 (true or false).")


def _int(raw: str | None, name: str, default: int, lo: int, hi: int) -> int:
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = lo - 1
    if not lo <= value <= hi:
        raise ConfigError(f"{name}={raw!r} must be a whole number from {lo} to {hi}.")
    return value
