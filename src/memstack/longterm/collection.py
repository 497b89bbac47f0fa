"""The per-user collection a LongTermMemory lives in: ``ltm/<user>/<namespace>[/<workspace>]``,
or ``users/<tenant>/<user>/<namespace>[/<workspace>]`` for a served tenant's user."""

from __future__ import annotations

from dataclasses import dataclass

from memstack._json import JSON
from memstack.errors import InvalidInput
from memstack.secrets import refuse_secrets
from memstack.storage.namespace import Namespace

__all__ = ["Collection"]

_MAX_PART = 200
_MAX_NAME_BYTES = 1024


@dataclass(frozen=True, kw_only=True)
class Collection:
    """Whose memories, in which bucket. ``name`` is the one place the storage name is built.

    ``storage_namespace`` is its ``Namespace`` under the ``ltm`` root, whose one encoder
    keeps names injective: user ``a/b`` in namespace ``c`` never shares a collection
    with user ``a`` in namespace ``b/c``. With a ``tenant`` (the server's users, one
    tenant's apart from every other's) it is under the ``users`` root instead, so tenant
    A's user ``u1`` and tenant B's ``u1`` never share one, nor share one with a library's.
    """

    user_id: str
    namespace: str = "chat"
    workspace_id: str | None = None
    tenant: str | None = None

    def __post_init__(self) -> None:
        for field, value in (("user_id", self.user_id), ("namespace", self.namespace)):
            _check(field, value)
        for field, optional in (("workspace_id", self.workspace_id), ("tenant", self.tenant)):
            if optional is not None:
                _check(field, optional)
        ids: dict[str, JSON] = {
            "user_id": self.user_id,
            "namespace": self.namespace,
            "workspace_id": self.workspace_id,
            "tenant": self.tenant,
        }
        refuse_secrets(ids, where="a collection's name")  # the name is stored
        if len(self.name.encode()) > _MAX_NAME_BYTES:
            raise InvalidInput(
                f"the collection name for this user, namespace and workspace is over "
                f"{_MAX_NAME_BYTES} bytes once encoded; use shorter (ASCII) ids.",
                field="user_id",
            )

    @property
    def storage_namespace(self) -> Namespace:
        parts: tuple[str, ...] = (self.user_id, self.namespace)
        if self.workspace_id is not None:
            parts = (*parts, self.workspace_id)
        if self.tenant is not None:
            return Namespace("users", self.tenant, *parts)
        return Namespace("ltm", *parts)

    @property
    def name(self) -> str:
        """The encoded namespace, as the record store keeps it."""
        return self.storage_namespace.encode()


def _check(field: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string; got {value!r}.", field=field)
    if len(value) > _MAX_PART:
        raise InvalidInput(f"{field} is longer than {_MAX_PART} characters.", field=field)
