"""``memstack bench locomo --via mem0``: the benchmark through mem0's own Python client
against a real server over real HTTP, beside the in-process run: the same turns ranked
(mem0's search returns the recall's ten, so R@10 is the in-process one), every call timed
beside memstack's client, both fresh users erased; a server that evicts stops it naming
the setting."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from memstack.bench.docs_kinds import locomo_tables
from memstack.cli import main
from memstack.wiring import Services
from tests.bench.test_locomo_remote import data_file, evicting, no_eviction  # noqa: F401
from tests.server.conftest import LiveServer


def _bench(data: Path, *extra: str) -> Result:
    args = ["bench", "locomo", "--data", str(data), "--store", "sqlite", "--embedder", "hash"]
    return CliRunner().invoke(main, [*args, "--via", "mem0", *extra])


def _left(services: Services) -> int:
    return sum(services.records.count(ns) for ns in services.records.namespaces("users/"))


def test_mem0s_client_finds_what_the_in_process_run_finds(
    data_file: Path,  # noqa: F811
    tmp_path: Path,
    no_eviction: tuple[Services, LiveServer],  # noqa: F811
) -> None:
    services, live = no_eviction
    key = services.keys.create(tenant="acme", long_term=True)[0]
    out = tmp_path / "report.json"
    result = _bench(data_file, "--url", live.url, "--api-key", key, "--out", str(out))
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    via = report["via_mem0"]
    assert report["questions"] == via["questions"] == 10
    assert via["same_results"] == {"same": 10, "compared": 10}
    assert via["overall"]["R@10"] == report["overall"]["R@10"]
    assert 0 < via["overall"]["R@10"] < 1
    assert via["identical_rankings"]["compared"] == 10
    assert via["turns"] == 48 and via["requests"] == 6
    assert via["search_added_ms"] == round(via["search_ms"]["p50"] - via["recall_ms"]["p50"], 2)
    assert via["add_added_ms"] == round(via["add_ms"]["p50"] - via["add_turns_ms"]["p50"], 2)
    assert "through mem0's Python client" in result.output
    assert "the same ten turns in any order: 10/10" in result.output
    assert _left(services) == 0  # the mem0 user and its twin are erased
    page = "\n".join(locomo_tables(report))
    assert "| mem0 client |" in page and "| search / recall |" in page


def test_a_server_that_evicts_stops_the_run_naming_the_setting(
    data_file: Path,  # noqa: F811
    evicting: tuple[Services, LiveServer],  # noqa: F811
) -> None:
    services, live = evicting
    key = services.keys.create(tenant="acme", long_term=True)[0]
    result = _bench(data_file, "--url", live.url, "--api-key", key)
    assert result.exit_code == 1, result.output
    assert "of the 8 messages of a session" in result.output or "kept 5 of the 24" in result.output
    assert "MEMSTACK_MEMORY_MAX_ITEMS=0" in result.output
    assert _left(services) == 0


def test_a_wrong_key_is_told_by_mem0s_client(
    data_file: Path,  # noqa: F811
    no_eviction: tuple[Services, LiveServer],  # noqa: F811
) -> None:
    _, live = no_eviction
    result = _bench(data_file, "--url", live.url, "--api-key", "ms_wrong")
    assert result.exit_code == 1, result.output
    assert "mem0's client refused the server" in result.output
    assert "invalid or revoked API key" in result.output


def test_via_mem0_needs_the_server(data_file: Path) -> None:  # noqa: F811
    result = _bench(data_file)
    assert result.exit_code == 2
    assert "--via mem0 needs the server" in result.output
