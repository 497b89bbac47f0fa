"""``memstack agent run`` through click's runner: streamed output, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memstack.cli import main


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, ["agent", "run", *args], env=env or {})


def test_scripted_run_streams_the_answer_once(tmp_path: Path):
    result = run("Say hello to the team", "--model", "scripted:echo", "--workspace", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.stdout.count("echo: Say hello to the team") == 1
    assert f"workspace: {tmp_path}" in result.stderr


def test_model_comes_from_the_environment_too():
    result = run("Hi", env={"MEMSTACK_AGENT_MODEL": "scripted:echo"})
    assert result.exit_code == 0 and "echo: Hi" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "openai:gpt-4o-mini"], "set OPENAI_API_KEY"),
        (["--model", "anthropic:claude-haiku-4-5"], "set ANTHROPIC_API_KEY"),
        (["--model", "gpt-4o"], "provider"),
        (["--model", "scripted:echo", "--tools", "shell"], "unknown tool shell"),
    ],
)
def test_bad_setups_fail_clearly(args: list[str], message: str):
    result = run("x", *args, env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""})
    assert result.exit_code == 1
    assert message in result.output


def test_a_missing_model_is_a_usage_error():
    result = run("x")
    assert result.exit_code == 2 and "--model" in result.output
