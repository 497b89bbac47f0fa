"""``memstack memories store`` and ``memstack memories history`` through click's runner,
against a real server over HTTP."""

import json

from click.testing import CliRunner, Result

from memstack.cli import main
from memstack.client import MemoryClient
from tests.server.conftest import Keys, LiveServer


def _run(live: LiveServer, key: str, *args: str, stdin: str | None = None) -> Result:
    env = {"MEMSTACK_URL": live.url, "MEMSTACK_API_KEY": key, "MEMSTACK_AGENT_ID": None}
    return CliRunner().invoke(main, ["memories", *args], env=env, input=stdin)


def _json(live: LiveServer, key: str, *args: str, stdin: str | None = None):
    result = _run(live, key, *args, "--json", stdin=stdin)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_store_then_update_then_history(live: LiveServer, keys: Keys):
    first = _json(
        live,
        keys.acme,
        "store",
        "editor",
        "Vim",
        "--agent-id",
        "bot",
        "--metadata",
        '{"source": "chat"}',
        "--ttl",
        "3600",
        "--provenance",
        "tool_output",
        "--provenance-detail",
        "settings-scan",
    )
    assert (first["agent_id"], first["scope"], first["key"], first["value"]) == (
        "bot",
        "agent",
        "editor",
        "Vim",
    )
    assert first["metadata"] == {"source": "chat"} and first["expires_at"] is not None
    assert (first["provenance"], first["provenance_detail"]) == ("tool_output", "settings-scan")
    plain = _run(live, keys.acme, "store", "editor", "-", "--agent-id", "bot", stdin="Neovim")
    assert plain.exit_code == 0, plain.output
    assert f"{first['id']}  bot  agent  editor: Neovim" in plain.stdout
    with MemoryClient(live.url, api_key=keys.acme) as client:
        assert client.get(first["id"])["value"] == "Neovim"  # one memory, updated
    history = _json(live, keys.acme, "history", first["id"])
    assert history["id"] == first["id"]
    assert [v["value"] for v in history["versions"]] == ["Vim", "Neovim"]
    assert [v["closed_reason"] for v in history["versions"]] == ["superseded", None]
    lines = _run(live, keys.acme, "history", first["id"]).stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("1  ") and "superseded  Vim" in lines[0]
    assert lines[1].startswith("2  ") and " - now  current  Neovim" in lines[1]


def test_store_in_a_session_with_the_key_after_the_verb(live: LiveServer, keys: Keys):
    env = {"MEMSTACK_URL": live.url, "MEMSTACK_API_KEY": None}
    args = ["store", "tz", "Lisbon", "--agent-id", "bot", "--scope", "session"]
    args += ["--session-id", "s1", "--api-key", keys.acme, "--json"]
    result = CliRunner().invoke(main, ["memories", *args], env=env)
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert (stored["scope"], stored["session_id"]) == ("session", "s1")


def test_bad_input_is_refused_naming_the_option_and_the_fix(live: LiveServer, keys: Keys):
    no_agent = _run(live, keys.acme, "store", "k", "v")
    assert no_agent.exit_code == 2 and "--agent-id" in no_agent.output
    for metadata in ("{oops", "[1, 2]"):
        refused = _run(
            live, keys.acme, "store", "k", "v", "--agent-id", "bot", "--metadata", metadata
        )
        assert refused.exit_code == 2, refused.output
        assert "--metadata" in refused.output and '{"source": "chat"}' in refused.output
    late = _run(live, keys.acme, "store", "k", "v", "--agent-id", "bot", "--ttl", "soon")
    assert late.exit_code == 1 and "ttl" in late.output and "Traceback" not in late.output
    missing = _run(live, keys.acme, "history", "mem_0123456789abcdef0123456789abcdef")
    assert missing.exit_code == 1 and "no memory" in missing.output, missing.output
    with MemoryClient(live.url, api_key=keys.acme) as client:
        assert client.list()["total"] == 0  # nothing refused was stored
