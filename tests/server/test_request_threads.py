"""The server's request threads and the local model's lanes."""

import threading

import pytest
from starlette.testclient import TestClient

from memstack.embeddings import BatchingEmbedder, EmbeddingSettings, HashEmbedder, LocalEmbedder
from memstack.transports.app import create_app
from memstack.wiring import REMOTE_LANES, Services, model_lanes, open_services


def _ping_thread(
    services: Services, monkeypatch: pytest.MonkeyPatch, request_threads: int | None = None
) -> str:
    """The name of the thread ``/healthz`` pings the short-term tier on."""
    seen: list[str] = []
    monkeypatch.setattr(
        services.short_term, "ping", lambda: seen.append(threading.current_thread().name)
    )
    with TestClient(create_app(services, request_threads=request_threads)) as client:
        assert client.get("/healthz").json()["short_term"] == "in-process"
    return seen[0]


def test_request_threads_become_the_loops_executor(services, monkeypatch):
    assert _ping_thread(services, monkeypatch, request_threads=3).startswith("memstack-request")


def test_without_request_threads_the_loops_own_executor_runs_the_work(services, monkeypatch):
    assert not _ping_thread(services, monkeypatch).startswith("memstack-request")


@pytest.mark.parametrize(("cores", "lanes"), [(1, 1), (2, 1), (3, 1), (4, 2), (16, 8)])
def test_the_local_model_gets_a_lane_per_two_cores(cores, lanes):
    assert model_lanes(LocalEmbedder(), cores=cores) == lanes


def test_a_model_that_computes_elsewhere_gets_the_remote_lanes_whatever_the_cores():
    assert model_lanes(HashEmbedder(), cores=2) == REMOTE_LANES
    assert model_lanes(HashEmbedder(), cores=64) == REMOTE_LANES


@pytest.mark.parametrize(("provider", "local"), [("local", True), ("hash", False)])
def test_the_services_batch_the_model_with_its_lanes(tmp_path, provider, local):
    built = open_services(
        store_url=f"sqlite:///{tmp_path / 'a.db'}",
        redis_url=None,
        embedding_settings=EmbeddingSettings(provider=provider),
    )
    try:
        batching = built.embedder.inner  # type: ignore[attr-defined]
        assert isinstance(batching, BatchingEmbedder) and built.batching is batching
        assert batching.max_running == (model_lanes(LocalEmbedder()) if local else REMOTE_LANES)
        # Unless asked (pin_cores), nothing is pinned and there is no spill lane.
        assert (built.cores, batching.cores, batching.spill_cores) == (None, None, None)
    finally:
        built.close()
