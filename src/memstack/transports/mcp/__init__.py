"""memstack over the Model Context Protocol, on the official ``mcp`` SDK (the ``mcp`` extra).

- ``server``: the tools and the ``<memories>`` resource, thin over the services;
- ``stdio``: ``memstack mcp``, one client's server over stdin/stdout, its key from
  ``MEMSTACK_API_KEY``;
- ``http``: streamable HTTP at ``/mcp`` of ``memstack serve``, behind the REST API's
  Bearer keys;
- ``commands``: the ``memstack mcp`` command.

Nothing here imports the SDK until a server is built, so ``memstack`` works without the
extra and says which one to install when it is needed.
"""

from __future__ import annotations

from memstack.errors import ConfigError

__all__ = ["require_sdk"]


def require_sdk() -> None:
    """Raise ``ConfigError`` naming the extra when the MCP SDK cannot be imported."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            'the MCP server needs the official MCP SDK: pip install "memstack[mcp]".'
        ) from exc
