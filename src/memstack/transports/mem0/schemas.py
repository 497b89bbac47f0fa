"""The request bodies of mem0's routes, as mem0's clients (Python 2.x, TypeScript 3.x) and
its REST documentation send them.

Each body names every field mem0 documents for it. The ones memstack has no use for are
accepted and ignored, each listed in ``IGNORED`` (``docs/mem0.md`` says what becomes of
them); a field mem0 does not have is refused with a 422 naming it.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictStr

from memstack.transports.schemas import MAX_RESOURCE_ID_CHARS, Moment

__all__ = [
    "MAX_BATCH",
    "MAX_MESSAGES",
    "AddBody",
    "BatchDeleteBody",
    "BatchUpdateBody",
    "ListBody",
    "MessageIn",
    "SearchBody",
    "UpdateBody",
]

MAX_MESSAGES: Final = 1_000
"""Messages an add takes, the users' turns a call (a user's memory) at most."""
MAX_BATCH: Final = 1_000
"""Memories a batch update or delete takes (mem0's own limit)."""
MAX_TOP_K: Final = 100
"""The most results a search answers (memstack's recall and search limit)."""
MAX_PAGE_SIZE: Final = 200
"""mem0's largest page of a listing."""

_Id = Annotated[StrictStr, Field(min_length=1, max_length=MAX_RESOURCE_ID_CHARS)]
_Text = Annotated[StrictStr, Field(min_length=1)]
_Ignored = Any
"""A field mem0 documents that memstack accepts and does not use."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(_Body):
    role: Literal["user", "assistant", "system"]
    content: _Text
    name: Annotated[StrictStr, Field(min_length=1, max_length=100)] | None = None
    """The speaker's name (OpenAI's message field); the role when it is absent."""


def _one_message(value: object) -> object:
    """A string as the one user message it stands for (mem0's clients accept one too)."""
    return [{"role": "user", "content": value}] if isinstance(value, str) else value


class _Entities(_Body):
    user_id: _Id | None = None
    agent_id: _Id | None = None
    app_id: _Id | None = None
    run_id: _Id | None = None


class AddBody(_Entities):
    messages: Annotated[
        list[MessageIn],
        Field(min_length=1, max_length=MAX_MESSAGES),
        BeforeValidator(_one_message),
    ]
    """A list of messages, or one string: a user's message."""
    metadata: dict[str, Any] | None = None
    infer: StrictBool = True
    timestamp: Moment | None = None
    filters: dict[str, Any] | None = None
    """mem0's clients may send the entity ids here instead (``add(..., filters=)``)."""
    custom_categories: _Ignored = None
    custom_instructions: _Ignored = None
    agent_custom_instructions: _Ignored = None
    expiration_date: _Ignored = None
    structured_data_schema: _Ignored = None
    immutable: _Ignored = None
    includes: _Ignored = None
    excludes: _Ignored = None
    enable_graph: _Ignored = None
    output_format: _Ignored = None
    prompt_profile_id: _Ignored = None
    temporal_reasoning: _Ignored = None
    observation_date: _Ignored = None
    observation_datetime: _Ignored = None
    timezone: _Ignored = None
    version: _Ignored = None
    async_mode: _Ignored = None


class SearchBody(_Body):
    query: Annotated[StrictStr, Field(min_length=1, max_length=4_000)]
    filters: dict[str, Any]
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K, strict=True)] = 10
    threshold: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    """mem0's default is 0.1; ``None`` takes it."""
    metadata: dict[str, Any] | None = None
    categories: list[StrictStr] | None = None
    rerank: _Ignored = None
    fields: _Ignored = None
    show_expired: _Ignored = None
    reference_date: _Ignored = None
    latest_only: _Ignored = None
    keyword_search: _Ignored = None
    output_format: _Ignored = None
    source: _Ignored = None
    version: _Ignored = None


class ListBody(_Body):
    filters: dict[str, Any]
    page: Annotated[int, Field(ge=1, strict=True)] | None = None
    page_size: Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE, strict=True)] | None = None
    start_date: Moment | None = None
    end_date: Moment | None = None
    categories: list[StrictStr] | None = None
    keywords: StrictStr | None = None
    fields: _Ignored = None
    show_expired: _Ignored = None
    latest_only: _Ignored = None
    output_format: _Ignored = None
    version: _Ignored = None


class UpdateBody(_Body):
    text: _Text | None = None
    metadata: dict[str, Any] | None = None
    timestamp: _Ignored = None
    expiration_date: _Ignored = None


class _BatchUpdateItem(_Body):
    memory_id: _Id
    text: _Text | None = None
    metadata: dict[str, Any] | None = None


class _BatchDeleteItem(_Body):
    memory_id: _Id


class BatchUpdateBody(_Body):
    memories: Annotated[list[_BatchUpdateItem], Field(min_length=1, max_length=MAX_BATCH)]


class BatchDeleteBody(_Body):
    memories: Annotated[list[_BatchDeleteItem], Field(min_length=1, max_length=MAX_BATCH)]


IGNORED: Final = {
    name
    for body in (AddBody, SearchBody, ListBody, UpdateBody)
    for name, info in body.model_fields.items()
    if info.annotation is Any
}
"""Every field mem0 documents that memstack accepts without acting on it."""
