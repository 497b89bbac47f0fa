"""The inspector's pages ship in the wheel, so ``/ui`` and ``--inspect`` work offline after
``pip install "memstack[server]"``."""

from __future__ import annotations

import zipfile
from pathlib import Path

from hatchling.builders.wheel import WheelBuilder

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "memstack" / "transports" / "inspector" / "static"


def test_every_static_file_is_in_the_wheel(tmp_path: Path):
    [built] = WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"])
    shipped = set(zipfile.ZipFile(built).namelist())
    wanted = {f"memstack/transports/inspector/static/{p.name}" for p in STATIC.iterdir()}
    assert {
        "memstack/transports/inspector/static/index.html",
        "memstack/transports/inspector/static/run.js",
    } <= wanted
    assert wanted <= shipped
