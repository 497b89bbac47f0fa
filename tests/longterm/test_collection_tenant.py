"""A ``Collection`` with a ``tenant`` (issue 32): its own ``users`` root, one per tenant,
and the library's ``ltm`` layout unchanged without one."""

from __future__ import annotations

import pytest

from memstack.errors import InvalidInput
from memstack.longterm import Collection
from memstack.storage import Namespace
from memstack.storage.namespace import ROOTS
from tests.longterm.secret_corpus import ALL_SECRETS


def test_without_a_tenant_the_layout_is_the_librarys():
    assert Collection(user_id="u1").name == "ltm/u1/chat"
    assert Collection(user_id="u1", workspace_id="w").name == "ltm/u1/chat/w"


def test_a_tenants_user_is_under_the_users_root():
    collection = Collection(user_id="u1", tenant="acme")
    assert collection.storage_namespace == Namespace("users", "acme", "u1", "chat")
    assert collection.name == "users/acme/u1/chat"
    assert Collection(user_id="u1", tenant="acme", workspace_id="w").name == "users/acme/u1/chat/w"
    assert "users" in ROOTS and "jobs" in ROOTS


@pytest.mark.parametrize(
    "first,second",
    [
        (Collection(user_id="u1", tenant="a"), Collection(user_id="u1", tenant="b")),
        (Collection(user_id="u1", tenant="a"), Collection(user_id="u1")),
        (Collection(user_id="b/u1", tenant="a"), Collection(user_id="u1", tenant="a/b")),
        (Collection(user_id="u1", tenant="a/u1"), Collection(user_id="u1/chat", tenant="a")),
    ],
)
def test_two_owners_never_share_a_name(first: Collection, second: Collection):
    assert first.name != second.name
    assert Namespace.decode(first.name) == first.storage_namespace


@pytest.mark.parametrize("tenant", ["", "   ", 7, "x" * 201, ALL_SECRETS[0][1]])
def test_a_bad_tenant_is_refused_by_name(tenant: object):
    with pytest.raises(InvalidInput) as raised:
        Collection(user_id="u1", tenant=tenant)  # type: ignore[arg-type]
    assert raised.value.field == "tenant"
