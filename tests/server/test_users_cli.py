"""``memstack users ...`` through click's runner, against a real server over HTTP: every
command in text and JSON, files of turns and exports, the server's refusals as one-line
errors, and ``--url`` / ``--api-key`` before or after the verb."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memstack.cli import main
from memstack.wiring import Services
from tests.server.conftest import LiveServer
from tests.server.test_users_client import QUERY, extracting  # noqa: F401  (a server with a model)

TURNS: list[dict[str, Any]] = [
    {
        "id": "t1",
        "speaker": "Caroline",
        "text": "I moved to Berlin last spring.",
        "time": "2026-05-08T09:00:00Z",
        "metadata": {"channel": "web"},
    },
    {"id": "t2", "speaker": "Melanie", "text": "How do you like the city?", "time": 1778230830},
    {
        "id": "t3",
        "role": "user",
        "name": "Caroline",
        "content": "I love the lakes.",
        "session_id": "s2",
    },
]


@pytest.fixture
def key(services: Services) -> str:
    return services.keys.create(tenant="acme", long_term=True)[0]


def _run(live: LiveServer, key: str, *args: str, stdin: str | None = None) -> Result:
    env = {"MEMSTACK_URL": live.url, "MEMSTACK_API_KEY": key}
    return CliRunner().invoke(main, ["users", *args], env=env, input=stdin)


def _ok(live: LiveServer, key: str, *args: str, stdin: str | None = None) -> Result:
    result = _run(live, key, *args, stdin=stdin)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result


def _json(live: LiveServer, key: str, *args: str, stdin: str | None = None) -> Any:
    return json.loads(_ok(live, key, *args, "--json", stdin=stdin).stdout)


def _jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def test_turns_recall_and_context_in_text_and_json(live: LiveServer, key: str, tmp_path: Path):
    turns = _jsonl(tmp_path / "turns.jsonl", TURNS)
    added = _ok(live, key, "add-turns", "u1", str(turns), "--session-id", "s1")
    assert added.stdout.splitlines() == ["t1  stored", "t2  stored", "t3  stored"]
    again = _json(
        live, key, "add-turns", "u1", "-", "--session-id", "s1", stdin=json.dumps(TURNS[:1])
    )
    assert again == {"turns": [{"id": "t1", "outcome": "duplicate", "reason": None}], "job_ids": []}

    found = _json(live, key, "recall", "u1", QUERY, "-k", "2", "--no-touch")["results"]
    assert [r["id"] for r in found][:1] == ["t1"] and len(found) == 2
    assert (found[0]["session_id"], found[0]["metadata"]) == ("s1", {"channel": "web"})
    assert _accessed(live, key)["t1"] is None  # --no-touch
    lines = _ok(live, key, "recall", "u1", QUERY, "-k", "1").stdout.splitlines()
    assert _accessed(live, key)["t1"] is not None
    assert len(lines) == 1 and "  t1  event  s1  " in lines[0]
    assert "Caroline: I moved to Berlin last spring." in lines[0]
    lakes = _json(live, key, "recall", "u1", "lakes", "--session-id", "s2")["results"][0]
    assert (lakes["id"], lakes["speaker"]) == ("t3", "Caroline")
    twin = {**TURNS[0], "id": "t4", "session_id": "s3"}  # said again, in another session
    _ok(live, key, "add-turns", "u1", "-", stdin=json.dumps([twin]))
    session_term = {
        session: {
            r["id"]: r["scores"]["session"]
            for r in _json(live, key, "recall", "u1", QUERY, "--no-touch", *session)["results"]
        }
        for session in ((), ("--session-id", "s1"))
    }
    assert session_term[("--session-id", "s1")]["t1"] > session_term[()]["t1"]  # favoured
    before = _json(live, key, "recall", "u1", QUERY, "--as-of", "2026-01-01T00:00:00Z")
    assert before == {"results": []}  # nothing was said yet then

    block = _ok(live, key, "context", "u1", QUERY, "-k", "1").stdout
    assert block.startswith("<recalled-memories>") and "Berlin" in block and "lakes" not in block
    assert _json(live, key, "context", "u1", QUERY, "-k", "1")["block"] + "\n" == block
    nothing = _ok(live, key, "context", "nobody", QUERY)
    assert (nothing.stdout, nothing.stderr) == ("", "nothing recalled\n")


def _accessed(live: LiveServer, key: str) -> dict[str, str | None]:
    listed = _json(live, key, "memories", "u1", "--all")["memories"]
    return {m["id"]: m["last_accessed_at"] for m in listed}


def test_facts_history_pages_forget_and_list(live: LiveServer, key: str):
    _ok(live, key, "add-turns", "u1", "-", "--session-id", "s1", stdin=json.dumps(TURNS))
    fact = _json(live, key, "remember", "u1", "Caroline lives in Berlin.", "--kind", "identity")
    assert fact["outcome"] == "stored" and fact["id"]
    moved = _ok(live, key, "remember", "u1", "Caroline lives in Oslo.", "--supersedes", fact["id"])
    moved_id, outcome = moved.stdout.split()
    assert outcome == "stored"
    history = _ok(live, key, "history", "u1", fact["id"]).stdout.splitlines()
    assert len(history) == 2 and history[0].split()[2] == fact["id"]
    assert history[1].split()[1:3] == ["current", moved_id] and "identity" in history[0]
    versions = _json(live, key, "history", "u1", fact["id"])["versions"]
    assert [v["superseded_by"] for v in versions] == [moved_id, None]

    first = _ok(live, key, "memories", "u1", "--limit", "3")
    assert len(first.stdout.splitlines()) == 3 and "next page: --cursor " in first.stderr
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = _json(live, key, "memories", "u1", "--limit", "3", "--cursor", cursor)
    assert len(rest["memories"]) == 1 and rest["next_cursor"] is None
    every = _json(live, key, "memories", "u1", "--limit", "2", "--all")
    assert len(every["memories"]) == 4 and every["next_cursor"] is None  # 3 turns, 1 fact
    closed = _json(live, key, "memories", "u1", "--all", "--include-superseded")["memories"]
    assert fact["id"] in [m["id"] for m in closed]

    assert _json(live, key, "forget", "u1", "t2") == {"deleted": True, "id": "t2"}
    assert _ok(live, key, "forget", "u1", "t3").stdout == "forgot t3\n"
    gone = _run(live, key, "forget", "u1", "t2")
    assert gone.exit_code == 1 and "Traceback" not in gone.output
    assert (
        gone.output.startswith("Error: no memory with this id") and "for this user" in gone.output
    )

    _ok(live, key, "remember", "u3", "Likes tea.")
    _ok(live, key, "remember", "u2", "Likes coffee.")
    assert _ok(live, key, "list").stdout.splitlines() == ["u1", "u2", "u3"]
    page = _json(live, key, "list", "--limit", "2")
    assert page["users"] == ["u1", "u2"] and page["next_cursor"] is not None
    assert _json(live, key, "list", "--cursor", page["next_cursor"])["users"] == ["u3"]
    assert _json(live, key, "list", "--limit", "1", "--all") == {
        "users": ["u1", "u2", "u3"],
        "next_cursor": None,
    }


def test_export_erase_and_import(live: LiveServer, key: str, tmp_path: Path):
    _ok(live, key, "add-turns", "u1", "-", "--session-id", "s1", stdin=json.dumps(TURNS))
    fact = _json(live, key, "remember", "u1", "Caroline lives in Berlin.")
    _ok(live, key, "remember", "u1", "Caroline lives in Oslo.", "--supersedes", fact["id"])
    dump = tmp_path / "u1.jsonl"
    exported = _ok(live, key, "export", "u1", "-o", str(dump))
    assert exported.stderr == "exported 5 memories (every version)\n"
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(lines) == 5 and {"t1", "t2", "t3", fact["id"]} <= {m["id"] for m in lines}

    kept = _run(live, key, "erase", "u1", stdin="n\n")
    assert kept.exit_code == 1 and "Aborted" in kept.output
    assert len(_json(live, key, "memories", "u1")["memories"]) == 4  # nothing erased
    assert _ok(live, key, "erase", "u1", stdin="y\n").stdout.startswith("erased ")
    assert _json(live, key, "erase", "u1", "--yes") == {"deleted": 0}
    assert _json(live, key, "memories", "u1")["memories"] == []

    assert _json(live, key, "import", "u1", str(dump)) == {"stored": 5, "skipped": 0}
    again = _ok(live, key, "import", "u1", "-", stdin=dump.read_text())
    assert again.stdout == "imported 0 memories; 5 already held, left as they were\n"
    document = json.dumps({"memories": lines})  # the JSON GET .../export answers
    assert _json(live, key, "import", "u1", "-", "--replace", stdin=document)["stored"] == 5
    _ok(live, key, "export", "u1", "-o", str(tmp_path / "again.jsonl"))
    assert (tmp_path / "again.jsonl").read_text() == dump.read_text()


def test_turns_go_in_parts_and_a_later_part_names_its_turns(
    live: LiveServer, key: str, tmp_path: Path
):
    turns = [{"speaker": "A", "text": f"line {i}", "session_id": "s1"} for i in range(1_000)]
    turns.append({"speaker": "A", "text": "no session"})  # the 1,001st: a second call
    source = _jsonl(tmp_path / "many.jsonl", turns)
    added = _json(live, key, "add-turns", "u1", str(source), "--session-id", "s2")
    assert [t["outcome"] for t in added["turns"]] == ["stored"] * 1_001
    last = _json(live, key, "recall", "u1", "no session", "-k", "1")["results"][0]
    assert (last["session_id"], last["text"]) == ("s2", "A: no session")
    refused = _run(live, key, "add-turns", "u2", str(source))
    assert refused.exit_code == 1
    assert "turns 1001 to 1001 of the file; the 1000 before were sent" in refused.output


def test_bad_input_is_one_line_naming_the_fix(live: LiveServer, key: str, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(TURNS[0]) + "\n\n" + '{"speaker": "A", "text": \n')
    refused = _run(live, key, "add-turns", "u1", str(bad), "--session-id", "s1")
    assert refused.exit_code == 1 and f"{bad}: line 3 is not JSON" in refused.output
    assert _json(live, key, "memories", "u1")["memories"] == []  # nothing of the file sent
    listed = tmp_path / "list.json"
    listed.write_text('[{"speaker": "A", "text": "hi"},\n "hello"]')
    assert "item 2 is not a JSON object" in _run(live, key, "add-turns", "u1", str(listed)).output
    broken = tmp_path / "broken.json"
    broken.write_text('[{"speaker": "A",\n "text": }]')
    assert "line 2 is not JSON" in _run(live, key, "add-turns", "u1", str(broken)).output

    no_session = _run(live, key, "add-turns", "u1", "-", stdin=json.dumps(TURNS[:1]))
    assert no_session.exit_code == 1 and "session_id" in no_session.output
    assert "u1" not in _ok(live, key, "list").stdout
    when = _run(live, key, "recall", "u1", QUERY, "--as-of", "last spring")
    assert when.exit_code == 2 and "'last spring' is not a time" in when.output
    unknown = _run(live, key, "history", "u1", "mem_nope")
    assert unknown.exit_code == 1 and "mem_nope" in unknown.output
    job = _run(live, key, "job", "u1", "job_nope")
    assert job.exit_code == 1 and "job_nope" in job.output
    for result in (refused, no_session, unknown, job):
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert "Traceback" not in result.output


def test_a_key_without_the_long_term_right_is_told_the_fix(live: LiveServer, services: Services):
    off = services.keys.create(tenant="acme")[0]
    for args in (("list",), ("recall", "u1", QUERY), ("remember", "u1", "Likes tea.")):
        refused = _run(live, off, *args)
        assert refused.exit_code == 1, refused.output
        assert "MEMSTACK_MEMORY_ENABLED=1" in refused.output
        assert "memstack keys create --long-term" in refused.output
    wrong = _run(live, "msk_wrong", "list")
    assert wrong.exit_code == 1 and "401" in wrong.output


def test_server_options_before_or_after_the_verb(live: LiveServer, key: str):
    _ok(live, key, "remember", "u1", "Likes tea.")
    runner = CliRunner()
    after = runner.invoke(main, ["users", "list", "--url", live.url, "--api-key", key], env={})
    before = runner.invoke(main, ["users", "--url", live.url, "--api-key", key, "list"], env={})
    assert after.exit_code == before.exit_code == 0, (after.output, before.output)
    assert after.stdout == before.stdout == "u1\n"
    env = {"MEMSTACK_URL": live.url, "MEMSTACK_API_KEY": "msk_wrong"}
    over_env = runner.invoke(main, ["users", "list", "--api-key", key], env=env)
    assert (over_env.exit_code, over_env.stdout) == (0, "u1\n")
    over_group = ["users", "--api-key", "msk_wrong", "list", "--api-key", key]
    assert runner.invoke(main, over_group, env=env).stdout == "u1\n"  # the command's wins
    memories = runner.invoke(main, ["memories", "list", "--api-key", key, "--url", live.url])
    assert memories.exit_code == 0, memories.output  # issue 34: `memories` takes them too


def test_job_follows_the_extraction(extracting: tuple[LiveServer, str], tmp_path: Path):  # noqa: F811
    server, key = extracting
    added = _ok(server, key, "add-turns", "u1", "-", "--session-id", "s1", stdin=json.dumps(TURNS))
    *outcomes, job_line = added.stdout.splitlines()
    assert outcomes == ["t1  stored", "t2  stored", "t3  stored"] and job_line.startswith("job: ")
    job_id = job_line.removeprefix("job: ")
    deadline = time.monotonic() + 30
    job = _json(server, key, "job", "u1", job_id)
    while job["state"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.05)
        job = _json(server, key, "job", "u1", job_id)
    assert (job["id"], job["state"], job["error"], len(job["stored"])) == (job_id, "done", None, 2)
    shown = _ok(server, key, "job", "u1", job_id).stdout.splitlines()
    assert shown[0].startswith(f"{job_id}  done  updated ")
    assert shown[1] == f"stored: {', '.join(job['stored'])}"
    extracted = _json(server, key, "recall", "u1", "Berlin", "--provenance", "extracted")
    assert {r["id"] for r in extracted["results"]} == set(job["stored"])


def test_recall_and_context_cut_at_min_score(live: LiveServer, key: str, tmp_path: Path):
    _ok(
        live, key, "add-turns", "u1", str(_jsonl(tmp_path / "t.jsonl", TURNS)), "--session-id", "s1"
    )
    every = _json(live, key, "recall", "u1", QUERY, "--no-touch", "--min-score", "0")["results"]
    cut = min(hit["scores"]["calibrated"] for hit in every) + 1e-6
    kept = _json(live, key, "recall", "u1", QUERY, "--no-touch", "--min-score", str(cut))
    assert 0 < len(kept["results"]) < len(every)
    assert all(hit["scores"]["calibrated"] >= cut for hit in kept["results"])
    assert "lakes" in _ok(live, key, "context", "u1", QUERY, "--min-score", "0").stdout
    nothing = _ok(live, key, "context", "u1", QUERY, "--min-score", "1")
    assert (nothing.stdout, nothing.stderr) == ("", "nothing recalled\n")
