"""mem0's own clients against a live ``memstack serve``: the server fixture and mem0's
settings for this process.

mem0's Python package reads two settings when it is first imported, so they are set here,
before any test module of this folder imports it: ``MEM0_TELEMETRY=False`` (else every
call queues an event for PostHog, which the network guard of ``tests/conftest.py`` would
refuse from a background thread), and ``MEM0_DIR`` (else the import writes
``~/.mem0/config.json`` into the home folder of whoever runs the tests). The folder is
removed when the process exits. Subprocesses inherit both (the Node client reads
``MEM0_TELEMETRY=false`` and ``MEM0_DIR`` too).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

_MEM0_DIR = tempfile.mkdtemp(prefix="memstack-mem0-dir-")
atexit.register(shutil.rmtree, _MEM0_DIR, True)
os.environ["MEM0_TELEMETRY"] = "False"
os.environ["MEM0_DIR"] = _MEM0_DIR

from mem0 import MemoryClient  # noqa: E402  (after the settings it reads on import)
from tests.servers import first_key, serve_env, serving_memstack  # noqa: E402

MEM0_DIR = Path(_MEM0_DIR)
TIMEOUT_S = 30.0
"""Every HTTP call of these tests ends within this (mem0's client would wait 300 s)."""


@dataclass(frozen=True, kw_only=True)
class Mem0Server:
    """A live ``memstack serve`` with the key it made on first start (which has the
    long-term right the users' memory needs)."""

    url: str
    key: str
    db: Path
    log: Path

    @contextmanager
    def client(self, key: str | None = None) -> Iterator[MemoryClient]:
        """mem0's ``MemoryClient`` as a program would make it, but for ``host=`` (and an
        httpx client with a bounded timeout, mem0's documented ``client=``)."""
        with httpx.Client(timeout=TIMEOUT_S) as http:
            yield MemoryClient(api_key=key or self.key, host=self.url, client=http)

    def raw(self, key: str | None = None) -> httpx.Client:
        """httpx on the server with mem0's header, ``Authorization: Token <key>``."""
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Token {key or self.key}"},
            timeout=TIMEOUT_S,
        )

    def keys(self, *args: str) -> str:
        """``memstack keys ARGS --db <the server's database>``; its output."""
        done = subprocess.run(
            [sys.executable, "-m", "memstack", "keys", *args, "--db", str(self.db)],
            env=serve_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"memstack keys {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done.stdout

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@contextmanager
def mem0_server(tmp: Path, **settings: str) -> Iterator[Mem0Server]:
    """``memstack serve --db tmp/memstack.db`` (the hash embedder unless ``settings`` say
    otherwise), with its first key."""
    db, log = tmp / "memstack.db", tmp / "serve.log"
    with serving_memstack(["--db", str(db)], env=serve_env(**settings), log=log) as served:
        yield Mem0Server(url=served.url, key=first_key(log.read_text()), db=db, log=log)
        logged = log.read_text(errors="replace")
        assert "Traceback" not in logged, f"the server logged a traceback:\n{logged[-5000:]}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mem0Server]:
    """One server for the whole module; each test keeps to users of its own (``name``)."""
    with mem0_server(tmp_path_factory.mktemp("mem0-serve")) as served:
        yield served


def name(prefix: str) -> str:
    """A user or agent id no other test uses: the tests share a server, in any order."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
