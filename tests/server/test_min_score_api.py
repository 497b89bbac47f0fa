"""``min_score`` over REST and the typed client (issues 33 and 34): a user's recall and
``<recalled-memories>`` block, and the keyed memories' search, cut at the calibrated
relevance each result shows; a bad threshold answered 422 naming ``min_score``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from memstack.client import MemoryClient
from memstack.embeddings import HashEmbedder
from memstack.errors import InvalidInput
from memstack.longterm.calibration import CONTEXT_MIN_SCORE
from memstack.longterm.render import render_recalled
from memstack.service.principal import Principal
from memstack.transports.app import create_app
from memstack.wiring import Services, open_services
from tests.server.conftest import LiveServer, auth, serve_in_thread
from tests.service.test_min_score import QUERY, VALUES
from tests.service.test_users import CONVERSATION

USER = "/api/users/u1"
CALLER = Principal(tenant="acme", long_term=True)
TURNS = [
    {"speaker": speaker, "text": text, "session_id": session, "id": f"t{i}"}
    for i, (speaker, text, session) in enumerate(CONVERSATION)
]
BAD_JSON = ["-0.1", "1.5", "NaN", "Infinity", '"0.5"', "true", "[0.5]"]
"""Raw JSON values of ``min_score`` (NaN and Infinity as Python's json writes them)."""
BAD_QUERY = ["-0.1", "1.5", "nan", "inf", "half"]


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'min_score.db'}", redis_url=None, embedder=HashEmbedder()
    )
    yield services
    services.close()


@pytest.fixture
def key(services: Services) -> str:
    return services.keys.create(tenant="acme", long_term=True)[0]


async def _fill(client: httpx.AsyncClient, key: str) -> None:
    """The conversation's turns for user u1 and the keyed memories of agent bot."""
    stored = await client.post(f"{USER}/turns", json={"turns": TURNS}, headers=auth(key))
    assert stored.status_code == 200, stored.text
    for name, value in VALUES.items():
        body = {"agent_id": "bot", "key": name, "value": value}
        answer = await client.post("/api/memories", json=body, headers=auth(key))
        assert answer.status_code == 201, answer.text


@pytest.fixture
async def api(services: Services, key: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(services))
    async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as client:
        await _fill(client, key)
        yield client


def _between(values: list[float]) -> float:
    """A threshold with some of ``values`` below it and some above."""
    distinct = sorted(set(values))
    assert len(distinct) >= 3, distinct
    middle = len(distinct) // 2
    return (distinct[middle - 1] + distinct[middle]) / 2


async def test_recall_cuts_at_min_score(api: httpx.AsyncClient, key: str):
    body = {"query": QUERY, "k": 9, "touch": False}
    found = (await api.post(f"{USER}/recall", json=body, headers=auth(key))).json()["results"]
    assert len(found) == 9 and all(0 <= r["scores"]["calibrated"] <= 1 for r in found)
    threshold = _between([r["scores"]["calibrated"] for r in found])
    cut = await api.post(f"{USER}/recall", json={**body, "min_score": threshold}, headers=auth(key))
    assert cut.status_code == 200, cut.text
    expected = [r["id"] for r in found if r["scores"]["calibrated"] >= threshold]
    assert [r["id"] for r in cut.json()["results"]] == expected and 0 < len(expected) < 9


async def test_the_block_cuts_at_min_score_and_by_default_at_context_min_score(
    api: httpx.AsyncClient, key: str, services: Services
):
    found = await services.users.recall(CALLER, "u1", QUERY, k=9, touch=False)
    threshold = _between([m.scores.calibrated for m in found])
    # Each block touches what it holds: each is compared with a recall just before it.
    for given, cut in ((threshold, threshold), (None, CONTEXT_MIN_SCORE), (0, 0)):
        now = await services.users.recall(CALLER, "u1", QUERY, k=9, touch=False)
        params = {"query": QUERY, "k": 9, **({} if given is None else {"min_score": given})}
        answer = await api.get(f"{USER}/context", params=params, headers=auth(key))
        assert answer.status_code == 200, answer.text
        kept = [m for m in now if m.scores.calibrated >= cut]
        assert answer.json()["block"] == render_recalled(kept)
    assert answer.json()["block"].count("\n- [") == 9  # min_score 0: all k


