"""The per-user collection a LongTermMemory lives in: ``ltm_<user>_<namespace>[:<workspace>]``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memstack.errors import InvalidInput

__all__ = ["Collection"]

_SAFE = re.compile(r"[A-Za-z0-9-]")
_MAX_PART = 200
_MAX_NAME_BYTES = 1024


@dataclass(frozen=True, kw_only=True)
class Collection:
    """Whose memories, in which bucket. ``name`` is the one place the storage name is built.

    Each part is sanitized so the name stays injective: any character outside
    ``[A-Za-z0-9-]`` (``_``, ``:`` and ``.`` included) is written as ``.xx`` hex,
    so user ``a_b`` in namespace ``c`` can never share a collection with user
    ``a`` in namespace ``b_c``.
    """

    user_id: str
    namespace: str = "chat"
    workspace_id: str | None = None

    def __post_init__(self) -> None:
        for field, value in (("user_id", self.user_id), ("namespace", self.namespace)):
            _check(field, value)
        if self.workspace_id is not None:
            _check("workspace_id", self.workspace_id)
        if len(self.name.encode()) > _MAX_NAME_BYTES:
            raise InvalidInput(
                f"the collection name for this user, namespace and workspace is over "
                f"{_MAX_NAME_BYTES} bytes once encoded; use shorter (ASCII) ids.",
                field="user_id",
            )

    @property
    def name(self) -> str:
        base = f"ltm_{_encode(self.user_id)}_{_encode(self.namespace)}"
        return f"{base}:{_encode(self.workspace_id)}" if self.workspace_id is not None else base


def _check(field: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string; got {value!r}.", field=field)
    if len(value) > _MAX_PART:
        raise InvalidInput(f"{field} is longer than {_MAX_PART} characters.", field=field)


def _encode(part: str) -> str:
    return "".join(
        ch if _SAFE.fullmatch(ch) else "".join(f".{b:02x}" for b in ch.encode("utf-8"))
        for ch in part
    )
