"""MEMSTACK_LOCAL_MODEL and --local-model: which model folder the settings choose, and the
export command's answer on a machine without torch."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstack.cli import main
from memstack.embeddings import EmbeddingSettings, LocalEmbedder, resolve_embedder
from memstack.embeddings.export import export_model
from memstack.errors import ConfigError
from memstack.longterm import create_default_long_term_memory
from memstack.settings import ServerSettings
from memstack.storage import InMemoryRecordStore
from tests.embeddings.test_folder import lay_out

SERVE = [str(Path(sys.executable).parent / "memstack"), "serve"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lay_out(tmp_path_factory.mktemp("models") / "mini")


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "local"},
        {"MEMSTACK_MEMORY_EMBEDDING_MODEL": "local"},
        {"OPENAI_API_KEY": "sk-test"},  # a configured API does not win over a named folder
    ],
)
def test_the_folder_named_in_the_environment_is_the_embedder(folder: Path, extra):
    env = {"MEMSTACK_LOCAL_MODEL": str(folder), **extra}
    embedder = resolve_embedder(EmbeddingSettings.from_env(env))
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.folder is not None and embedder.folder.folder == folder
    assert embedder.model_id.startswith("local:mini@")


@pytest.mark.parametrize(
    ("extra", "asked"),
    [
        ({"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash"}, "hash:its default"),
        ({"MEMSTACK_MEMORY_EMBEDDING_MODEL": "all-MiniLM-L6-v2"}, "local:all-MiniLM-L6-v2"),
        ({"MEMSTACK_MEMORY_EMBEDDING_MODEL": "openai:text-embedding-3-small"}, "openai:"),
    ],
)
def test_a_folder_and_another_model_together_are_refused(folder: Path, extra, asked: str):
    env = {"MEMSTACK_LOCAL_MODEL": str(folder), **extra}
    with pytest.raises(ConfigError, match=f"MEMSTACK_LOCAL_MODEL=.*ask for {asked}"):
        resolve_embedder(EmbeddingSettings.from_env(env))


def test_the_flag_wins_over_the_environment_and_reaches_the_workers(tmp_path: Path):
    env = {"MEMSTACK_LOCAL_MODEL": "/from/env"}
    assert ServerSettings.from_env(env, dotenv=None).embedding.local_model == "/from/env"
    flagged = ServerSettings.from_env(env, dotenv=None, local_model=tmp_path / "flag")
    assert flagged.embedding.local_model == str(tmp_path / "flag")
    worker = ServerSettings.from_env(flagged.to_env(), dotenv=None)
    assert worker == flagged
    plain = ServerSettings.from_env({}, dotenv=None)
    assert ServerSettings.from_env(plain.to_env(), dotenv=None).embedding.local_model is None


def test_serve_and_mcp_take_local_model(tmp_path: Path):
    for command in (["serve", "--help"], ["mcp", "--help"], ["memories", "reembed", "--help"]):
        shown = CliRunner().invoke(main, command)
        assert shown.exit_code == 0 and "--local-model" in shown.output


def test_a_bad_local_model_stops_the_server_before_it_starts(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = subprocess.run(
        [*SERVE, "--db", str(tmp_path / "m.db"), "--port", str(port), "--local-model", str(empty)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MEMSTACK_HOME": str(tmp_path)},
    )
    assert done.returncode == 1
    assert "has no tokenizer.json" in done.stderr


def test_export_without_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setitem(sys.modules, "torch", None)  # importing it raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'memstack\[export\]'"):
        export_model("sentence-transformers/all-mpnet-base-v2", tmp_path / "out", int8=True)
    assert not (tmp_path / "out").exists()
    done = CliRunner().invoke(
        main, ["models", "export", "all-mpnet-base-v2", "--out", str(tmp_path / "o"), "--int8"]
    )
    assert done.exit_code == 1
    assert "pip install 'memstack[export]'" in done.output


async def test_the_library_runs_the_folder_and_records_its_model(folder: Path):
    env = {"MEMSTACK_LOCAL_MODEL": str(folder), "MEMSTACK_MEMORY_ENABLED": "1"}
    store = InMemoryRecordStore()
    memory = create_default_long_term_memory(user_id="alice", env=env, store=store)
    assert memory is not None
    await memory.remember("Bob moved from Lisbon to Berlin")
    await memory.remember("Bob is allergic to peanuts")
    found = await memory.recall("When did Bob move to Berlin?", k=2)
    assert found[0].text == "Bob moved from Lisbon to Berlin"
    info = store.namespace_info(memory.namespace)
    assert info is not None and info.model_id == memory.embedder.model_id
    assert info.model_id.startswith("local:mini@") and info.dim == 384


def test_the_benchmarks_measure_the_folder_named(folder: Path):
    from memstack.bench.setup import open_bench_embedder

    named = open_bench_embedder("local", {"MEMSTACK_LOCAL_MODEL": str(folder)})
    assert named.model_id.startswith("local:mini@")
    assert open_bench_embedder("local", {}).model_id == "local:all-MiniLM-L6-v2"