async def test_the_keyed_search_shows_calibrated_and_cuts_at_it(api: httpx.AsyncClient, key: str):
    body = {"query": QUERY, "agent_id": "bot", "limit": len(VALUES)}
    answer = await api.post("/api/memories/search", json=body, headers=auth(key))
    hits = answer.json()["results"]
    assert len(hits) == len(VALUES) and all(0 <= h["calibrated"] <= 1 for h in hits)
    threshold = _between([h["calibrated"] for h in hits])
    cut = await api.post(
        "/api/memories/search", json={**body, "min_score": threshold}, headers=auth(key)
    )
    assert cut.status_code == 200, cut.text
    expected = [h["memory"]["id"] for h in hits if h["calibrated"] >= threshold]
    assert [h["memory"]["id"] for h in cut.json()["results"]] == expected
    assert 0 < len(expected) < len(hits)


def _field(answer: httpx.Response) -> str:
    assert answer.status_code == 422, answer.text
    field: str = answer.json()["error"]["field"]
    return field


@pytest.mark.parametrize("value", BAD_JSON)
@pytest.mark.parametrize(
    ("path", "body"),
    [
        (f"{USER}/recall", '{"query": "dog", "min_score": %s}'),
        ("/api/memories/search", '{"query": "dog", "min_score": %s}'),
    ],
    ids=["recall", "search"],
)
async def test_a_bad_min_score_in_a_body_is_422_naming_it(
    api: httpx.AsyncClient, key: str, path: str, body: str, value: str
):
    headers = {**auth(key), "Content-Type": "application/json"}
    answer = await api.post(path, content=body % value, headers=headers)
    assert _field(answer) == "min_score"


@pytest.mark.parametrize("value", BAD_QUERY)
async def test_a_bad_min_score_of_the_block_is_422_naming_it(
    api: httpx.AsyncClient, key: str, value: str
):
    params = {"query": "dog", "min_score": value}
    answer = await api.get(f"{USER}/context", params=params, headers=auth(key))
    assert _field(answer) == "min_score"


@pytest.fixture
def live(services: Services, key: str) -> Iterator[LiveServer]:
    running = serve_in_thread(services)
    yield running
    running.server.should_exit = True
    running.thread.join(timeout=10)


async def test_the_client_passes_min_score_to_each_call(live: LiveServer, key: str):
    transport = httpx.AsyncHTTPTransport()
    async with httpx.AsyncClient(transport=transport, base_url=live.url) as http:
        await _fill(http, key)
    with MemoryClient(live.url, api_key=key) as client:
        found = client.recall("u1", QUERY, k=9, touch=False)["results"]
        threshold = _between([r["scores"]["calibrated"] for r in found])
        cut = client.recall("u1", QUERY, k=9, touch=False, min_score=threshold)["results"]
        expected = [r["id"] for r in found if r["scores"]["calibrated"] >= threshold]
        assert [r["id"] for r in cut] == expected and 0 < len(expected) < 9
        assert client.recalled_context("u1", QUERY, k=9, min_score=1.0) == {"block": ""}
        every = client.recalled_context("u1", QUERY, k=9, min_score=0)["block"]
        assert every.count("\n- [") == 9
        hits = client.search(QUERY, agent_id="bot", limit=len(VALUES))["results"]
        at = _between([h["calibrated"] for h in hits])
        kept = client.search(QUERY, agent_id="bot", limit=len(VALUES), min_score=at)["results"]
        expected = [h["memory"]["id"] for h in hits if h["calibrated"] >= at]
        assert [h["memory"]["id"] for h in kept] == expected and 0 < len(expected) < len(hits)
        for call in (
            lambda: client.recall("u1", "dog", min_score=1.5),
            lambda: client.recalled_context("u1", "dog", min_score=-0.1),
            lambda: client.search("dog", min_score=2),
        ):
            with pytest.raises(InvalidInput) as raised:
                call()
            assert raised.value.field == "min_score"
