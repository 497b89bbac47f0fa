"""Where memstack keeps its data when no path is given: one folder per user, never the
working directory, so ``memstack keys create`` and ``memstack serve`` started from two
different folders open the same database.

``MEMSTACK_HOME`` names the folder; without it, the platform's per-user data folder:
``$XDG_DATA_HOME/memstack`` or ``~/.local/share/memstack`` on Linux,
``~/Library/Application Support/memstack`` on macOS, ``%LOCALAPPDATA%\\memstack`` on Windows.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = ["DB_NAME", "data_home", "default_db"]

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
