"""The exceptions memstack raises, split by who must act on them.

::

    MemstackError                      every memstack error
     ├── ConfigError                   the developer wired memstack wrongly
     │    │                            (a missing extra, a bad setting, an invalid tool schema)
     │    └── AuthError                a server refused the API key (401) or its rights (403)
     ├── InvalidInput (ValueError)     the developer passed a bad argument; ``field`` names it
     │    ├── NotFound (LookupError)   the thing asked for does not exist
     │    └── Forbidden                the key may not act for that agent, or change what
     │                                 every agent shares
     ├── StoreUnavailable              operations: a backend (database, Redis, model) is down
     │    └── WriteConflict            a record changed between the read a write depended
     │                                 on and the write; the write changed nothing
     ├── PlanningError                 the model produced no valid plan within its attempts
     ├── ProviderError                 an LLM provider refused or failed a call (bad key,
     │    │                            rate limit, server error); ``status`` when HTTP gave one
     │    └── ReconcileError           a reconciliation reply broke the prompt's protocol
     └── ToolInputError                the LLM passed bad tool arguments; the message is
                                       returned to the model as the tool result, so it
                                       says what to change

Every message says what to do next. Errors carry data and have no side effects:
they are logged, if at all, at the edge that catches them.
"""

from __future__ import annotations

__all__ = [
    "AuthError",
    "ConfigError",
    "Forbidden",
    "InvalidInput",
    "MemstackError",
    "NotFound",
    "PlanningError",
    "ProviderError",
    "ReconcileError",
    "StoreUnavailable",
    "ToolInputError",
    "WriteConflict",
]


class MemstackError(Exception):
    """Base class of every error memstack raises on purpose."""


class ConfigError(MemstackError):
    """memstack is set up wrongly: a missing optional dependency, a bad setting."""


class AuthError(ConfigError):
    """The memory server refused the API key: missing, wrong or revoked (``status`` 401),
    or not allowed to do this (403). A ``ConfigError``: the fix is in the caller's setup."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class InvalidInput(MemstackError, ValueError):
    """A caller passed a bad argument. ``field`` names it when one field is at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFound(InvalidInput, LookupError):
    """The caller asked for something that does not exist."""


class StoreUnavailable(MemstackError):
    """A backing service (database, Redis, embedding model) cannot be reached."""


class WriteConflict(StoreUnavailable):
    """A write was refused because a record it depended on changed after it was read
    (another process or host wrote it first); nothing of the write was applied. Read
    again and retry: the memory service does, a bounded number of times, then raises
    this naming the memory (too many writers on it at once; retry later)."""


class ProviderError(MemstackError):
    """An LLM provider refused or failed a call: a bad or missing key, a rate limit, a
    server error, a reply that breaks the protocol. ``status`` is the HTTP status when
    there was one; the message says what to check."""

    def __init__(self, message: str, *, provider: str, status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class ToolInputError(MemstackError):
    """An LLM called a tool with bad arguments.

    The message is what the model sees as the tool's result, so it names the
    offending fields and says how to call the tool correctly.
    """

    def __init__(self, message: str, *, tool: str, fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.tool = tool
        self.fields = fields


class Forbidden(InvalidInput):
    """The caller's key may not act for that agent, or may not change what every agent
    shares."""


class PlanningError(MemstackError):
    """The model did not produce a valid plan within ``attempts`` attempts.
    ``last_error`` is the last rejection, as the model was told it."""

    def __init__(self, message: str, *, attempts: int, last_error: str) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error


class ReconcileError(ProviderError):
    """The reconciliation reply broke the protocol the prompt asks for; the message names
    the first thing wrong. The whole reply is refused: act on none of it."""

    def __init__(self, problem: str, *, provider: str) -> None:
        super().__init__(
            f"{provider} sent a reconciliation reply that was refused: {problem}. "
            "Nothing in it should be applied; retry the call or keep the stored "
            "memories as they are.",
            provider=provider,
        )
        self.problem = problem
