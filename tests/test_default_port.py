"""Port 8000 by default, as spec 004's curl examples use, at every door that names one."""

import re
from pathlib import Path

from click.testing import CliRunner

from memstack.cli import main
from memstack.client._http import DEFAULT_URL, resolve_settings
from memstack.settings import DEFAULT_PORT, ServerSettings

ROOT = Path(__file__).resolve().parents[1]
SPEC_004 = next((ROOT.parent / "shared" / "spec").glob("004_*.txt"), None)


def test_the_server_listens_on_8000_by_default(tmp_path: Path):
    assert DEFAULT_PORT == 8000
    assert ServerSettings.from_env({}, dotenv=tmp_path / "absent.env").port == 8000


def test_the_client_reaches_the_default_port_unless_told_otherwise():
    assert DEFAULT_URL == f"http://127.0.0.1:{DEFAULT_PORT}"
    assert resolve_settings(None, None, env={"MEMSTACK_API_KEY": "k"})[0] == DEFAULT_URL
    told = {"MEMSTACK_API_KEY": "k", "MEMSTACK_URL": "http://h:9"}
    assert resolve_settings(None, None, env=told)[0] == "http://h:9"


def test_serve_help_names_the_default_port():
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0, result.output
    assert "default 8000" in " ".join(result.output.split())


def test_no_page_names_the_old_port():
    pages = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
    stale = [str(p.relative_to(ROOT)) for p in pages if "8765" in p.read_text(encoding="utf-8")]
    assert stale == []


def test_the_examples_use_the_port_of_the_spec_examples():
    spec_ports = (
        {"8000"}
        if SPEC_004 is None
        else set(re.findall(r"localhost:(\d+)", SPEC_004.read_text(encoding="utf-8")))
    )
    assert spec_ports == {str(DEFAULT_PORT)}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert set(re.findall(r"127\.0\.0\.1:(\d+)", readme)) == {str(DEFAULT_PORT)}


def test_the_changelog_says_the_default_port_changed():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = changelog.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    assert "8000" in unreleased and "8765" in unreleased
