"""A newcomer's first hour with the ``memstack`` command: fast start, one data location, no
tracebacks, help that reads as plain text, nothing left behind."""

from __future__ import annotations

import io
import json
import re
import socket
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memstack.cli import main
from memstack.settings import ServerSettings

HEAVY = ("fastapi", "starlette", "uvicorn", "mcp", "onnxruntime", "tokenizers", "matplotlib")


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["keys", "--help"]])
def test_light_commands_import_no_server_or_model_stack(args: list[str]):
    script = (
        "import sys\nfrom memstack.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_client_imports_no_numpy_server_or_model() -> None:
    script = (
        "import sys\nimport memstack.client\nimport memstack\nmemstack.InvalidInput\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        f"{set(HEAVY) | {'numpy'}!r}))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_memstacks_top_level_names_still_import() -> None:
    import memstack

    for name in memstack.__all__:
        assert getattr(memstack, name) is not None, name
    with pytest.raises(AttributeError):
        memstack.NoSuchName  # noqa: B018


def _all_commands(group: click.Group, ctx: click.Context) -> list[list[str]]:
    found: list[list[str]] = [[]]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found += [[name, *rest] for rest in _all_commands(command, ctx)]
        else:
            found.append([name])
    return found


def test_help_texts_show_no_rst_markup():
    with click.Context(main) as ctx:
        commands = _all_commands(main, ctx)
    assert ["keys", "revoke"] in commands and ["bench", "recall"] in commands
    runner = CliRunner()
    for path in commands:
        shown = runner.invoke(main, [*path, "--help"])
        assert shown.exit_code == 0, (path, shown.output)
        assert "``" not in shown.output, (path, shown.output)
        assert not re.search(r"\bspec \d", shown.output, re.I), (path, shown.output)


def test_tools_list_shows_each_first_sentence_whole():
    listed = CliRunner().invoke(main, ["tools", "list"]).output
    calculator = next(line for line in listed.splitlines() if line.startswith("calculator"))
    assert "sqrt(2) * pi`." in calculator
    assert all(line.rstrip().endswith(".") for line in listed.splitlines())


def _home_env(tmp_path: Path) -> dict[str, str | None]:
    return {
        "MEMSTACK_HOME": str(tmp_path / "home"),
        "MEMSTACK_DB": None,
        "MEMSTACK_POSTGRES_URL": None,
    }


def test_keys_use_one_data_location_from_any_folder(tmp_path: Path, monkeypatch):
    runner = CliRunner()
    env = _home_env(tmp_path)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / "a")
    created = runner.invoke(main, ["keys", "create", "--tenant", "acme"], env=env)
    assert created.exit_code == 0, created.output
    db = tmp_path / "home" / "memstack.db"
    assert f"data: {db}" in created.output
    monkeypatch.chdir(tmp_path / "b")
    listed = runner.invoke(main, ["keys", "list", "--json"], env=env)
    assert [k["tenant"] for k in json.loads(listed.stdout)] == ["acme"]
    assert f"data: {db}" in listed.stderr  # stdout stays pure JSON
    assert not (tmp_path / "a" / ".memstack").exists()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"MEMSTACK_HOME": "/srv/mem"}, "/srv/mem/memstack.db"),
        ({"XDG_DATA_HOME": "/x/data", "HOME": "/home/u"}, "/x/data/memstack/memstack.db"),
        ({"HOME": "/home/u"}, "/home/u/.local/share/memstack/memstack.db"),
        ({"MEMSTACK_HOME": "/srv/mem", "MEMSTACK_DB": "/elsewhere.db"}, "/elsewhere.db"),
    ],
)
def test_the_default_database_does_not_depend_on_the_working_folder(env, expected):
    assert ServerSettings.from_env(env).db == Path(expected)


