"""Where memstack keeps its data when no path is given: one folder per user, never the
working directory, so ``memstack keys create`` and ``memstack serve`` started from two
different folders open the same database.

``MEMSTACK_HOME`` names the folder; without it, the platform's per-user data folder:
``$XDG_DATA_HOME/memstack`` or ``~/.local/share/memstack`` on Linux,
``~/Library/Application Support/memstack`` on macOS, ``%LOCALAPPDATA%\\memstack`` on Windows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = ["DB_NAME", "data_home", "default_db", "first_key_file", "write_private"]

DB_NAME: Final = "memstack.db"


def data_home(env: Mapping[str, str], platform: str = sys.platform) -> Path:
    """The data folder named by ``env`` (not created here)."""
    if env.get("MEMSTACK_HOME"):
        return Path(env["MEMSTACK_HOME"]).expanduser()
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    if platform == "win32":
        local = env.get("LOCALAPPDATA")
        return (Path(local) if local else home / "AppData" / "Local") / "memstack"
    if platform == "darwin":
        return home / "Library" / "Application Support" / "memstack"
    xdg = env.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else home / ".local" / "share") / "memstack"


def default_db(env: Mapping[str, str]) -> Path:
    """The SQLite file used when neither ``--db`` nor ``MEMSTACK_DB`` is given."""
    return data_home(env) / DB_NAME


def first_key_file(db: Path, *, postgres: bool = False) -> Path:
    """Where ``memstack serve`` leaves the API key it creates on first start when its
    output is not a terminal: beside the SQLite file ``db`` (``memstack.db.first-key``), or,
    on PostgreSQL, in the folder ``db`` would be in (``postgres.first-key``)."""
    return db.parent / f"{'postgres' if postgres else db.name}.first-key"


def write_private(path: Path, text: str) -> None:
    """``text`` in a new file at ``path`` that only its owner may read (mode 0600),
    replacing one there (a missing folder is made). Never follows a link at ``path``, so
    the text cannot be sent into another file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        if hasattr(os, "fchmod"):  # exactly 0600, whatever the umask took away
            os.fchmod(fd, 0o600)
        file.write(text)
