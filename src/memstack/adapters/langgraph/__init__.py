"""memstack as LangGraph's long-term memory store: ``MemstackStore`` (a ``BaseStore``).

Needs LangGraph: ``pip install "memstack[langgraph]"``.
"""

try:
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    from memstack.errors import ConfigError

    raise ConfigError(
        'memstack.adapters.langgraph needs LangGraph: pip install "memstack[langgraph]"'
    ) from exc

from memstack.adapters.langgraph.store import MemstackStore

__all__ = ["MemstackStore"]
