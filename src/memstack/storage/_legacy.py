"""Names of an older layout, read once by ``RecordStore.setup`` to move their records."""

from __future__ import annotations

import re

from memstack.storage.namespace import Namespace

__all__ = ["legacy_ltm_namespace"]

_PART = r"((?:[A-Za-z0-9-]|\.[0-9a-f]{2})+)"
_LEGACY_LTM = re.compile(f"ltm_{_PART}_{_PART}(?::{_PART})?")
_ESCAPE = re.compile(r"(?:\.[0-9a-f]{2})+")


def legacy_ltm_namespace(old: str) -> str | None:
    """``ltm_<user>_<namespace>[:<workspace>]`` (``.xx`` hex escapes) as its ``ltm/...``
    name, or None when ``old`` is not of that form."""
    match = _LEGACY_LTM.fullmatch(old)
    if match is None:
        return None
    try:
        parts = [_unescape(p) for p in match.groups() if p is not None]
    except UnicodeDecodeError:
        return None
    return Namespace("ltm", *parts).encode()


def _unescape(part: str) -> str:
    return _ESCAPE.sub(lambda m: bytes.fromhex(m.group(0).replace(".", "")).decode("utf-8"), part)
