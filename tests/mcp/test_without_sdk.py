"""Without the ``mcp`` extra, memstack still runs, and both MCP entries name the extra."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from memstack.cli import main
from memstack.embeddings import HashEmbedder
from memstack.transports.app import create_app
from memstack.wiring import open_services

EXTRA = 'pip install "memstack[mcp]"'


@pytest.fixture
def no_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` fails, as when not installed


@pytest.mark.usefixtures("no_sdk")
async def test_the_server_answers_501_at_mcp_and_everything_else_as_usual(tmp_path: Path):
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'm.db'}", redis_url=None, embedder=HashEmbedder()
    )
    try:
        app = create_app(services)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as api:
            reply = await api.post("/mcp", json={})
            assert (await api.get("/healthz")).status_code == 200
    finally:
        services.close()
    assert reply.status_code == 501
    assert EXTRA in reply.json()["error"]["message"]


@pytest.mark.usefixtures("no_sdk")
def test_memstack_mcp_names_the_extra(tmp_path: Path):
    result = CliRunner().invoke(main, ["mcp", "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 1
    assert EXTRA in result.stderr
