"""open_record_store(url), the public names, and the lazy import of the Postgres driver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import memstack.storage
from memstack.errors import ConfigError
from memstack.storage import (
    InMemoryRecordStore,
    PostgresRecordStore,
    RecordStore,
    SQLiteRecordStore,
    open_record_store,
)


@pytest.mark.parametrize(
    ("url", "kind", "path"),
    [
        ("memory://", InMemoryRecordStore, None),
        ("sqlite:///rel.db", SQLiteRecordStore, "rel.db"),
        ("sqlite:///sub/rel.db", SQLiteRecordStore, "sub/rel.db"),
        ("sqlite:///:memory:", SQLiteRecordStore, ":memory:"),
        ("sqlite://:memory:", SQLiteRecordStore, ":memory:"),
        ("bare.db", SQLiteRecordStore, "bare.db"),
        ("postgresql://user@127.0.0.1:1/db", PostgresRecordStore, None),
        ("postgres://user@127.0.0.1:1/db", PostgresRecordStore, None),
    ],
)
def test_urls_pick_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, kind: type, path: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    store = open_record_store(url)
    try:
        assert isinstance(store, kind)
        assert isinstance(store, RecordStore)
        if path is not None:
            assert isinstance(store, SQLiteRecordStore)
            assert store.path == path
    finally:
        store.close()


def test_absolute_sqlite_url(tmp_path: Path) -> None:
    store = open_record_store(f"sqlite:///{tmp_path}/abs.db")
    store.setup()
    store.close()
    assert (tmp_path / "abs.db").exists()


@pytest.mark.parametrize("url", ["", "   ", "mysql://x/y", "sqlite://", "redis://localhost"])
def test_bad_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        open_record_store(url)


def test_public_names_exist() -> None:
    missing = [n for n in memstack.storage.__all__ if not hasattr(memstack.storage, n)]
    assert missing == []


def test_importing_storage_does_not_import_psycopg() -> None:
    code = "import sys, memstack.storage; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
