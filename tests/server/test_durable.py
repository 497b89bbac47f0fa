"""``memstack serve --durable`` (and ``MEMSTACK_DURABLE=1``): the server's SQLite
connection runs ``synchronous=FULL``; without it, ``NORMAL`` with WAL."""

import os
from pathlib import Path

import pytest
import uvicorn
from click.testing import CliRunner
from fastapi import FastAPI

from memstack.cli import main
from memstack.errors import ConfigError
from memstack.settings import ServerSettings
from memstack.storage.sqlite import SQLiteRecordStore
from memstack.transports.app import create_app_from_env
from tests.servers import free_port


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        ([], {}, "NORMAL"),
        (["--durable"], {}, "FULL"),
        ([], {"MEMSTACK_DURABLE": "1"}, "FULL"),
        ([], {"MEMSTACK_DURABLE": "false"}, "NORMAL"),
    ],
)
def test_serve_runs_the_pragma_it_was_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args, env, expected
):
    seen: dict[str, str] = {}

    def run(server: uvicorn.Server, sockets: object = None) -> None:  # bound, not started
        server.started = True
        app = server.config.app
        assert isinstance(app, FastAPI)
        seen["synchronous"] = app.state.services.records.backend.synchronous
        seen["journal"] = app.state.services.records.backend._conn.execute(
            "PRAGMA journal_mode"
        ).fetchone()[0]

    monkeypatch.setattr(uvicorn.Server, "run", run)
    for name in ("MEMSTACK_DURABLE", "MEMSTACK_POSTGRES_URL", "MEMSTACK_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(
        main,
        ["serve", "--db", str(tmp_path / "s.db"), "--port", str(free_port()), *args],
        env={**env, "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash"},
    )
    assert result.exit_code == 0, result.output
    assert seen == {"synchronous": expected, "journal": "wal"}
    assert ("durable: synchronous=FULL" in result.output) == (expected == "FULL")


def test_each_worker_of_a_durable_server_is_durable(tmp_path: Path):
    settings = ServerSettings(db=tmp_path / "w.db", durable=True)
    env = {**os.environ, **settings.to_env(), "MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash"}
    app = create_app_from_env(env)
    try:
        assert app.state.services.records.backend.synchronous == "FULL"
    finally:
        app.state.services.close()


def test_the_setting_survives_the_environment_and_refuses_nonsense(tmp_path: Path):
    durable = ServerSettings.from_env({"MEMSTACK_DURABLE": "yes", "MEMSTACK_DB": "x.db"})
    assert durable.durable and durable.store_url == "sqlite:///x.db?synchronous=full"
    assert ServerSettings.from_env(durable.to_env()) == durable
    assert not ServerSettings.from_env({}).durable
    with pytest.raises(ConfigError, match="MEMSTACK_DURABLE"):
        ServerSettings.from_env({"MEMSTACK_DURABLE": "maybe"})


def test_a_sqlite_url_takes_only_the_synchronous_option(tmp_path: Path):
    store = SQLiteRecordStore.from_url(f"sqlite:///{tmp_path / 'a.db'}?synchronous=full")
    try:
        assert store.backend.synchronous == "FULL"  # type: ignore[attr-defined]
    finally:
        store.close()
    with pytest.raises(ConfigError, match="synchronous=full"):
        SQLiteRecordStore.from_url(f"sqlite:///{tmp_path / 'b.db'}?cache=shared")
