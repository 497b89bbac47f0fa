"""The inspector in a real headless Chromium against a real ``memstack serve``: what the
API stored is listed, searched with its scores, edited and deleted, and every change
the page makes is checked through the API afterwards."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from memstack.bench.spawn import SpawnedServer
from tests.inspector.page import InspectorPage

KEY, VALUE, AGENT, SCOPE, SESSION, METADATA, EXPIRES, UPDATED, VALID, PROVENANCE = range(10)
ACTIONS = PROVENANCE + 1  # the memories' columns
NUMBER, V_VALUE, V_FROM, V_TO, V_ENDED = range(5)  # the history's columns


def new_agent() -> str:
    return f"agent-{uuid.uuid4().hex[:8]}"


def store(api: httpx.Client, **body: Any) -> dict[str, Any]:
    reply = api.post("/api/memories", json=body)
    assert reply.status_code == 201, reply.text
    stored: dict[str, Any] = reply.json()
    return stored


def update(api: httpx.Client, memory_id: str, value: str) -> None:
    reply = api.put(f"/api/memories/{memory_id}", json={"value": value})
    assert reply.status_code == 200, reply.text


def shown(iso: str) -> str:
    """A time as the page writes it: "2026-01-31 12:00:00Z"."""
    return iso.replace("T", " ").split(".")[0] + "Z"


def test_the_page_asks_for_the_key_and_refuses_a_wrong_one(
    page: InspectorPage, server: SpawnedServer
):
    page.open()
    assert not page.visible("app")
    page.shoot("inspector-key.png")
    page.sign_in("not-a-key")
    page.until(lambda _: "That API key was refused" in page.by_id("status").text)
    assert page.visible("login") and not page.visible("app")
    assert httpx.get(f"{server.url}/api/memories").status_code == 401  # no key, no data


def test_it_lists_what_the_api_stored_by_agent_scope_and_session(
    page: InspectorPage, api: httpx.Client
):
    agent = new_agent()
    store(api, agent_id=agent, key="language", value="Answers in French.", ttl=3600)
    store(
        api,
        agent_id=agent,
        key="topic",
        value="Refund for order 7.",
        scope="session",
        session_id="chat-1",
        metadata={"channel": "email"},
    )
    store(api, agent_id=agent, key="policy", value="Refunds take 14 days.", scope="global")
    store(api, agent_id=new_agent(), key="elsewhere", value="Another agent's note.")

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.until(lambda _: len(page.rows("memories")) == 3)
    rows = {row[KEY]: row for row in page.rows("memories")}
    assert rows["topic"][VALUE] == "Refund for order 7."
    assert (rows["topic"][SCOPE], rows["topic"][SESSION]) == ("session", "chat-1")
    assert rows["topic"][METADATA] == '{"channel":"email"}'
    assert rows["language"][EXPIRES] != "never" and rows["policy"][EXPIRES] == "never"
    page.shoot("inspector-memories.png")

    page.filter(agent=agent, scope="session", session="chat-1")
    page.until(lambda _: page.column("memories", KEY) == ["topic"])


def test_untrusted_text_is_shown_as_text(page: InspectorPage, api: httpx.Client):
    agent = new_agent()
    attack = "<img src=x id=pwned onerror=\"document.title='pwned'\"><script>alert(1)</script>"
    store(api, agent_id=agent, key="<b>bold</b>", value=attack, metadata={"<i>": "</td>"})

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.wait_for_row("memories", KEY, "<b>bold</b>")
    [row] = page.rows("memories")
    assert row[VALUE] == attack
    assert row[METADATA] == '{"<i>":"</td>"}'
    markup = "return document.querySelectorAll('#memories img, #memories b').length"
    assert page.driver.execute_script(markup) == 0
    assert page.driver.title == "memstack inspector"


def test_a_search_shows_the_score_breakdown(page: InspectorPage, api: httpx.Client):
    agent = new_agent()
    store(api, agent_id=agent, key="pets", value="The user has a cat named Miso.")
    store(api, agent_id=agent, key="food", value="The user is vegetarian.")
    store(api, agent_id=agent, key="cat-food", value="Miso the cat eats fish twice a day.")

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.search("cat named Miso")
    page.until(lambda _: len(page.rows("results")) > 0)

    expected = api.post(
        "/api/memories/search", json={"query": "cat named Miso", "agent_id": agent, "limit": 20}
    ).json()["results"]
    shown = page.rows("results")
    assert [row[3] for row in shown] == [hit["memory"]["key"] for hit in expected]
    for row, hit in zip(shown, expected, strict=True):
        assert row[:3] == [f"{hit[part]:.3f}" for part in ("score", "similarity", "keyword")]
    assert float(shown[0][0]) > 0 and shown[0][3] == "pets"
    page.shoot("inspector-search.png")


def test_an_edit_reaches_the_store(page: InspectorPage, api: httpx.Client):
    agent = new_agent()
    memory = store(api, agent_id=agent, key="fav", value="Likes tea.")

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.wait_for_row("memories", KEY, "fav")
    page.press("memories", "Edit fav")
    page.until(lambda _: page.visible("editor"))
    value = page.by_id("e-value")
    value.clear()
    value.send_keys("Likes green tea, no sugar.")
    metadata = page.by_id("e-metadata")
    metadata.clear()
    metadata.send_keys('{"source": "inspector"}')
    page.by_id("e-ttl").send_keys("3600")
    page.shoot("inspector-edit.png")
    page.by_id("edit-save").click()
    page.until(lambda _: not page.visible("editor"))
    page.wait_for_row("memories", VALUE, "Likes green tea, no sugar.")

    stored = api.get(f"/api/memories/{memory['id']}").json()
    assert stored["value"] == "Likes green tea, no sugar."
    assert stored["metadata"] == {"source": "inspector"}
    assert stored["expires_at"] is not None and memory["expires_at"] is None


def test_a_bad_edit_names_the_field_and_changes_nothing(page: InspectorPage, api: httpx.Client):
    agent = new_agent()
    memory = store(api, agent_id=agent, key="fav", value="Likes tea.")

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.wait_for_row("memories", KEY, "fav")
    page.press("memories", "Edit fav")
    page.until(lambda _: page.visible("editor"))
    page.by_id("e-value").send_keys(" And coffee.")
    for metadata, said in (("{oops", "not valid JSON"), ("[1, 2]", "must be a JSON object")):
        page.by_id("e-metadata").clear()
        page.by_id("e-metadata").send_keys(metadata)
        page.by_id("edit-save").click()
        page.until(lambda _: said in page.by_id("edit-error").text)  # noqa: B023
        assert page.by_id("edit-error").text.startswith("metadata:")
    page.by_id("e-metadata").clear()
    page.by_id("e-ttl").send_keys("next tuesday")
    page.by_id("edit-save").click()
    page.until(lambda _: "ttl" in page.by_id("edit-error").text.lower())  # the server's 422
    assert page.visible("editor")
    assert api.get(f"/api/memories/{memory['id']}").json()["value"] == "Likes tea."


def test_a_delete_reaches_the_store(page: InspectorPage, api: httpx.Client):
    agent = new_agent()
    doomed = store(api, agent_id=agent, key="old", value="An outdated fact.")
    store(api, agent_id=agent, key="kept", value="A fact that stays.")

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.wait_for_row("memories", KEY, "old")
    page.press("memories", "Delete old")
    page.confirm()
    page.until(lambda _: page.column("memories", KEY) == ["kept"])
    assert api.get(f"/api/memories/{doomed['id']}").status_code == 404


def test_memories_stored_after_the_page_opened_appear_by_themselves(
    page: InspectorPage, api: httpx.Client
):
    agent = new_agent()
    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.until(lambda _: "0 of 0" in page.by_id("memories-count").text)
    store(api, agent_id=agent, key="late", value="Written by another agent meanwhile.")
    page.wait_for_row("memories", KEY, "late")


def test_knowledge_documents_are_listed_viewed_and_deleted(page: InspectorPage, api: httpx.Client):
    title = f"Refund policy {uuid.uuid4().hex[:6]}"
    text = "Refunds are paid within 14 days of the return arriving. <b>Not</b> on sale items."
    doc = api.post("/api/knowledge", json={"title": title, "text": text, "tags": ["policy"]})
    assert doc.status_code == 201
    doc_id = doc.json()["id"]

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.tab("knowledge")
    page.wait_for_row("documents", 0, title)
    assert not page.visible("filters")  # memory filters do not apply to documents
    page.press("documents", f"View {title}")
    page.until(lambda _: page.visible("document"))
    assert page.by_id("document-title").text == title
    assert page.by_id("document-text").get_attribute("textContent") == text
    page.shoot("inspector-knowledge.png")

    page.press("documents", f"Delete {title}")
    page.confirm()
    page.until(lambda _: title not in page.column("documents", 0))
    assert api.get(f"/api/knowledge/{doc_id}").status_code == 404


def test_pages_of_fifty_newest_first(page: InspectorPage, api: httpx.Client):
    agent = new_agent()
    for i in range(52):
        store(api, agent_id=agent, key=f"note-{i:02d}", value=f"Note number {i}.")

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    assert page.by_id("memories-count").text == "1\u201350 of 52 memories, newest first"
    assert page.column("memories", KEY)[0] == "note-51"
    assert not page.by_id("prev").is_enabled()
    page.by_id("next").click()
    page.settled()
    assert page.column("memories", KEY) == ["note-01", "note-00"]
    assert not page.by_id("next").is_enabled()
    page.by_id("prev").click()
    page.settled()
    assert len(page.rows("memories")) == 50


def test_the_history_shows_every_version_and_which_is_current(
    page: InspectorPage, api: httpx.Client
):
    agent = new_agent()
    values = ["Likes tea.", "Likes green tea.", "Likes green tea, no sugar."]
    memory = store(api, agent_id=agent, key="fav", value=values[0])
    for value in values[1:]:
        update(api, memory["id"], value)
    versions = api.get(f"/api/memories/{memory['id']}/history").json()["versions"]

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.wait_for_row("memories", VALUE, values[-1])
    assert page.rows("memories")[0][VALID] == f"since {shown(versions[-1]['valid_from'])}"
    page.press("memories", "History fav")
    page.until(lambda _: page.visible("history"))
    page.until(lambda _: len(page.rows("versions")) == 3)
    rows = page.rows("versions")
    assert [row[V_VALUE] for row in rows] == values  # oldest first
    assert [row[V_FROM] for row in rows] == [shown(v["valid_from"]) for v in versions]
    assert [row[V_TO] for row in rows] == [shown(v["valid_to"]) for v in versions[:2]] + ["current"]
    assert [row[V_ENDED] for row in rows] == [
        "superseded by version 2",
        "superseded by version 3",
        "",
    ]
    marked = "return [...document.querySelectorAll('#versions tbody tr.current td:nth-child(2)')]"
    assert [cell.text for cell in page.driver.execute_script(marked)] == values[-1:]
    assert f"{memory['id']}: 3 versions" in page.by_id("history-id").text
    page.shoot("inspector-history.png")
    page.by_id("history-close").click()
    page.until(lambda _: not page.visible("history"))


@pytest.mark.parametrize("form", ["epoch", "iso"])
def test_as_of_lists_what_held_then(page: InspectorPage, api: httpx.Client, form: str):
    agent = new_agent()
    memory = store(api, agent_id=agent, key="city", value="Bob lives in Lisbon.")
    time.sleep(0.05)
    moment = time.time()  # well after the first value, well before the second
    time.sleep(0.05)
    update(api, memory["id"], "Bob lives in Berlin.")
    typed = {
        "epoch": f"{moment:.3f}",
        "iso": datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds"),
    }[form]

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent, as_of=typed)
    page.wait_for_row("memories", VALUE, "Bob lives in Lisbon.")
    [row] = page.rows("memories")
    assert row[ACTIONS] == "History"  # a past version is looked at, not edited
    then = api.get(f"/api/memories/{memory['id']}/history").json()["versions"][0]
    assert row[VALID] == f"{shown(then['valid_from'])} \u2013 {shown(then['valid_to'])}"
    page.search("Where does Bob live?")
    page.until(lambda _: page.column("results", 4) == ["Bob lives in Lisbon."])

    page.tab("memories")
    page.filter(agent=agent)
    page.wait_for_row("memories", VALUE, "Bob lives in Berlin.")
    assert page.rows("memories")[0][ACTIONS] == "EditHistoryDelete"
    page.filter(agent=agent, as_of="next tuesday")
    page.until(lambda _: "As of:" in page.by_id("status").text)
    assert "not a time" in page.by_id("status").text


def test_the_history_shows_untrusted_text_as_text(page: InspectorPage, api: httpx.Client):
    agent = new_agent()
    first = "<img src=x id=pwned onerror=\"document.title='pwned'\"><script>alert(1)</script>"
    second = "</td><b>bold</b><script>document.title='pwned'</script>"
    memory = store(api, agent_id=agent, key="<i>note</i>", value=first)
    update(api, memory["id"], second)

    page.open()
    page.sign_in_and_wait(api.headers["Authorization"].removeprefix("Bearer "))
    page.filter(agent=agent)
    page.wait_for_row("memories", KEY, "<i>note</i>")
    page.press("memories", "History <i>note</i>")
    page.until(lambda _: page.visible("history"))
    page.until(lambda _: len(page.rows("versions")) == 2)
    assert [row[V_VALUE] for row in page.rows("versions")] == [first, second]
    assert page.by_id("history-title").text == "History of \u201c<i>note</i>\u201d"
    markup = "return document.querySelectorAll('#history img, #history b, #history i').length"
    assert page.driver.execute_script(markup) == 0
    assert page.driver.title == "memstack inspector"
