"""The inspector's Users view in a real headless Chromium against a real ``memstack serve``:
the tenant's users, one user's turns by session and facts with provenance and history, a
recall with its scores, forgetting one memory, and a key without long-term memory told
why. Each check is against what the REST API answers for the same user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.alert import Alert
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from memstack.bench.spawn import SpawnedServer, spawned_server
from tests.inspector.page import InspectorPage

SCORE, KIND, R_TEXT, R_PROVENANCE, TERMS, R_ACTIONS = range(6)  # the recall's columns
F_KIND, F_TEXT, F_IMPORTANCE, F_METADATA, F_PROVENANCE, F_VALID, F_ACTIONS = range(7)  # the facts'
WHEN, SPEAKER, SAID, T_METADATA, T_ACTIONS = range(5)  # a session's turns
NUMBER, V_TEXT, V_FROM, V_TO, V_BY = range(5)  # the history's
USERS_PAGE = 100  # user ids the page asks for at a time (users.js)
USER_BATCH = 2000  # memories it loads before offering to load more (users.js)
DAY = 86_400.0
START = 1_778_230_800.0  # 2026-05-08T09:00:00Z


@pytest.fixture(scope="module")
def server() -> Iterator[SpawnedServer]:
    """The inspector's server, with no cap on a user's memories (``max_items``): a test
    stores more than a page loads at once."""
    with spawned_server("hash", env={**os.environ, "MEMSTACK_MEMORY_MAX_ITEMS": "0"}) as running:
        yield running


@pytest.fixture(scope="module")
def long_term_key(server: SpawnedServer) -> str:
    """A key of the server's tenant with long-term memory on, made as an operator makes
    it (``memstack keys create --long-term``); the server's own key has it off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTACK_")}
    create = ["keys", "create", "--tenant", server.tenant, "--long-term", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "memstack", *create, "--db", str(server.db)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    made = json.loads(done.stdout)
    assert made["long_term"] is True
    return str(made["key"])


@pytest.fixture
def users_api(server: SpawnedServer, long_term_key: str) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {long_term_key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        yield client


def new_user() -> str:
    return f"user-{uuid.uuid4().hex[:8]}"


def add_turns(api: httpx.Client, user: str, turns: list[dict[str, Any]]) -> list[str]:
    reply = api.post(f"/api/users/{user}/turns", json={"turns": turns})
    assert reply.status_code == 200, reply.text
    outcomes = reply.json()["turns"]
    assert [t["outcome"] for t in outcomes] == ["stored"] * len(turns), outcomes
    return [str(t["id"]) for t in outcomes]


def remember(api: httpx.Client, user: str, text: str, **body: Any) -> str:
    reply = api.post(f"/api/users/{user}/memories", json={"text": text, **body})
    assert reply.status_code == 201, reply.text
    assert reply.json()["outcome"] == "stored", reply.text
    return str(reply.json()["id"])


def shown(iso: str) -> str:
    """A time as the page writes it: "2026-01-31 12:00:00Z"."""
    return iso.replace("T", " ").split(".")[0] + "Z"


def open_user(page: InspectorPage, key: str, user: str) -> None:
    """Sign in, open the Users view and type ``user`` in the box."""
    page.open()
    page.sign_in_and_wait(key)
    page.tab("users")
    page.by_id("user-id").clear()
    page.by_id("user-id").send_keys(user)
    page.by_id("user-id").submit()
    page.until(lambda _: page.visible("user") and user in page.by_id("user-title").text)
    page.settled()


def sessions(page: InspectorPage) -> dict[str, list[list[str]]]:
    """Each session shown, in the page's order, with its turns' cells."""
    found = page.driver.execute_script(
        "return [...document.querySelectorAll('#sessions section.session')].map(s => "
        "[s.dataset.session, [...s.querySelectorAll('tbody tr')]"
        ".map(r => [...r.cells].map(c => c.textContent))]);"
    )
    return {str(name): [list(map(str, row)) for row in rows] for name, rows in found}


def ids(page: InspectorPage, selector: str) -> list[str]:
    found = page.driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(r => r.dataset.id);", selector
    )
    return [str(i) for i in found]


def test_the_tenants_users_are_listed_and_one_opens_by_a_click(
    page: InspectorPage, users_api: httpx.Client, long_term_key: str
):
    first, second = sorted([new_user(), new_user()])
    add_turns(users_api, first, [{"speaker": "Ann", "text": "Hello.", "session_id": "s1"}])
    remember(users_api, second, "Bo likes chess.")
    listed = users_api.get("/api/users", params={"limit": 1000}).json()["users"]
    assert first in listed and second in listed

    page.open()
    page.sign_in_and_wait(long_term_key)
    page.tab("users")
    assert not page.visible("filters")  # the memory filters do not apply to users
    shown_ids = page.driver.execute_script(
        "return [...document.querySelectorAll('#users-list button')].map(b => b.textContent);"
    )
    assert shown_ids == listed[:USERS_PAGE]  # in id order, as the API lists them
    assert not page.visible("user")
    page.driver.find_element(By.XPATH, f'//ul[@id="users-list"]//button[.="{second}"]').click()
    page.until(lambda _: page.visible("user"))
    page.settled()
    assert page.by_id("user-title").text == f"User \u201c{second}\u201d"
    assert page.column("facts", F_TEXT) == ["Bo likes chess."]
    assert page.by_id("user-count").text == "0 turns in 0 sessions, 1 fact"
    page.shoot("inspector-users.png")


def test_turns_are_grouped_by_session_in_the_order_they_were_said(
    page: InspectorPage, users_api: httpx.Client, long_term_key: str
):
    user = new_user()
    old, new = START - 7 * DAY, START
    add_turns(
        users_api,
        user,
        [  # sent out of order: the page orders them by when they were said
            {"speaker": "Ann", "text": "And I got a dog.", "session_id": "s-old", "time": old + 60},
            {"speaker": "Ann", "text": "I moved to Berlin.", "session_id": "s-old", "time": old},
            {"speaker": "Bo", "text": "Nice!", "session_id": "s-old", "time": old + 30},
            {
                "speaker": "Ann",
                "text": "The dog is called Oscar.",
                "session_id": "s-new",
                "time": new,
                "metadata": {"channel": "sms"},
            },
        ],
    )
    # a fact may carry a turn's metadata keys (where it was learned): it is still a fact
    where = {"speaker": "Ann", "session_id": "s-old", "turn_seq": 1}
    remember(users_api, user, "Ann lives in Berlin.", kind="identity", metadata=where)
    remember(users_api, user, "Ann moved on 1 May.", kind="event")  # an event, not a turn

    open_user(page, long_term_key, user)
    grouped = sessions(page)
    assert list(grouped) == ["s-new", "s-old"]  # the latest session first
    assert [(r[SPEAKER], r[SAID]) for r in grouped["s-old"]] == [
        ("Ann", "I moved to Berlin."),
        ("Bo", "Nice!"),
        ("Ann", "And I got a dog."),
    ]
    [oscar] = grouped["s-new"]
    assert oscar[SAID] == "The dog is called Oscar." and oscar[WHEN] == "2026-05-08 09:00:00Z"
    assert oscar[T_METADATA] == '{"channel":"sms"}'
    facts = sorted(page.column("facts", F_TEXT))
    assert facts == ["Ann lives in Berlin.", "Ann moved on 1 May."]  # facts, not turns
    assert page.by_id("user-count").text == "4 turns in 2 sessions, 2 facts"
    heading = page.driver.find_element(By.CSS_SELECTOR, '#sessions [data-session="s-old"] h5')
    assert heading.text.startswith("Session \u201cs-old\u201d: 3 turns, 2026-05-01 09:00:00Z")
    page.shoot("inspector-user-sessions.png")


def test_every_page_of_a_users_memories_is_followed(
    page: InspectorPage, users_api: httpx.Client, long_term_key: str
):
    user = new_user()
    turns = [
        {"speaker": "Ann", "text": f"Line {i}.", "session_id": "long", "time": START + i}
        for i in range(450)  # more than two pages of the page's requests
    ]
    add_turns(users_api, user, turns)

    open_user(page, long_term_key, user)
    said = [row[SAID] for row in sessions(page)["long"]]
    assert said == [f"Line {i}." for i in range(450)]
    assert page.by_id("user-count").text == "450 turns in 1 session, 0 facts"
    assert not page.visible("user-more")  # everything is loaded


def test_more_users_and_more_memories_load_on_demand(
    page: InspectorPage, users_api: httpx.Client, long_term_key: str
):
    many = [f"zz-{uuid.uuid4().hex[:8]}" for _ in range(USERS_PAGE + 1)]  # listed after user-*
    for user in many:
        remember(users_api, user, "A fact.")
    user = new_user()
    for part in range(3):
        turns = [
            {"speaker": "Ann", "text": f"Line {i}.", "session_id": "long", "time": START + i}
            for i in range(part * 700, (part + 1) * 700)
        ]
        add_turns(users_api, user, turns)
    listed: list[str] = []
    params = {"limit": 1000}
    while True:
        page_of = users_api.get("/api/users", params=params).json()
        listed += page_of["users"]
        if page_of["next_cursor"] is None:
            break
        params["cursor"] = page_of["next_cursor"]

    open_user(page, long_term_key, user)
    buttons = "return [...document.querySelectorAll('#users-list button')].map(b => b.textContent);"
    assert page.driver.execute_script(buttons) == listed[:USERS_PAGE]
    page.by_id("users-more").click()
    page.settled()
    assert page.driver.execute_script(buttons) == listed
    assert not page.visible("users-more")

    assert len(sessions(page)["long"]) == USER_BATCH
    assert page.by_id("user-count").text == "2000 turns in 1 session, 0 facts, more to load"
    page.by_id("user-more").click()
    page.until(lambda _: len(sessions(page)["long"]) == 2100)
    page.settled()
    said = [row[SAID] for row in sessions(page)["long"]]
    assert said == [f"Line {i}." for i in range(2100)]
    assert not page.visible("user-more")


def test_a_fact_shows_its_provenance_and_its_history_after_a_supersede(
    page: InspectorPage, users_api: httpx.Client, long_term_key: str
):
    user = new_user()
    imported = {
        "id": f"fact-{uuid.uuid4().hex[:8]}",
        "text": "Ann lives in Lisbon.",
        "kind": "identity",
        "importance": 0.8,
        "provenance": "extracted",
        "provenance_detail": "scripted:extractor",
        "created_at": START - DAY,
    }
    reply = users_api.post(f"/api/users/{user}/import", json={"memories": [imported]})
    assert reply.json() == {"stored": 1, "skipped": 0}, reply.text
    newer = remember(users_api, user, "Ann lives in Berlin.", supersedes=[imported["id"]])
    versions = users_api.get(f"/api/users/{user}/memories/{newer}/history").json()["versions"]
    assert [v["id"] for v in versions] == [imported["id"], newer]
    current = users_api.get(f"/api/users/{user}/memories").json()["memories"]

    open_user(page, long_term_key, user)
    [row] = page.rows("facts")  # the replaced fact is history, not a current fact
    assert row[F_TEXT] == "Ann lives in Berlin."
    assert row[F_PROVENANCE] == current[0]["provenance"]
    assert row[F_VALID] == f"since {shown(current[0]['valid_from'])}"
    page.by_id("user-superseded").click()
    page.until(lambda _: len(page.rows("facts")) == 2)
    page.settled()
    replaced = {r[F_TEXT]: r for r in page.rows("facts")}["Ann lives in Lisbon."]
    assert replaced[F_PROVENANCE] == "extracted (scripted:extractor)"
    assert (replaced[F_KIND], replaced[F_IMPORTANCE]) == ("identity", "0.800")
    assert replaced[F_VALID] == (
        f"{shown(versions[0]['valid_from'])} \u2013 {shown(versions[0]['valid_to'])}"
    )

    page.press("facts", f"History {newer}")
    page.until(lambda _: page.visible("user-history"))
    page.until(lambda _: len(page.rows("user-versions")) == 2)
    rows = page.rows("user-versions")
    assert [r[V_TEXT] for r in rows] == ["Ann lives in Lisbon.", "Ann lives in Berlin."]
    assert [r[V_FROM] for r in rows] == [shown(v["valid_from"]) for v in versions]
    assert [r[V_TO] for r in rows] == [shown(versions[0]["valid_to"]), "current"]
    assert [r[V_BY] for r in rows] == [f"version 2 ({newer})", ""]
    assert page.by_id("user-history-id").text == f"{newer}: 2 versions, oldest first"
    page.shoot("inspector-user-history.png")
    page.by_id("user-history-close").click()
    page.until(lambda _: not page.visible("user-history"))


def test_a_recall_shows_the_ranked_results_with_their_scores(
    page: InspectorPage, users_api: httpx.Client, long_term_key: str
):
    user = new_user()
    add_turns(
        users_api,
        user,
        [
            {"speaker": "Ann", "text": "My cat Miso eats fish.", "session_id": "s1", "time": START},
            {"speaker": "Bo", "text": "Is Miso a cat?", "session_id": "s1", "time": START + 5},
            {"speaker": "Ann", "text": "I work at a bakery.", "session_id": "s2", "time": START},
        ],
    )
    remember(users_api, user, "Ann has a cat named Miso.", kind="fact", importance=0.9)
    body = {"query": "cat named Miso", "k": 3, "touch": False}
    expected = users_api.post(f"/api/users/{user}/recall", json=body).json()["results"]
    assert len(expected) == 3

    open_user(page, long_term_key, user)
    page.by_id("recall-q").send_keys("cat named Miso")
    page.by_id("recall-k").clear()
    page.by_id("recall-k").send_keys("3")
    page.by_id("recall-q").submit()
    page.until(lambda _: page.visible("recalled") and len(page.rows("recalled")) == 3)
    assert ids(page, "#recalled tbody tr") == [hit["id"] for hit in expected]  # best first
    rows = page.rows("recalled")
    assert [r[SCORE] for r in rows] == [f"{hit['score']:.3f}" for hit in expected]
    for row, hit in zip(rows, expected, strict=True):
        assert row[R_TEXT] == hit["text"]
        assert row[KIND] == ("turn" if hit["session_id"] else hit["kind"])
        assert f"similarity {hit['scores']['similarity']:.3f}" in row[TERMS]
        assert f"recency {hit['scores']['recency']:.3f}" in row[TERMS]
    assert page.by_id("status").text == "3 memories recalled for \u201ccat named Miso\u201d."
    page.shoot("inspector-user-recall.png")
    again = users_api.post(f"/api/users/{user}/recall", json=body).json()["results"]
    assert [h["last_accessed_at"] for h in again] == [h["last_accessed_at"] for h in expected]


def test_forget_asks_first_then_deletes_the_memory(
    page: InspectorPage, users_api: httpx.Client, long_term_key: str
):
    user = new_user()
    doomed = remember(users_api, user, "Ann is allergic to peanuts.")
    kept = remember(users_api, user, "Ann likes tea.")
    [turn] = add_turns(
        users_api, user, [{"speaker": "Ann", "text": "Hi there.", "session_id": "s1"}]
    )

    open_user(page, long_term_key, user)
    page.press("facts", f"Forget {doomed}")
    alert = page.until(ec.alert_is_present())
    assert isinstance(alert, Alert) and alert.text.startswith("Forget this memory of")
    assert "Ann is allergic to peanuts." in alert.text
    alert.dismiss()
    page.settled()
    assert users_api.get(f"/api/users/{user}/memories/{doomed}/history").status_code == 200
    assert sorted(ids(page, "#facts tbody tr")) == sorted([doomed, kept])

    page.press("facts", f"Forget {doomed}")
    page.confirm()
    page.until(lambda _: ids(page, "#facts tbody tr") == [kept])
    assert users_api.get(f"/api/users/{user}/memories/{doomed}/history").status_code == 404
    assert "Forgot a memory" in page.by_id("status").text

    page.press("sessions", f"Forget {turn}")
    page.confirm()
    page.until(lambda _: sessions(page) == {})
    left = users_api.get(f"/api/users/{user}/memories").json()["memories"]
    assert [m["id"] for m in left] == [kept]


def test_a_key_without_long_term_memory_sees_the_servers_reason(
    page: InspectorPage, api: httpx.Client
):
    refused = api.get("/api/users")
    assert refused.status_code == 403
    message = refused.json()["error"]["message"]
    assert "--long-term" in message

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.tab("users")
    page.until(lambda _: page.visible("users-error"))
    assert page.by_id("users-error").text == message
    assert not page.visible("user")
    page.shoot("inspector-users-off.png")


def test_untrusted_text_of_a_user_is_shown_as_text(
    page: InspectorPage, users_api: httpx.Client, long_term_key: str
):
    user = new_user()
    attack = "<img src=x id=pwned onerror=\"document.title='pwned'\"><script>alert(1)</script>"
    session = "<i>s</i><script>document.title='pwned'</script>"
    [turn] = add_turns(
        users_api,
        user,
        [{"speaker": "<b>Eve</b>", "text": attack, "session_id": session, "time": START}],
    )
    fact = remember(users_api, user, f"Eve wrote {attack}", metadata={"<i>": "</td>"})

    open_user(page, long_term_key, user)
    [[cells]] = sessions(page).values()
    assert (cells[SPEAKER], cells[SAID]) == ("<b>Eve</b>", attack)
    assert list(sessions(page)) == [session]
    assert page.column("facts", F_TEXT) == [f"Eve wrote {attack}"]
    assert page.column("facts", F_METADATA) == ['{"<i>":"</td>"}']
    page.by_id("recall-q").send_keys("Eve wrote")
    page.by_id("recall-q").submit()
    page.until(lambda _: len(page.rows("recalled")) == 2)
    assert sorted(ids(page, "#recalled tbody tr")) == sorted([turn, fact])
    page.press("facts", f"History {fact}")
    page.until(lambda _: page.visible("user-history"))
    page.until(lambda _: page.column("user-versions", V_TEXT) == [f"Eve wrote {attack}"])
    markup = (
        "return document.querySelectorAll('#view-users img, #view-users b, #view-users i, "
        "#view-users script, #user-history img, #user-history script').length"
    )
    assert page.driver.execute_script(markup) == 0
    assert page.driver.title == "memstack inspector"
