"""The maintained rule set under the secret filter, shipped as data (README.md here)."""

from __future__ import annotations

import hashlib
import json
from importlib.resources import files
from typing import Final

__all__ = ["RULES_FILE", "SOURCE_FILE", "rules_text", "sha256", "source"]

RULES_FILE: Final = "gitleaks.toml"
SOURCE_FILE: Final = "SOURCE.json"


def rules_text() -> bytes:
    """The shipped rule file, as released upstream."""
    return files(__name__).joinpath(RULES_FILE).read_bytes()


def source() -> dict[str, str]:
    """Where the rule file came from: ``version``, ``commit``, ``url``, ``sha256``..."""
    loaded: dict[str, str] = json.loads(files(__name__).joinpath(SOURCE_FILE).read_text())
    return loaded


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
