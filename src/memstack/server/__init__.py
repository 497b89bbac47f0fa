"""The memory server: a REST API over the memory service (``memstack serve``).

Names load on first use, so ``memstack keys`` and the settings work without the
``server`` extra (FastAPI, uvicorn) installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstack.server.app import create_app
    from memstack.server.settings import ServerSettings
    from memstack.wiring import Services, open_services

__all__ = ["ServerSettings", "Services", "create_app", "open_services"]

_HOMES = {
    "create_app": "memstack.server.app",
    "Services": "memstack.wiring",
    "open_services": "memstack.wiring",
    "ServerSettings": "memstack.server.settings",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
