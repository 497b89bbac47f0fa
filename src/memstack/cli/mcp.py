"""``memstack mcp``: the MCP server over stdio, on the settings of ``memstack serve``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import click

from memstack.cli._store import postgres_lag_option, postgres_read_option
from memstack.cli.models import local_model_option
from memstack.errors import MemstackError
from memstack.settings import ServerSettings

__all__ = ["mcp"]


@click.command("mcp")
@click.option(
    "--db",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="SQLite file of the long-term tier [env MEMSTACK_DB; default memstack.db in "
    "MEMSTACK_HOME, the per-user data folder unless set].",
)
@click.option(
    "--postgres-url", default=None, help="PostgreSQL instead of SQLite [env MEMSTACK_POSTGRES_URL]."
)
@postgres_read_option
@postgres_lag_option
@click.option(
    "--redis-url", default=None, help="Redis for the short-term tier [env MEMSTACK_REDIS_URL]."
)
@click.option(
    "--durable",
    is_flag=True,
    default=None,
    help="SQLite synchronous=FULL [env MEMSTACK_DURABLE=1].",
)
@click.option(
    "--agent-id",
    envvar="MEMSTACK_AGENT_ID",
    default=None,
    help="The agent store_memory and get_context act for when a call names none "
    "[env MEMSTACK_AGENT_ID].",
)
@local_model_option
def mcp(
    db: Path | None,
    postgres_url: str | None,
    postgres_read_urls: tuple[str, ...],
    postgres_max_lag: float | None,
    redis_url: str | None,
    durable: bool | None,
    agent_id: str | None,
    local_model: Path | None,
) -> None:
    """Run the MCP server over stdio, for Claude Desktop, Cursor or Claude Code.

    The API key comes from MEMSTACK_API_KEY (see `memstack keys create`); the data from
    the same settings as `memstack serve`.
    """
    try:
        from memstack.transports.mcp import require_sdk

        require_sdk()
        from memstack.transports.mcp.stdio import API_KEY_ENV, serve_stdio
        from memstack.wiring import services_from_settings

        settings = ServerSettings.from_env(
            os.environ,
            db=db,
            postgres_url=postgres_url,
            postgres_read_urls=postgres_read_urls,
            postgres_max_lag=postgres_max_lag,
            redis_url=redis_url,
            durable=durable or None,
            local_model=local_model,
        )
        services = services_from_settings(settings)
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        asyncio.run(serve_stdio(services, os.environ.get(API_KEY_ENV), default_agent=agent_id))
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        services.close()
