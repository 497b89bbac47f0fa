"""MemoryClient and AsyncMemoryClient: the memory server's REST API from Python, typed.

Every method returns the server's JSON body as a TypedDict of ``memstack.client.types``
(``MemoryClient``), or a coroutine of it (``AsyncMemoryClient``). ``base_url`` and
``api_key`` default to ``MEMSTACK_URL`` and ``MEMSTACK_API_KEY``. Server errors become
memstack errors: 404 ``NotFound``, 400/413/422 ``InvalidInput`` (with the server's
``field``), 401/403 ``AuthError`` (a ``ConfigError``), 5xx and network failures
``StoreUnavailable``.

    client = MemoryClient()  # MEMSTACK_URL, MEMSTACK_API_KEY
    client.store("agent-1", "coding-style", "Type hints everywhere.")
    client.search("coding style", agent_id="agent-1")["results"][0]["memory"]["value"]

A user's conversation memory (a key with the long-term right, or the server's
``MEMSTACK_MEMORY_ENABLED=1``): turns stored verbatim, recalled as in process.

    client.add_turns("alice", [{"speaker": "alice", "text": "I moved to Berlin.",
                                "session_id": "s1"}])
    client.recall("alice", "Where does Alice live?")["results"][0]["text"]
    client.recalled_context("alice", "Where does Alice live?")["block"]
"""

from memstack.client import types
from memstack.client._calls import UNSET, Call
from memstack.client._clients import AsyncMemoryClient, MemoryClient
from memstack.client._http import DEFAULT_URL
from memstack.client._jsonl import ImportResult
from memstack.errors import AuthError

__all__ = [
    "DEFAULT_URL",
    "UNSET",
    "AsyncMemoryClient",
    "AuthError",
    "Call",
    "ImportResult",
    "MemoryClient",
    "types",
]
