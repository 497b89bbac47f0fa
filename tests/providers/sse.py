"""Replies shaped like the real OpenAI and Anthropic HTTP APIs, streaming included, and
a mock HTTP client that records what it was sent.

The SDKs take an ``httpx2.AsyncClient``; its ``MockTransport`` answers every request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import httpx2

Payload = dict[str, Any]


class Recorder:
    """A MockTransport handler: answers with the next response, keeps every request."""

    def __init__(self, *responses: httpx2.Response | Exception) -> None:
        self.responses = list(responses)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        response = self.responses.pop(0)
        if isinstance(response, Exception):
            raise response
        return response

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))

    @property
    def body(self) -> Payload:
        """The JSON body of the one request made."""
        (request,) = self.requests
        body: Payload = json.loads(request.content)
        return body


def _sse(lines: Iterable[str]) -> httpx2.Response:
    return httpx2.Response(
        200,
        headers={"content-type": "text/event-stream; charset=utf-8"},
        content="".join(lines).encode(),
    )


# -- OpenAI Chat Completions ----------------------------------------------------------


def openai_stream(*chunks: Payload) -> httpx2.Response:
    """``data: {chunk}`` lines, then ``data: [DONE]``."""
    return _sse([*(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks), "data: [DONE]\n\n"])


def openai_chunk(
    delta: Payload | None = None, *, finish_reason: str | None = None, model: str = "gpt-4o-mini"
) -> Payload:
    """One ``chat.completion.chunk`` with one choice."""
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion.chunk",
        "created": 1727000000,
        "model": f"{model}-2024-07-18",
        "system_fingerprint": "fp_0ba0d124f1",
        "choices": [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": None,
    }


def openai_usage(prompt: int, completion: int) -> Payload:
    """The last chunk when ``stream_options.include_usage`` is set: no choices."""
    chunk = openai_chunk()
    chunk["choices"] = []
    chunk["usage"] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    return chunk


def openai_tool_delta(
    index: int, *, call_id: str | None = None, name: str | None = None, arguments: str = ""
) -> Payload:
    """A delta carrying one fragment of tool call ``index``; the first names it."""
    call: Payload = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return {"tool_calls": [call]}


def openai_error(status: int, message: str, kind: str, code: str | None = None) -> httpx2.Response:
    error = {"message": message, "type": kind, "param": None, "code": code}
    return httpx2.Response(status, json={"error": error})


# -- Anthropic Messages ----------------------------------------------------------------


def anthropic_stream(*events: Payload) -> httpx2.Response:
    """``event: <type>`` / ``data: {event}`` pairs."""
    return _sse(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)


def message_start(input_tokens: int, *, cache_read: int = 0) -> Payload:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-3-5-haiku-20241022",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": cache_read,
                "output_tokens": 1,
            },
        },
    }


def text_block(index: int, *pieces: str) -> list[Payload]:
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        },
        {"type": "ping"},
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": p},
            }
            for p in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def tool_block(index: int, call_id: str, name: str, *fragments: str) -> list[Payload]:
    start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment},
            }
            for fragment in fragments
        ),
        {"type": "content_block_stop", "index": index},
    ]


def message_end(stop_reason: str, output_tokens: int) -> list[Payload]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def anthropic_error(status: int, kind: str, message: str) -> httpx2.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return httpx2.Response(
        status, json=body, headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"}
    )
