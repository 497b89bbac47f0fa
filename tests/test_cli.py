import json

from click.testing import CliRunner

from memstack import __version__
from memstack.cli import main
from memstack.working import MEMORY_TOOLS_PROMPT


def test_tools_list_table():
    result = CliRunner().invoke(main, ["tools", "list"])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines()]
    assert names == [
        "memory_list",
        "memory_read",
        "memory_write",
        "workspace_read",
        "workspace_write",
        "workspace_list",
        "calculator",
        "statistics",
        "geometry",
        "trigonometry",
        "unit_conversion",
        "read_file",
        "write_file",
        "list_directory",
    ]


def test_tools_list_json_in_both_provider_shapes():
    openai = json.loads(CliRunner().invoke(main, ["tools", "list", "--json"]).output)
    assert [t["function"]["name"] for t in openai][:3] == [
        "memory_list",
        "memory_read",
        "memory_write",
    ]
    assert openai[1]["function"]["parameters"]["required"] == ["keys"]
    anthropic = json.loads(
        CliRunner().invoke(main, ["tools", "list", "--json", "--format", "anthropic"]).output
    )
    assert anthropic[2]["name"] == "memory_write"
    assert anthropic[2]["input_schema"]["required"] == ["key", "value"]


def test_bad_format_is_a_clear_usage_error():
    result = CliRunner().invoke(main, ["tools", "list", "--json", "--format", "gemini"])
    assert result.exit_code == 2
    assert "'gemini' is not one of 'openai', 'anthropic'" in result.output


def test_prompt_memory_tools_prints_the_section():
    result = CliRunner().invoke(main, ["prompt", "memory-tools"])
    assert result.output.strip() == MEMORY_TOOLS_PROMPT


def test_version():
    assert __version__ in CliRunner().invoke(main, ["--version"]).output
