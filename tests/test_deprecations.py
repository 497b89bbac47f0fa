"""Names users imported before the store -> service rename keep working for one release,
each with a DeprecationWarning that names the new one."""

from __future__ import annotations

import importlib
import sys

import pytest


def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [
        n for n in sys.modules if n == "memstack.store" or n.startswith("memstack.store.")
    ]:
        monkeypatch.delitem(sys.modules, name)


def test_memstack_store_still_imports_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh(monkeypatch)
    with pytest.warns(DeprecationWarning, match="memstack.service"):
        old = importlib.import_module("memstack.store.service")
    from memstack.service.api_keys import ApiKeys
    from memstack.service.memories import MemoryService

    assert old.MemoryStore is MemoryService
    assert importlib.import_module("memstack.store.keys").ApiKeys is ApiKeys
    assert importlib.import_module("memstack.store.knowledge").KnowledgeBase is (
        importlib.import_module("memstack.service.knowledge").KnowledgeBase
    )


def test_the_old_binding_name_warns_and_is_the_new_class() -> None:
    import memstack.agents

    with pytest.warns(DeprecationWarning, match="MemoryServiceBinding"):
        old = memstack.agents.MemoryStoreBinding
    assert old is memstack.agents.MemoryServiceBinding
    with pytest.raises(AttributeError):
        memstack.agents.NoSuchName  # noqa: B018
