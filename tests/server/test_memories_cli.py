"""``memstack memories ...`` through click's runner, against a real server over HTTP."""

import json
from pathlib import Path

from click.testing import CliRunner

from memstack.cli import main
from memstack.client import MemoryClient
from tests.server.conftest import Keys, LiveServer
from tests.server.test_client_typed import fresh  # noqa: F401  (a second server, new database)


def _run(live: LiveServer, key: str, *args: str):
    env = {"MEMSTACK_URL": live.url, "MEMSTACK_API_KEY": key}
    return CliRunner().invoke(main, ["memories", *args], env=env)


def _json(live: LiveServer, key: str, *args: str):
    result = _run(live, key, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_list_search_get_delete(live: LiveServer, keys: Keys):
    with MemoryClient(live.url, api_key=keys.acme) as client:
        tea = client.store("bot", "drink", "Green tea in the morning.")
        client.store("bot", "tz", "Lives in Lisbon.", scope="session", session_id="s1")
        client.store("ops", "deploy", "Blue-green only.")
    page = _json(live, keys.acme, "list", "--agent-id", "bot")
    assert page["total"] == 2 and {m["key"] for m in page["memories"]} == {"drink", "tz"}
    found = _json(live, keys.acme, "search", "green tea", "--agent-id", "bot")
    assert found["results"][0]["memory"]["id"] == tea["id"]
    assert _json(live, keys.acme, "get", tea["id"])["value"] == "Green tea in the morning."
    assert _json(live, keys.acme, "delete", tea["id"]) == {"deleted": True, "id": tea["id"]}
    assert _json(live, keys.acme, "delete", "--session-id", "s1") == {"deleted": 1}
    assert _json(live, keys.acme, "list")["total"] == 1
    plain = _run(live, keys.acme, "list")
    assert plain.exit_code == 0 and "deploy: Blue-green only." in plain.stdout


def test_export_then_import_round_trip(live: LiveServer, keys: Keys, fresh, tmp_path: Path):  # noqa: F811
    target, target_key = fresh
    with MemoryClient(live.url, api_key=keys.acme) as client:
        client.store("bot", "drink", "Green tea.", metadata={"source": "chat"})
        client.store("bot", "tz", "Lisbon.", scope="global", ttl=3600)
    dump = tmp_path / "memories.jsonl"
    exported = _run(live, keys.acme, "export", "-o", str(dump))
    assert exported.exit_code == 0, exported.output
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert {m["key"] for m in lines} == {"drink", "tz"}
    imported = _json(target, target_key, "import", str(dump))
    assert imported == {"imported": 2, "versions": 2, "skipped": 0, "expired": 0}
    restored = _json(target, target_key, "list")["memories"]
    assert sorted((m["id"], m["metadata"], m["expires_at"]) for m in restored) == sorted(
        (m["id"], m["metadata"], m["expires_at"]) for m in lines
    )
    # The target moves on; the old export imported again leaves its newer versions be.
    with MemoryClient(target.url, api_key=target_key) as client:
        client.store("bot", "drink", "Black coffee.")
    again = _json(target, target_key, "import", str(dump))
    assert again == {"imported": 0, "versions": 0, "skipped": 2, "expired": 0}
    assert _values(target, target_key) == {"drink": "Black coffee.", "tz": "Lisbon."}
    replaced = _json(target, target_key, "import", "--replace", str(dump))
    assert replaced == {"imported": 2, "versions": 2, "skipped": 0, "expired": 0}
    assert _values(target, target_key) == {"drink": "Green tea.", "tz": "Lisbon."}


def _values(server: LiveServer, key: str) -> dict[str, str]:
    return {m["key"]: m["value"] for m in _json(server, key, "list")["memories"]}


def test_errors_are_one_line_and_name_the_fix(live: LiveServer, keys: Keys, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"agent_id": "bot", "scope": "agent", "key": "k", "value": "v"}\n{oops\n')
    refused = _run(live, keys.acme, "import", str(bad))
    assert refused.exit_code == 1 and "line 2 is not JSON" in refused.output
    assert _json(live, keys.acme, "list")["total"] == 0  # nothing of the file was written
    wrong_key = _run(live, "msk_wrong", "list")
    assert wrong_key.exit_code == 1 and "401" in wrong_key.output
    assert "Traceback" not in wrong_key.output
    neither = _run(live, keys.acme, "delete")
    assert neither.exit_code == 2 and "--agent-id" in neither.output


def test_search_min_score_keeps_only_hits_at_or_above_it(live: LiveServer, keys: Keys):
    with MemoryClient(live.url, api_key=keys.acme) as client:
        client.store("bot", "drink", "Green tea in the morning.")
        client.store("bot", "deploy", "Blue-green deployments only.")
    every = _json(live, keys.acme, "search", "green tea", "--min-score", "0")["results"]
    cut = min(hit["calibrated"] for hit in every) + 1e-6
    kept = _json(live, keys.acme, "search", "green tea", "--min-score", str(cut))["results"]
    assert len(every) == 2 and 0 < len(kept) < len(every)
    assert all(hit["calibrated"] >= cut for hit in kept)
    bad = _run(live, keys.acme, "search", "green tea", "--min-score", "2")
    assert bad.exit_code == 2 and "--min-score" in bad.output
