"""/ui in process: the packaged files, their security headers, nothing from
elsewhere, and no way for the page to render data as HTML."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from importlib.resources import files
from pathlib import Path

import httpx
import pytest

from memstack.embeddings import HashEmbedder
from memstack.transports.app import create_app
from memstack.wiring import open_services

STATIC = files("memstack.transports.inspector").joinpath("static")
NAMES = ["index.html", "inspector.js", "users.js", "inspector.css", "run.html", "run.js"]


@pytest.fixture
async def ui(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'ui.db'}", redis_url=None, embedder=HashEmbedder()
    )
    transport = httpx.ASGITransport(app=create_app(services))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://memstack.test") as c:
            yield c
    finally:
        services.close()


async def test_ui_redirects_to_the_page(ui: httpx.AsyncClient):
    reply = await ui.get("/ui")
    assert reply.status_code == 308 and reply.headers["location"] == "/ui/"


@pytest.mark.parametrize(
    ("path", "media_type", "name"),
    [
        ("/ui/", "text/html", "index.html"),
        ("/ui/inspector.js", "text/javascript", "inspector.js"),
        ("/ui/users.js", "text/javascript", "users.js"),
        ("/ui/inspector.css", "text/css", "inspector.css"),
    ],
)
async def test_each_file_is_served_from_the_package_without_a_key(
    ui: httpx.AsyncClient, path: str, media_type: str, name: str
):
    reply = await ui.get(path)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith(media_type)
    assert reply.content == STATIC.joinpath(name).read_bytes()
    policy = reply.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert reply.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("path", ["/ui/secret.txt", "/ui/..%2Fapp.py", "/ui/__init__.py"])
async def test_nothing_else_is_served(ui: httpx.AsyncClient, path: str):
    reply = await ui.get(path)
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "not_found"


async def test_the_page_is_not_in_the_api_document(ui: httpx.AsyncClient):
    paths = (await ui.get("/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/ui")]


@pytest.mark.parametrize("name", NAMES)
def test_the_page_loads_nothing_from_elsewhere(name: str):
    text = STATIC.joinpath(name).read_text(encoding="utf-8")
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), name
    assert "@import" not in text


@pytest.mark.parametrize("name", ["inspector.js", "users.js", "run.js"])
def test_the_scripts_never_render_data_as_html(name: str):
    script = STATIC.joinpath(name).read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script.replace("never through innerHTML", ""), sink
