"""One data location by default: the server (``memstack serve``, ``make serve``,
``memstack mcp``) and the library's ``create_default_long_term_memory`` open the same
SQLite file, and the Claude Desktop example of docs/mcp.md opens it too."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memstack.embeddings import HashEmbedder
from memstack.home import default_db
from memstack.longterm import create_default_long_term_memory
from memstack.longterm.settings import LongTermSettings
from memstack.settings import ServerSettings
from memstack.storage import open_record_store
from tests.docs_pages import ROOT, blocks


@pytest.mark.parametrize(
    "env",
    [
        {"MEMSTACK_HOME": "{tmp}/home"},
        {"HOME": "{tmp}", "XDG_DATA_HOME": ""},
        {"HOME": "{tmp}", "XDG_DATA_HOME": "{tmp}/xdg"},
        {"MEMSTACK_DB": "{tmp}/chosen.db"},
    ],
    ids=["MEMSTACK_HOME", "HOME", "XDG_DATA_HOME", "MEMSTACK_DB"],
)
def test_server_and_library_default_to_one_file(env: dict[str, str], tmp_path: Path):
    env = {name: value.format(tmp=tmp_path) for name, value in env.items()}
    server = ServerSettings.from_env(env, dotenv=None).db
    library = Path(LongTermSettings.from_env(env).db_path)
    assert library == server
    assert server.is_relative_to(tmp_path)


def test_what_the_library_remembers_the_server_reads(tmp_path: Path):
    env = {"MEMSTACK_HOME": str(tmp_path / "home")}
    memory = create_default_long_term_memory(
        user_id="alice", enabled=True, env=env, embedder=HashEmbedder()
    )
    assert memory is not None
    try:
        asyncio.run(memory.remember("Alice prefers green tea", kind="preference"))
        namespace = memory.namespace
    finally:
        memory.close()
    server = open_record_store(ServerSettings.from_env(env, dotenv=None).store_url)
    try:
        server.setup()
        assert server.count(namespace) == 1
    finally:
        server.close()


def test_the_claude_desktop_example_opens_the_make_serve_database():
    """``make serve`` runs ``memstack serve`` without ``--db`` (unless ``DB=`` is given), so
    the example must leave ``--db`` out too, or name the file serve would open."""
    page = ROOT / "docs" / "mcp.md"
    (block,) = [b for b in blocks(page) if b.lang == "json" and '"command"' in b.text]
    args = json.loads(block.text)["mcpServers"]["memstack"]["args"]
    assert args[0] == "mcp"
    env = {"HOME": "/home/me"}
    served = ServerSettings.from_env(env, dotenv=None).db
    chosen = Path(args[args.index("--db") + 1]) if "--db" in args else default_db(env)
    assert chosen == served
