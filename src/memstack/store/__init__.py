"""Deprecated: the memory service moved to ``memstack.service``; kept for one release.

``memstack.store.service`` is ``memstack.service.memories`` (``MemoryStore`` is now
``MemoryService``), ``memstack.store.keys`` is ``memstack.service.api_keys``, and every
other module kept its name under ``memstack.service``.
"""

from __future__ import annotations

import importlib
import sys
import warnings

warnings.warn(
    "memstack.store is deprecated and will be removed in the next release; import from "
    "memstack.service instead (store.service -> service.memories, store.keys -> "
    "service.api_keys, MemoryStore -> MemoryService).",
    DeprecationWarning,
    stacklevel=2,
)

for _old, _new in {
    "keys": "api_keys",
    "knowledge": "knowledge",
    "ltm": "ltm",
    "principal": "principal",
    "prompt": "prompt",
    "render": "render",
    "stm": "stm",
    "stm_redis": "stm_redis",
    "stm_sync": "stm_sync",
    "tools": "tools",
    "ttl": "ttl",
    "types": "types",
}.items():
    sys.modules[f"{__name__}.{_old}"] = importlib.import_module(f"memstack.service.{_new}")
