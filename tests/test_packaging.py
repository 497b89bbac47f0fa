"""What ``pip install memstack`` gets: the licence, a description for PyPI readers, and no web
server unless the ``server`` extra is asked for. The wheel is built by hatchling, as pip would."""

from __future__ import annotations

import email
import subprocess
import zipfile
from email.message import Message
from pathlib import Path

import pytest
from hatchling.builders.wheel import WheelBuilder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    built = list(WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"]))
    return zipfile.ZipFile(built[0])


def _metadata(wheel: zipfile.ZipFile) -> Message:
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    return email.message_from_bytes(wheel.read(name))


def test_the_wheel_ships_memstacks_licence(wheel: zipfile.ZipFile):
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
    assert b"Apache License" in wheel.read(name)
    assert _metadata(wheel)["License-Expression"] == "Apache-2.0"


def test_the_pypi_description_opens_with_pip_install_not_make(wheel: zipfile.ZipFile):
    description = _metadata(wheel).get_payload()
    assert isinstance(description, str)
    assert "make serve" not in description.split("## ")[0]
    assert 'pip install "memstack[server]"' in description.split("## ")[0]
    assert "## The memory server" in description  # the README follows


def test_fastapi_and_uvicorn_come_only_with_the_server_extra(wheel: zipfile.ZipFile):
    requires = _metadata(wheel).get_all("Requires-Dist") or []
    core = [r for r in requires if "extra ==" not in r]
    server = [r for r in requires if "extra == 'server'" in r.replace('"', "'")]
    for name in ("fastapi", "uvicorn"):
        assert not any(r.startswith(name) for r in core), core
        assert any(r.startswith(name) for r in server), server


@pytest.mark.parametrize(
    ("variables", "flags"),
    [
        ("PORT=9123", "--port 9123"),
        ("PORT=9123 HOST=0.0.0.0", "--port 9123 --host 0.0.0.0"),
        ("WORKERS=2 REDIS_URL=redis://127.0.0.1:6379/0", "--workers 2 --redis-url redis://"),
    ],
)
def test_make_serve_takes_the_port_and_other_settings(variables: str, flags: str):
    shown = subprocess.run(
        ["make", "--no-print-directory", "-n", "serve", *variables.split()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    command = shown.stdout.strip().splitlines()[-1]
    assert command.startswith(".venv/bin/memstack serve ")
    assert flags in command
