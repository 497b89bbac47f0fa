"""The inspector's provenance column (memories and search results) and its knowledge upload,
in a real headless Chromium against a real ``memstack serve``: what the page shows is what
the API stored, as text, and what it adds is checked through the API."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
from selenium.webdriver.common.by import By

from tests.inspector.page import InspectorPage
from tests.inspector.test_browser import KEY, PROVENANCE, new_agent, store
from tests.server.indexing import prose

MARKUP = '<img src="x" onerror="document.title=\'owned\'">'
RESULT_KEY, RESULT_PROVENANCE = 3, 7  # the search results' columns


def key_of(api: httpx.Client) -> str:
    return str(api.headers["Authorization"]).removeprefix("Bearer ")


def documents(api: httpx.Client) -> dict[str, dict[str, Any]]:
    listed = api.get("/api/knowledge", params={"limit": 500})
    assert listed.status_code == 200, listed.text
    return {doc["title"]: doc for doc in listed.json()["documents"]}


def test_memories_and_search_results_show_their_provenance(page: InspectorPage, api: httpx.Client):
    agent = new_agent()
    store(api, agent_id=agent, key="said", value="The user said they like tea.")
    detail = f"calendar-sync {MARKUP}"
    store(
        api,
        agent_id=agent,
        key="synced",
        value="The user has a dentist appointment on Friday.",
        provenance="tool_output",
        provenance_detail=detail,
    )
    page.open()
    page.sign_in_and_wait(key_of(api))
    page.filter(agent=agent)
    page.wait_for_row("memories", KEY, "synced")
    shown = {row[KEY]: row[PROVENANCE] for row in page.rows("memories")}
    assert shown == {"said": "user_stated", "synced": f"tool_output ({detail})"}
    assert page.driver.find_elements(By.CSS_SELECTOR, "#memories img") == []
    page.search("dentist appointment")
    page.until(lambda _: "synced" in page.column("results", RESULT_KEY))
    found = {row[RESULT_KEY]: row[RESULT_PROVENANCE] for row in page.rows("results")}
    assert found["synced"] == f"tool_output ({detail})"
    assert page.driver.title == "memstack inspector"  # the markup never ran


def upload(page: InspectorPage, **fields: str) -> None:
    """Fill the upload form (``title``, ``text``, ``tags``, ``source``, ``file``) and send it."""
    for name, value in fields.items():
        element = page.by_id(f"u-{name}")
        if name != "file":
            element.clear()
        element.send_keys(value)
    page.by_id("upload-submit").click()


def test_a_document_pasted_or_chosen_as_a_file_is_added(
    page: InspectorPage, api: httpx.Client, tmp_path: Path
):
    page.open()
    page.sign_in_and_wait(key_of(api))
    page.tab("knowledge")
    title = f"Refunds {MARKUP} {uuid.uuid4().hex[:6]}"
    text = "Refunds are paid within 14 days of the return arriving.\n\n<b>Not</b> on sale items."
    upload(page, title=title, text=text, tags="policy, billing ,", source="wiki/refunds")
    page.wait_for_row("documents", 0, title)
    assert f"Added the document “{title}”: 1 passage, searchable now." in page.by_id("status").text
    added = documents(api)[title]
    assert (added["tags"], added["source"], added["status"]) == (
        ["policy", "billing"],
        "wiki/refunds",
        "ready",
    )
    assert api.get(f"/api/knowledge/{added['id']}").json()["text"] == text
    assert page.by_id("u-title").get_attribute("value") == ""  # the form is cleared
    assert page.driver.find_elements(By.CSS_SELECTOR, "#documents img") == []
    page.shoot("inspector-upload.png")

    name = f"handbook-{uuid.uuid4().hex[:6]}"
    handbook = tmp_path / f"{name}.md"
    handbook.write_text(prose(200), encoding="utf-8")  # past what is embedded at once
    upload(page, file=str(handbook))
    page.wait_for_row("documents", 0, name)
    assert "indexing in the background" in page.by_id("status").text
    chosen = documents(api)[name]
    assert chosen["source"] == handbook.name and chosen["chars"] == len(prose(200))


def test_what_the_upload_lacks_is_named_and_nothing_is_added(
    page: InspectorPage, api: httpx.Client
):
    page.open()
    page.sign_in_and_wait(key_of(api))
    page.tab("knowledge")
    before = len(documents(api))
    upload(page, title="Empty", text="   ")
    page.until(lambda _: page.by_id("upload-error").text.startswith("Text: paste"))
    upload(page, title="", text="Some text without a title.")
    page.until(lambda _: page.by_id("upload-error").text.startswith("Title: give"))
    upload(page, title="x" * 1000, text="A title far too long.")
    page.until(lambda _: "title" in page.by_id("upload-error").text)  # the server's 422
    assert not page.by_id("upload-error").text.startswith("Title: give")
    assert len(documents(api)) == before
