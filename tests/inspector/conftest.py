"""A real ``memstack serve`` subprocess, an API client with its key, and Chromium on /ui.

Screenshots go to a temporary directory; set ``MEMSTACK_INSPECTOR_SHOTS=docs`` to
refresh the ones docs/inspector.md shows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memstack.bench.spawn import SpawnedServer, spawned_server
from tests.inspector.page import InspectorPage, headless_chromium


@pytest.fixture(scope="module")
def server() -> Iterator[SpawnedServer]:
    with spawned_server("hash") as running:
        yield running


@pytest.fixture
def api(server: SpawnedServer) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {server.api_key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        yield client


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    chosen = os.environ.get("MEMSTACK_INSPECTOR_SHOTS")
    folder = Path(chosen) if chosen else tmp_path / "shots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(server: SpawnedServer, tmp_path: Path, shots: Path) -> Iterator[InspectorPage]:
    driver = headless_chromium(tmp_path / "profile")
    try:
        yield InspectorPage(driver, server.url, shots)
    finally:
        driver.quit()
