"""Cores of their own for the local model's calls (``memstack.embeddings.cores``).

The pinning tests need two cores to split; ``two_cores`` (conftest) takes them when the run
was started on one (``taskset -c 0``)."""

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from click.testing import CliRunner
from fastapi import FastAPI

from memstack.cli import main
from memstack.embeddings import BatchingEmbedder, EmbeddingSettings, LocalEmbedder
from memstack.embeddings.cores import (
    CoreSplit,
    pin_threads,
    split_cores,
    usable_cores,
)
from memstack.errors import ConfigError
from memstack.settings import ServerSettings
from memstack.wiring import model_lanes, services_from_settings
from tests.server.test_workers import _wait_healthy
from tests.servers import first_key, free_port

ALLOWED = os.sched_getaffinity(0)


@pytest.mark.parametrize(
    ("lanes", "allowed", "model", "requests"),
    [
        (1, {0, 1}, {1}, {0}),
        (2, {0, 1, 2, 3}, {2, 3}, {0, 1}),
        (4, {0, 1, 2}, {1, 2}, {0}),  # the requests keep a core
        (1, {3, 5, 9}, {9}, {3, 5}),
    ],
)
def test_the_model_takes_the_highest_cores_and_the_requests_keep_one(
    lanes, allowed, model, requests
):
    assert split_cores(lanes, allowed) == CoreSplit(
        model=frozenset(model), requests=frozenset(requests)
    )


@pytest.mark.parametrize(("lanes", "allowed"), [(1, {0}), (0, {0, 1}), (1, set())])
def test_nothing_to_split_gives_no_split(lanes, allowed):
    assert split_cores(lanes, allowed) is None


@pytest.fixture
def own_thread() -> Iterator[None]:
    """The test's thread gets its core set back, whatever the test did to it."""
    before = os.sched_getaffinity(0)
    yield
    os.sched_setaffinity(0, before)


@pytest.mark.usefixtures("two_cores", "own_thread")
def test_pin_threads_moves_every_thread_and_new_ones_inherit():
    split = split_cores(1)
    assert split is not None, "these tests need two cores"
    release = threading.Event()
    started_before = threading.Thread(target=release.wait, daemon=True)
    started_before.start()
    try:
        assert pin_threads(split.requests) >= 2
        for task in Path("/proc/self/task").iterdir():
            assert os.sched_getaffinity(int(task.name)) == set(split.requests), task.name
        seen: list[set[int]] = []
        later = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        later.start()
        later.join()
        assert seen == [set(split.requests)]
    finally:
        release.set()
        started_before.join()
        pin_threads(frozenset(ALLOWED))


@pytest.mark.parametrize(
    ("provider", "pin_cores", "pinned"),
    [("local", True, True), ("local", False, False), ("hash", True, False)],
)
@pytest.mark.usefixtures("two_cores")
def test_the_services_pin_the_local_model_only_when_asked(tmp_path, provider, pin_cores, pinned):
    services = services_from_settings(
        ServerSettings(
            db=tmp_path / "a.db",
            pin_cores=pin_cores,
            embedding=EmbeddingSettings(provider=provider),
        )
    )
    try:
        inner = services.embedder.inner  # type: ignore[attr-defined]
        assert isinstance(inner, BatchingEmbedder) and services.batching is inner
        assert inner.max_running == model_lanes(services.batching.inner)
        expected = split_cores(model_lanes(LocalEmbedder())) if pinned else None
        assert services.cores == expected
        if expected is None:  # nothing pinned, and no spill lane
            assert (inner.cores, inner.spill_cores) == (None, None)
        else:
            assert expected.model  # two cores here: something to pin
            assert inner.cores == expected.model
            assert inner.spill_cores == expected.requests  # spills into the requests' idle time
    finally:
        services.close()


def _cores_of_threads(pid: int) -> list[str]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                found.append(line.split(":", 1)[1].strip())
    return found


def _as_list(cores: frozenset[int]) -> set[str]:
    """The ways /proc writes a core set: "0,1" or "0-1"."""
    return {",".join(str(c) for c in sorted(cores)), f"{min(cores)}-{max(cores)}"}


