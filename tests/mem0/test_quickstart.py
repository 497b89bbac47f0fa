"""A real program written for mem0, run unchanged but for ``host=``: mem0's own
quickstart (``quickstart.py``), against a ``memstack serve`` with its default local
embedding model (the hash embedder of the other modules finds nothing semantic, and the
quickstart keeps mem0's default ``threshold``). It runs in this process, so the network
guard of ``tests/conftest.py`` holds for it.

(CrewAI, the other candidate, does not install beside memstack: crewai 1.15 pins
``mcp<2`` and ``openai<3`` against memstack's ``mcp>=2.3`` and ``openai>=3.50``, and
brings chromadb and lancedb.)"""

from __future__ import annotations

import ast
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mem0.conftest import Mem0Server, mem0_server

QUICKSTART = Path(__file__).with_name("quickstart.py")


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mem0Server]:
    tmp = tmp_path_factory.mktemp("mem0-quickstart")
    with mem0_server(tmp, MEMSTACK_MEMORY_EMBEDDING_PROVIDER="local") as served:
        yield served


def test_mem0s_quickstart_finds_the_dietary_restrictions(
    local_server: Mem0Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEM0_API_KEY", local_server.key)
    monkeypatch.setenv("MEM0_HOST", local_server.url)
    made: list[Any] = []
    import mem0  # tests.mem0.conftest has set mem0's settings

    real = mem0.MemoryClient

    def kept(*args: Any, **kwargs: Any) -> Any:
        """mem0's client, kept to close: the program leaves its httpx client open."""
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(mem0, "MemoryClient", kept)
    try:
        runpy.run_path(str(QUICKSTART), run_name="__main__")
    finally:
        for one in made:
            one.client.close()
    printed = ast.literal_eval(capsys.readouterr().out.strip())
    found = [m["memory"] for m in printed["results"]]
    assert all(m["user_id"] == "user123" for m in printed["results"]), printed
    assert any("vegetarian" in text and "nuts" in text for text in found), printed