def test_keys_revoke_takes_the_id_with_its_msk_prefix(tmp_path: Path):
    runner = CliRunner()
    env = _home_env(tmp_path)
    created = json.loads(
        runner.invoke(main, ["keys", "create", "--tenant", "acme", "--json"], env=env).stdout
    )
    revoked = runner.invoke(main, ["keys", "revoke", f"msk_{created['id']}"], env=env)
    assert revoked.exit_code == 0, revoked.output
    whole = runner.invoke(main, ["keys", "revoke", created["key"]], env=env)
    assert whole.exit_code == 0, whole.output  # the whole raw key names its id too
    listed = json.loads(runner.invoke(main, ["keys", "list", "--json"], env=env).stdout)
    assert listed[0]["active"] is False


def test_keys_list_json_gives_iso_times_like_the_api(tmp_path: Path):
    runner = CliRunner()
    env = _home_env(tmp_path)
    created = json.loads(
        runner.invoke(main, ["keys", "create", "--tenant", "acme", "--json"], env=env).stdout
    )
    runner.invoke(main, ["keys", "revoke", created["id"]], env=env)
    listed = json.loads(runner.invoke(main, ["keys", "list", "--json"], env=env).stdout)
    for field in ("created_at", "revoked_at"):
        value = listed[0][field]
        assert isinstance(value, str) and value.endswith("Z"), value
        assert datetime.fromisoformat(value).tzinfo is not None


def test_serve_on_a_taken_port_fails_in_one_line_before_saying_it_serves(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = CliRunner().invoke(
            main,
            ["serve", "--db", str(tmp_path / "s.db"), "--port", port],
            env={"MEMSTACK_MEMORY_EMBEDDING_PROVIDER": "hash", "MEMSTACK_REDIS_URL": None},
        )
    assert result.exit_code == 1, result.output
    assert "serving on" not in result.output
    assert f"Error: cannot listen on 127.0.0.1:{port}" in result.output
    assert "--port" in result.output


@pytest.mark.parametrize("missing", ["fastapi", "uvicorn", "prometheus_client"])
def test_serve_without_the_server_extra_names_it(missing: str, tmp_path: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, missing, None)  # import -> ImportError, as if not installed
    result = CliRunner().invoke(main, ["serve", "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 1, result.output
    assert 'pip install "memstack[server]"' in result.output and missing in result.output
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "locomo", "--data", "missing.json", "--embedder", "hash"],
        ["bench", "ingest", "--data", "missing.json", "--texts", "locomo"],
    ],
)
def test_bench_errors_are_one_line_and_exit_1(args: list[str], tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # handled, not a traceback
    assert result.output.startswith("Error: ") and "missing.json" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_bench_recall_without_matplotlib_says_so_before_the_work(tmp_path: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        main,
        [
            *("bench", "recall", "--sizes", "10", "--queries", "2", "--writes", "0"),
            *("--embedder", "hash", "--stores", "memory", "--out", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    note = result.stderr.index('pip install "memstack[bench]"')
    assert note < result.stderr.index("memory one-namespace")  # said before the progress bar
    assert out.exists() and not out.with_suffix(".png").exists()


def test_progress_bars_show_a_rate():
    from memstack.bench.progress import progress_bar

    with progress_bar(100, "work", file=io.StringIO()) as bar:
        bar.update(40)
        assert "/s" in bar.format_progress_line()


def test_progress_without_a_terminal_writes_a_line_each_tenth():
    from memstack.bench.progress import progress_bar

    log = io.StringIO()
    with progress_bar(200, "recalling", file=log) as bar:
        for _ in range(200):
            bar.update(1)
    lines = [line for line in log.getvalue().splitlines() if line.startswith("recalling: ")]
    assert [line.split(" (")[1].split(")")[0] for line in lines] == [
        f"{p}%" for p in range(10, 101, 10)
    ]
    assert all(line.endswith("/s") for line in lines)


def test_agent_runs_leave_no_temporary_folder(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = CliRunner().invoke(main, ["agent", "run", "Hi", "--model", "scripted:echo"])
    assert result.exit_code == 0, result.output
    assert "echo: Hi" in result.stdout
    assert list(tmp_path.iterdir()) == []
