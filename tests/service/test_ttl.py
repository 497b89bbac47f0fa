"""One TTL rule (``service.ttl``) for every way in: the library's ``MemoryService`` and the
client refuse what the REST API and MCP refuse, with the same message. (The REST and MCP
answers: ``tests/server/test_malformed_parity.py``, ``tests/mcp/test_mcp_malformed.py``.)"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from memstack.client import MemoryClient
from memstack.errors import InvalidInput
from memstack.service.memories import MemoryService
from memstack.service.principal import Principal
from memstack.service.ttl import MAX_TTL_SECONDS, check_ttl, expiry_from_ttl

ACME = Principal(tenant="acme")
NOW = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
RANGE = "give 1 to 315360000 seconds"
NOT_A_TIME = "is not a time"

REFUSED = [
    (0, RANGE),
    (0.5, RANGE),  # stored expired before anyone could read it
    (1e-133, RANGE),
    (0.999, RANGE),
    (-1, RANGE),
    (MAX_TTL_SECONDS + 1, RANGE),
    (MAX_TTL_SECONDS + 0.5, RANGE),
    (2**1024, RANGE),  # no float: math.isfinite raised OverflowError
    (-(2**1024), RANGE),
    (10**5000, RANGE),  # its repr raises ValueError
    (float("nan"), RANGE),
    (float("inf"), RANGE),
    (float("-inf"), RANGE),
    (True, NOT_A_TIME),
    ("soon", NOT_A_TIME),
    ("x" * 1_000_000, NOT_A_TIME),
    ([3600], NOT_A_TIME),
    ({"seconds": 1}, NOT_A_TIME),
    ("2099-01-01T00:00:00Z", "more than ten years away"),
]
ACCEPTED = [
    (1, NOW + 1),
    (1.0, NOW + 1),
    (1.5, NOW + 1.5),
    (3600, NOW + 3600),
    (MAX_TTL_SECONDS, NOW + MAX_TTL_SECONDS),
    ("2026-01-02T00:00:00Z", NOW + 86_400),
    ("2026-01-02T00:00:00", NOW + 86_400),  # no zone: UTC
    (datetime(2026, 1, 2, tzinfo=UTC), NOW + 86_400),
    ("2001-01-01T00:00:00Z", datetime(2001, 1, 1, tzinfo=UTC).timestamp()),  # stored expired
    (None, None),
]


def _id(value: object) -> str:
    return repr(value)[:24] if not isinstance(value, int) or abs(value) < 10**20 else "huge"


@pytest.mark.parametrize(("ttl", "says"), REFUSED, ids=[_id(t) for t, _ in REFUSED])
def test_the_rule_refuses_with_a_message_naming_ttl_and_the_range(ttl: object, says: str):
    with pytest.raises(InvalidInput) as raised:
        expiry_from_ttl(ttl, now=NOW)
    assert raised.value.field == "ttl"
    assert says in str(raised.value) and len(str(raised.value)) < 300


@pytest.mark.parametrize(("ttl", "expires"), ACCEPTED, ids=[_id(t) for t, _ in ACCEPTED])
def test_the_rule_accepts_a_second_or_more(ttl: object, expires: float | None):
    assert expiry_from_ttl(ttl, now=NOW) == expires
    check_ttl(ttl)


@pytest.mark.parametrize(("ttl", "says"), REFUSED[:-1], ids=[_id(t) for t, _ in REFUSED[:-1]])
async def test_the_library_refuses_what_the_rule_refuses(
    service: MemoryService, ttl: object, says: str
):
    with pytest.raises(InvalidInput) as raised:
        await service.store(ACME, agent_id="bot", key="k", value="v", ttl=ttl)
    assert raised.value.field == "ttl" and says in str(raised.value)
    assert (await service.list(ACME)).total == 0


@pytest.mark.parametrize(("ttl", "says"), REFUSED[:-1], ids=[_id(t) for t, _ in REFUSED[:-1]])
def test_the_client_refuses_before_sending(ttl: object, says: str):
    def nothing_is_sent(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"the client sent {request.method} {request.url}")

    transport = httpx.MockTransport(nothing_is_sent)
    with MemoryClient("http://memstack.test", api_key="msk_x", transport=transport) as client:
        for call in (
            lambda: client.store("bot", "k", "v", ttl=ttl),  # type: ignore[arg-type]
            lambda: client.update("mem_" + "0" * 32, ttl=ttl),  # type: ignore[arg-type]
        ):
            with pytest.raises(InvalidInput) as raised:
                call()
            assert raised.value.field == "ttl" and says in str(raised.value)
