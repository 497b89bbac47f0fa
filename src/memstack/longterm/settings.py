"""Long-term memory settings, read from the environment once, at the edge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from memstack._env import setting
from memstack.embeddings import EmbeddingSettings
from memstack.errors import ConfigError
from memstack.home import default_db

__all__ = ["DEFAULT_DB_PATH", "LongTermSettings", "parse_switch"]

DEFAULT_DB_PATH: Final = ".memstack/memstack.db"
"""Only when a ``LongTermSettings`` is built by hand (as ``ServerSettings``' own);
``from_env`` uses ``memstack.home``, the file ``memstack serve`` opens."""
_ON: Final = frozenset({"1", "true", "yes", "on"})
_OFF: Final = frozenset({"0", "false", "no", "off"})
_VECTOR_PROVIDERS: Final = {
    "sqlite": "sqlite",
    "sqlite-vec": "sqlite",
    "memory": "memory",
    "postgres": "postgres",
    "postgresql": "postgres",
}

VectorProvider = Literal["sqlite", "memory", "postgres"]


def parse_switch(value: str | None, *, variable: str) -> bool | None:
    """``True`` / ``False`` for the usual spellings, ``None`` when unset or empty."""
    if value is None or not value.strip():
        return None
    lowered = value.strip().lower()
    if lowered in _ON:
        return True
    if lowered in _OFF:
        return False
    raise ConfigError(f"{variable}={value!r} is not a switch; use 1/true/yes/on or 0/false/no/off.")


@dataclass(frozen=True, kw_only=True)
class LongTermSettings:
    enabled: bool | None = None
    """``MEMSTACK_MEMORY_ENABLED``: None when unset (off unless a caller opts in)."""
    max_items: int = 500
    """``MEMSTACK_MEMORY_MAX_ITEMS``: soft cap per collection; 0 disables eviction."""
    vector_provider: VectorProvider = "sqlite"
    """``MEMSTACK_VECTOR_PROVIDER``: sqlite (default), memory, or postgres."""
    db_path: str = DEFAULT_DB_PATH
    """``MEMSTACK_DB``: the SQLite file; unset, ``memstack.db`` in ``MEMSTACK_HOME`` (by
    default the per-user data folder), the one ``memstack serve`` uses."""
    postgres_url: str | None = None
    """``MEMSTACK_POSTGRES_URL``: needed when the vector provider is postgres."""
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LongTermSettings:
        """Settings from ``env`` (pass ``os.environ`` at the edge); each ``MEMSTACK_*``
        name also answers to the specification's ``NODETOOL_*`` one, and wins over it."""
        max_variable, raw = setting(env, "MEMSTACK_MEMORY_MAX_ITEMS")
        raw_max = (raw or "").strip()
        try:
            max_items = int(raw_max) if raw_max else 500
        except ValueError:
            max_items = -1
        if max_items < 0:
            raise ConfigError(
                f"{max_variable}={raw_max!r} must be a whole number >= 0 (0 = no cap)."
            )
        provider_variable, raw = setting(env, "MEMSTACK_VECTOR_PROVIDER")
        raw_provider = (raw or "").strip().lower() or "sqlite"
        provider = _VECTOR_PROVIDERS.get(raw_provider)
        if provider is None:
            raise ConfigError(
                f"{provider_variable}={raw_provider!r} is unknown; "
                f"use one of {', '.join(sorted(set(_VECTOR_PROVIDERS)))}."
            )
        postgres_url = env.get("MEMSTACK_POSTGRES_URL") or None
        if provider == "postgres" and not postgres_url:
            raise ConfigError(
                f"{provider_variable}=postgres needs MEMSTACK_POSTGRES_URL "
                "(postgresql://user:pass@host/db)."
            )
        enabled_variable, raw_enabled = setting(env, "MEMSTACK_MEMORY_ENABLED")
        return cls(
            enabled=parse_switch(raw_enabled, variable=enabled_variable),
            max_items=max_items,
            vector_provider=provider,  # type: ignore[arg-type]
            db_path=env.get("MEMSTACK_DB") or str(default_db(env)),
            postgres_url=postgres_url,
            embedding=EmbeddingSettings.from_env(env),
        )

    def store_url(self) -> str:
        if self.vector_provider == "memory":
            return "memory://"
        if self.vector_provider == "postgres":
            assert self.postgres_url is not None
            return self.postgres_url
        return f"sqlite:///{self.db_path}"
