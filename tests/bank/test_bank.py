"""MemoryBank's Python API (spec 002), on every backend, and its durability."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest

from memstack import InvalidInput, StoreUnavailable
from memstack.bank import BANK_RECORD_KIND, MAX_CONTENT_BYTES, MemoryBank
from memstack.clock import ManualClock
from memstack.service.api_keys import ApiKeys
from memstack.storage import InMemoryRecordStore, SQLiteRecordStore
from tests.bank.conftest import BankFactory
from tests.threads import in_threads

# -- the spec's API ------------------------------------------------------------------


def test_read_is_empty_when_nothing_was_written(bank: MemoryBank):
    assert bank.read("reviewer") == ""
    assert bank.entries() == {}


def test_write_overwrites_and_entries_is_a_snapshot(bank: MemoryBank):
    bank.write("agent-a", "first")
    bank.write("agent-b", "from-b")
    bank.write("agent-a", "from-a")
    assert bank.read("agent-a") == "from-a"
    snapshot = bank.entries()
    assert snapshot == {"agent-a": "from-a", "agent-b": "from-b"}
    assert list(snapshot) == ["agent-a", "agent-b"]  # first-written order, kept on overwrite
    snapshot["agent-a"] = "changed"
    bank.write("agent-c", "later")
    assert bank.read("agent-a") == "from-a"
    assert "agent-c" not in snapshot


def test_entries_keep_first_written_order_when_the_clock_stands_still(make_bank: BankFactory):
    clock = ManualClock()
    bank = make_bank(clock=clock)
    for key in ("zeta", "alpha", "mid"):
        bank.write(key, key)
    bank.write("zeta", "again")
    clock.set(1_000.0)  # a clock that went back
    bank.write("beta", "late")
    assert list(bank.entries()) == ["zeta", "alpha", "mid", "beta"]
    assert bank.entries()["zeta"] == "again"


def test_each_in_memory_bank_keeps_its_own_content():
    first, second = MemoryBank(), MemoryBank()
    first.write("reviewer", "from first")
    assert second.read("reviewer") == ""
    assert second.entries() == {}


def test_content_is_kept_exactly(bank: MemoryBank):
    content = "  Known pattern: prefer val over var\r\nünïcode ✓ 🚀\n\n\ttabs\n"
    bank.write("reviewer", content)
    assert bank.read("reviewer") == content
    bank.write("reviewer", "")
    assert bank.read("reviewer") == ""
    assert bank.entries() == {"reviewer": ""}


@pytest.mark.parametrize(
    ("max_lines", "content", "stored"),
    [
        (3, "line1\nline2\nline3\nline4\nline5", "line3\nline4\nline5"),  # the spec's example
        (2, "a\nb\nc\nd", "c\nd"),  # the spec's tool example
        (3, "a\nb\nc", "a\nb\nc"),
        (3, "a\nb\nc\n", "a\nb\nc\n"),  # a final line break ends a line, starts none
        (2, "a\nb\nc\n", "b\nc\n"),
        (2, "a\r\nb\r\nc", "b\r\nc"),  # line breaks are kept as written
        (2, "a\rb\rc", "b\rc"),
        (2, "a\n\n\nb", "\nb"),  # empty lines count
        (1, "", ""),
        (1, "only", "only"),
        (None, "\n".join(map(str, range(10_000))), "\n".join(map(str, range(10_000)))),
    ],
)
def test_max_lines_keeps_the_last_lines(
    make_bank: BankFactory, max_lines: int | None, content: str, stored: str
):
    bank = make_bank(max_lines=max_lines)
    bank.write("a", content)
    assert bank.read("a") == stored
    assert bank.entries() == {"a": stored}


@pytest.mark.parametrize(
    ("memory", "query", "found"),
    [
        ("alpha\nBeta\ngamma beta", "BETA", "Beta\ngamma beta"),
        ("alpha\nbeta", "zeta", ""),
        ("", "anything", ""),
        ("one\r\ntwo\r\n", "o", "one\ntwo"),
        ("Straße", "STRASSE", "Straße"),
    ],
)
def test_search_returns_matching_lines_ignoring_case(
    bank: MemoryBank, memory: str, query: str, found: str
):
    bank.write("a", memory)
    bank.write("b", "beta in another key")
    assert bank.search("a", query) == found


# -- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize("max_lines", [0, -1, True, 1.5, "3"])
def test_max_lines_must_be_a_positive_int(max_lines: Any):
    with pytest.raises(InvalidInput, match="max_lines must be an int >= 1") as info:
        MemoryBank(max_lines=max_lines)
    assert info.value.field == "max_lines"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda b: b.read(None), "key"),
        (lambda b: b.read(7), "key"),
        (lambda b: b.read(""), "key"),
        (lambda b: b.read("  "), "key"),
        (lambda b: b.read("x" * 1025), "key"),
        (lambda b: b.write("a\x00b", "v"), "key"),
        (lambda b: b.write("a", 5), "content"),
        (lambda b: b.write("a", None), "content"),
        (lambda b: b.write("a", b"bytes"), "content"),
        (lambda b: b.write("a", "nul\x00"), "content"),
        (lambda b: b.write("a", "lone \ud800 surrogate"), "content"),
        (lambda b: b.search("a", 3), "query"),
        (lambda b: b.tools(""), "agent_name"),
        (lambda b: b.tools(None), "agent_name"),
    ],
)
def test_bad_arguments_name_the_field_and_change_nothing(bank: MemoryBank, call: Any, field: str):
    bank.write("a", "kept")
    with pytest.raises(InvalidInput) as info:
        call(bank)
    assert info.value.field == field
    assert bank.entries() == {"a": "kept"}


def test_content_over_the_size_cap_is_refused_and_nothing_changes(bank: MemoryBank):
    bank.write("a", "kept")
    with pytest.raises(InvalidInput, match=r"the limit is 1,000,000") as info:
        bank.write("a", "x" * (MAX_CONTENT_BYTES + 1))
    assert info.value.field == "content"
    with pytest.raises(InvalidInput, match="content is"):
        bank.write("a", "é" * (MAX_CONTENT_BYTES // 2 + 1))  # bytes, not characters
    assert bank.read("a") == "kept"
    bank.write("a", "x" * MAX_CONTENT_BYTES)
    assert len(bank.read("a")) == MAX_CONTENT_BYTES


def test_the_size_cap_applies_after_line_truncation(make_bank: BankFactory):
    bank = make_bank(max_lines=2)
    big = "\n".join(["x" * 400_000] * 5)  # 2 MB written, 800 kB kept
    bank.write("a", big)
    assert bank.read("a") == "x" * 400_000 + "\n" + "x" * 400_000


# -- threads, closing --------------------------------------------------------------


def test_many_threads_lose_nothing_and_never_tear_a_value(bank: MemoryBank):
    threads, rounds = 8, 40
    shared_values = {f"{t}:{i}:" + str(t) * 2_000 for t in range(threads) for i in range(rounds)}
    start = threading.Barrier(threads)

    def work(t: int) -> None:
        start.wait()
        for i in range(rounds):
            bank.write(f"own-{t}", f"{t}:{i}")
            bank.write("shared", f"{t}:{i}:" + str(t) * 2_000)
            assert bank.read(f"own-{t}") == f"{t}:{i}"
            assert bank.read("shared") in shared_values
            bank.entries()

    assert in_threads(work, threads) == []
    entries = bank.entries()
    assert {k: v for k, v in entries.items() if k != "shared"} == {
        f"own-{t}": f"{t}:{rounds - 1}" for t in range(threads)
    }
    assert entries["shared"] in {f"{t}:{rounds - 1}:" + str(t) * 2_000 for t in range(threads)}


def test_a_closed_bank_refuses_calls(make_bank: BankFactory):
    bank = make_bank()
    bank.write("a", "x")
    bank.close()
    bank.close()  # again: nothing happens
    for call in (lambda: bank.read("a"), lambda: bank.write("a", "y"), bank.entries):
        with pytest.raises(StoreUnavailable, match="closed; open a new one"):
            call()


def test_closing_an_in_memory_bank_lets_its_content_go():
    bank = MemoryBank()
    bank.write("a", "x" * 10_000)
    opened = bank._store
    assert isinstance(opened, InMemoryRecordStore)
    store = weakref.ref(opened)
    del opened
    bank.close()
    assert store() is None  # nothing holds the closed bank's records any more


def test_the_bank_is_a_context_manager(tmp_path: Path):
    with MemoryBank(path=tmp_path / "bank.db") as bank:
        bank.write("a", "x")
    with pytest.raises(StoreUnavailable):
        bank.read("a")


def test_path_and_store_are_exclusive_and_checked(tmp_path: Path):
    store = InMemoryRecordStore()
    with pytest.raises(InvalidInput, match="either path") as info:
        MemoryBank(path=tmp_path / "b.db", store=store)
    assert info.value.field == "store"
    with pytest.raises(InvalidInput, match="store must be a RecordStore"):
        MemoryBank(store="sqlite:///b.db")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="path must name a file"):
        MemoryBank(path=" ")
    with pytest.raises(InvalidInput) as info:
        MemoryBank(store=store, namespace="")
    assert info.value.field == "namespace"


@pytest.mark.parametrize("durable", [False, True])
def test_a_bank_name_too_long_to_store_is_refused_when_the_bank_is_made(durable: bool):
    store = InMemoryRecordStore() if durable else None
    MemoryBank(store=store, namespace="x" * 1019).write("a", "fits")  # bank/ + 1019 bytes
    for name in ("x" * 1020, "/" * 400):  # each "/" is stored as "%2F"
        with pytest.raises(InvalidInput, match="namespace is too long") as info:
            MemoryBank(store=store, namespace=name)
        assert info.value.field == "namespace"


# -- durability --------------------------------------------------------------------


def test_in_memory_bank_is_not_durable(tmp_path: Path):
    assert not MemoryBank().durable
    with MemoryBank(path=tmp_path / "bank.db") as bank:
        assert bank.durable


def test_content_survives_closing_and_reopening_the_file(tmp_path: Path):
    path = tmp_path / "nested" / "bank.db"  # the folder is created
    with MemoryBank(path=path) as bank:
        bank.write("fibonacci", "21|34")
        bank.write("reviewer", "pattern one\npattern two")
    with MemoryBank(path=path) as bank:
        assert bank.read("fibonacci") == "21|34"
        assert bank.entries() == {"fibonacci": "21|34", "reviewer": "pattern one\npattern two"}
        assert bank.search("reviewer", "TWO") == "pattern two"


def _run_python(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_content_survives_a_process_restart(tmp_path: Path):
    path = tmp_path / "bank.db"
    _run_python(
        """
        import sys
        from memstack.bank import MemoryBank
        with MemoryBank(path=sys.argv[1]) as bank:
            bank.write("fibonacci", "3|5")
            bank.write("multi", "a\\nb")
        """,
        str(path),
    )
    with MemoryBank(path=path) as bank:
        assert bank.entries() == {"fibonacci": "3|5", "multi": "a\nb"}
        bank.write("fibonacci", "5|8")
    out = _run_python(
        """
        import json, sys
        from memstack.bank import MemoryBank
        with MemoryBank(path=sys.argv[1]) as bank:
            print(json.dumps(bank.entries()))
        """,
        str(path),
    )
    assert out.strip() == '{"fibonacci": "5|8", "multi": "a\\nb"}'


def test_an_open_bank_sees_writes_from_another_process(tmp_path: Path):
    path = tmp_path / "bank.db"
    with MemoryBank(path=path) as bank:
        bank.write("a", "before")
        _run_python(
            """
            import sys
            from memstack.bank import MemoryBank
            with MemoryBank(path=sys.argv[1]) as other:
                other.write("a", "after")
            """,
            str(path),
        )
        assert bank.read("a") == "after"


def test_durable_records_are_plain_records_in_the_namespace(sqlite_store: SQLiteRecordStore):
    clock = ManualClock(start=1_000.0)
    bank = MemoryBank(store=sqlite_store, clock=clock)
    bank.write("fibonacci", "0|1")
    clock.advance(5)
    bank.write("fibonacci", "1|1")
    [record] = sqlite_store.get("bank", ["fibonacci"])
    assert record.text == "1|1"
    assert record.kind == BANK_RECORD_KIND
    assert record.embedding is None
    assert (record.created_at, record.updated_at) == (1_000.0, 1_005.0)  # created_at kept
    bank.close()
    assert sqlite_store.count("bank") == 1  # a given store stays open


def test_namespaces_isolate_banks_on_one_store(sqlite_store: SQLiteRecordStore):
    team = MemoryBank(store=sqlite_store, namespace="team-a")
    other = MemoryBank(store=sqlite_store, namespace="team-b")
    team.write("reviewer", "from a")
    other.write("reviewer", "from b")
    assert team.entries() == {"reviewer": "from a"}
    assert other.entries() == {"reviewer": "from b"}


def test_entries_pages_through_many_keys(sqlite_store: SQLiteRecordStore):
    bank = MemoryBank(store=sqlite_store, clock=ManualClock())  # one time for every write
    written = [f"agent-{i:05d}" for i in reversed(range(2_345))]
    for key in written:
        bank.write(key, key[-4:])
    entries = bank.entries()
    assert list(entries) == written
    assert entries["agent-02344"] == "2344"


def test_no_bank_name_reaches_another_owners_records(sqlite_store: SQLiteRecordStore):
    keys = ApiKeys(sqlite_store)
    raw, _ = keys.create(tenant="acme")
    intruder = MemoryBank(store=sqlite_store, namespace="auth/keys")
    intruder.write(raw.split("_")[1], "overwritten")  # the key's record id, in its bank
    principal = keys.authenticate(raw)
    assert principal is not None and principal.tenant == "acme"
    assert sqlite_store.namespaces("bank/") == ["bank/auth%2Fkeys"]
