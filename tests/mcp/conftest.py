"""Keys in a temporary SQLite database, and the official MCP client over stdio and HTTP."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memstack.service.api_keys import ApiKeys
from memstack.wiring import open_records

# The deterministic embedder: no model to load in the server processes.
EMBEDDER_ENV = {"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash"}


@dataclass(frozen=True)
class Keys:
    acme: str
    other: str
    """Another tenant's."""
    acme_bot_only: str
    """Limited to agent ``bot``."""
    revoked: str


def create_keys(db: Path) -> Keys:
    """Keys made with the same code as ``memstack keys create``."""
    records = open_records(f"sqlite:///{db}")
    try:
        keys = ApiKeys(records)
        revoked, info = keys.create(tenant="acme")
        keys.revoke(info.id)
        return Keys(
            acme=keys.create(tenant="acme")[0],
            other=keys.create(tenant="other")[0],
            acme_bot_only=keys.create(tenant="acme", agents=["bot"])[0],
            revoked=revoked,
        )
    finally:
        records.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "mcp.db"


@pytest.fixture
def keys(db: Path) -> Keys:
    return create_keys(db)


def mcp_command(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "memstack", "mcp", "--db", str(db), *args]


@asynccontextmanager
async def stdio_client(db: Path, key: str, *args: str) -> AsyncIterator[Client]:
    """``memstack mcp`` as a subprocess, as Claude Desktop starts it."""
    command = mcp_command(db, *args)
    params = StdioServerParameters(
        command=command[0], args=command[1:], env={"MEMSTACK_API_KEY": key, **EMBEDDER_ENV}
    )
    async with Client(params) as client:
        yield client


@asynccontextmanager
async def http_client(url: str, key: str, *, mode: str = "auto") -> AsyncIterator[Client]:
    """The official client over streamable HTTP, with the key as a Bearer token."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client