@pytest.mark.usefixtures("two_cores")
def test_memstack_serve_pins_its_threads_and_the_models_calls(tmp_path):
    """One ``memstack serve --pin-cores`` process with the local model: every thread on
    the request cores, and after a store the model's lanes (which made its call) on the
    model's."""
    split = split_cores(model_lanes(LocalEmbedder()))
    assert split is not None, "this test needs two cores"
    port = free_port()
    env = {**os.environ, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "local", "PYTHONUNBUFFERED": "1"}
    for name in ("MEMSTACK_POSTGRES_URL", "MEMSTACK_REDIS_URL", "MEMSTACK_WORKERS"):
        env.pop(name, None)
    command = [sys.executable, "-m", "memstack", "serve", "--pin-cores"]
    command += ["--db", str(tmp_path / "s.db")]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        while not any(line.startswith("serving on") for line in lines):
            line = process.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        requests = ", ".join(str(c) for c in sorted(split.requests))
        model = ", ".join(str(c) for c in sorted(split.model))
        assert f"cores: the local model's calls on {model}, everything else on {requests}\n" in (
            lines
        )
        key = first_key("".join(lines))
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url)
        requests_cores, model_cores = _as_list(split.requests), _as_list(split.model)
        lanes = model_lanes(LocalEmbedder())
        # The warmup started the lanes before the threads were pinned.
        assert set(_cores_of_threads(process.pid)) <= requests_cores
        stored = httpx.post(
            f"{url}/api/memories",
            headers={"Authorization": f"Bearer {key}"},
            json={"agent_id": "bot", "key": "k", "value": "a value to embed"},
            timeout=60,
        )
        assert stored.status_code == 201, stored.text
        after = _cores_of_threads(process.pid)
        # The lanes went back to the model's cores for the call; nothing else is there.
        assert sum(c in model_cores for c in after) == lanes
        assert sum(c in requests_cores for c in after) == len(after) - lanes
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout:
            process.stdout.close()


@pytest.mark.usefixtures("own_thread")
def test_usable_cores_counts_the_cores_this_process_may_run_on():
    assert usable_cores() == len(ALLOWED)
    os.sched_setaffinity(0, {min(ALLOWED)})  # as a container limited to one core
    assert usable_cores() == 1
    assert model_lanes(LocalEmbedder()) == 1
    assert split_cores(1) is None  # nothing left to split


def test_pin_cores_comes_from_the_flag_or_the_environment_and_survives_it():
    def read(env: dict[str, str], **flags: object) -> ServerSettings:
        return ServerSettings.from_env(env, dotenv=None, **flags)

    assert not read({}).pin_cores  # opt-in
    assert read({}, pin_cores=True).pin_cores
    assert not read({"MEMSTACK_PIN_CORES": "0"}).pin_cores
    pinned = read({"MEMSTACK_PIN_CORES": "1"})
    assert pinned.pin_cores
    assert pinned.to_env()["MEMSTACK_PIN_CORES"] == "1"
    assert read(pinned.to_env()) == pinned
    with pytest.raises(ConfigError, match="MEMSTACK_PIN_CORES"):
        read({"MEMSTACK_PIN_CORES": "sometimes"})


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--pin-cores", "--workers", "2"], {}),
        (["--workers", "2"], {"MEMSTACK_PIN_CORES": "1"}),
        (["--pin-cores"], {"MEMSTACK_WORKERS": "3"}),
    ],
)
def test_serve_refuses_pin_cores_with_several_workers(tmp_path: Path, args, env):
    db = tmp_path / "s.db"
    with socket.socket() as taken:  # were serve to go ahead, it would fail to bind, not hang
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        command = ["serve", "--db", str(db), "--port", port, "--redis-url", "redis://x/0"]
        result = CliRunner().invoke(
            main, [*command, *args], env={"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash", **env}
        )
    assert result.exit_code == 2, result.output  # a usage error
    workers = env.get("MEMSTACK_WORKERS", "2")
    assert (
        f"--pin-cores is for one server process alone on its machine, not --workers {workers}"
    ) in " ".join(result.output.split())
    assert "or serve with --workers 1" in " ".join(result.output.split())
    assert not db.exists()  # refused before anything was opened


@pytest.mark.parametrize(
    ("args", "env", "pinned"),
    [
        ([], {}, False),
        ([], {"MEMSTACK_PIN_CORES": "0"}, False),
        (["--pin-cores"], {}, True),
        ([], {"MEMSTACK_PIN_CORES": "1"}, True),
    ],
)
@pytest.mark.usefixtures("two_cores")
def test_serve_pins_its_threads_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args, env, pinned
):
    moved: list[frozenset[int]] = []
    seen: dict[str, object] = {}

    def run(server: uvicorn.Server, sockets: object = None) -> None:  # bound, not started
        server.started = True
        app = server.config.app
        assert isinstance(app, FastAPI)
        seen["cores"] = app.state.services.cores
        seen["batching"] = app.state.services.batching

    monkeypatch.setattr(uvicorn.Server, "run", run)
    # Recorded instead of done: pinning every thread of the test process would outlast it.
    monkeypatch.setattr("memstack.embeddings.cores.pin_threads", moved.append)
    for name in ("MEMSTACK_PIN_CORES", "MEMSTACK_WORKERS", "MEMSTACK_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(
        main,
        ["serve", "--db", str(tmp_path / "s.db"), "--port", str(free_port()), *args],
        env={**env, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "local"},
    )
    assert result.exit_code == 0, result.output
    split = split_cores(model_lanes(LocalEmbedder()))
    assert split is not None, "this test needs two cores"
    batching = seen["batching"]
    assert isinstance(batching, BatchingEmbedder)
    if pinned:
        assert moved == [split.requests] and seen["cores"] == split
        assert (batching.cores, batching.spill_cores) == (split.model, split.requests)
        assert "cores: the local model's calls on" in result.output
    else:
        assert moved == [] and seen["cores"] is None
        assert (batching.cores, batching.spill_cores) == (None, None)  # no spill lane
        assert "cores:" not in result.output
