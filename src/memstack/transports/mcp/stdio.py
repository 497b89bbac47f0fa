"""The MCP server over stdin/stdout, for one client (Claude Desktop, Cursor, Claude Code).

The client starts ``memstack mcp`` with the API key in ``MEMSTACK_API_KEY``. The key is
checked before the server answers anything, so a missing or wrong one fails at start
with a message saying what to do; it is checked again on every call, so revoking it
(``memstack keys revoke``) takes effect at once, as over REST.
"""

from __future__ import annotations

import asyncio

from memstack.errors import ConfigError
from memstack.service.api_keys import ApiKeys
from memstack.service.principal import Principal
from memstack.service.types import check_id_part
from memstack.transports.mcp.server import Caller, build_server
from memstack.wiring import Services

__all__ = ["API_KEY_ENV", "key_principal", "serve_stdio"]

API_KEY_ENV = "MEMSTACK_API_KEY"


def key_principal(keys: ApiKeys, raw: str | None, *, default_agent: str | None = None) -> Principal:
    """The principal ``raw`` stands for, or ``ConfigError`` saying how to get a valid key."""
    if not raw or not raw.strip():
        raise ConfigError(
            f"{API_KEY_ENV} is not set: create a key with `memstack keys create --tenant NAME` "
            f"(against the same database) and set {API_KEY_ENV} in the MCP client's "
            "configuration of this server."
        )
    found = keys.authenticate(raw.strip())
    if found is None:
        raise ConfigError(
            f"{API_KEY_ENV} is not a valid API key of this database (unknown, malformed or "
            "revoked): check --db / MEMSTACK_DB, or create a key with `memstack keys create`."
        )
    if default_agent is not None:
        check_id_part(default_agent, "agent_id")
        found.check_agent(default_agent)
    return found


def key_caller(keys: ApiKeys, raw: str) -> Caller:
    """The key's principal, checked again on each call."""
    from mcp.server.mcpserver.exceptions import ToolError

    async def caller() -> Principal:
        found = await asyncio.to_thread(keys.authenticate, raw.strip())
        if found is None:
            raise ToolError(
                f"the API key in {API_KEY_ENV} was revoked; set a valid key and restart "
                "the memstack MCP server."
            )
        return found

    return caller


async def serve_stdio(
    services: Services, api_key: str | None, *, default_agent: str | None = None
) -> None:
    """Check the key, then answer MCP requests on stdin/stdout until the client leaves."""
    await asyncio.to_thread(key_principal, services.keys, api_key, default_agent=default_agent)
    assert api_key is not None
    await asyncio.to_thread(services.embedder.embed_batch, ["warm up"])  # load the model now
    server = build_server(services, key_caller(services.keys, api_key), default_agent=default_agent)
    await server.run_stdio_async()
