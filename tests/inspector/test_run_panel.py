"""The live panel of one run (``memstack agent run --inspect``): entries appear in a real
Chromium as they are written, stream as server-sent events, and the CLI serves them."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from memstack.cli import main
from memstack.transports.inspector.run_panel import RunPanel
from memstack.working.memory import AgentMemory
from tests.inspector.page import InspectorPage, headless_chromium


@pytest.fixture
def memory() -> AgentMemory:
    return AgentMemory()


@pytest.fixture
def panel(memory: AgentMemory) -> Iterator[tuple[RunPanel, str]]:
    running = RunPanel(memory, port=0)
    url = running.start()
    yield running, url
    running.stop()


def events(url: str) -> list[tuple[str, dict[str, object]]]:
    """Every event of ``/events`` until the stream ends."""
    out: list[tuple[str, dict[str, object]]] = []
    with httpx.stream("GET", f"{url}events", timeout=30) as reply:
        assert reply.headers["content-type"].startswith("text/event-stream")
        event = ""
        for line in reply.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                out.append((event, json.loads(line.removeprefix("data: "))))
    return out


def test_entries_appear_in_the_browser_as_they_are_written(
    panel: tuple[RunPanel, str], memory: AgentMemory, tmp_path: Path, shots: Path
):
    running, url = panel
    memory.set(key="input:city", kind="input", value="Lisbon", source="cli", title="city")
    driver = headless_chromium(tmp_path / "profile")
    try:
        page = InspectorPage(driver, url.rstrip("/"), shots)
        driver.get(url)
        page.wait_for_row("entries", 0, "input:city")
        page.until(lambda _: "in progress" in page.by_id("status").text)
        memory.set(key="step:weather", kind="step_result", value={"temp": 21}, source="weather")
        page.wait_for_row("entries", 0, "step:weather")
        memory.set(key="step:weather", kind="step_result", value="<b>sunny</b>", source="weather")
        page.until(lambda _: "<b>sunny</b>" in page.column("entries", 4))
        assert page.column("entries", 0) == ["input:city", "step:weather"]  # updated in place
        assert driver.execute_script("return document.querySelectorAll('td b').length") == 0
        running.finish()
        page.until(lambda _: page.by_id("status").text == "The run finished (2 entries).")
        page.shoot("inspector-run.png")
    finally:
        driver.quit()


def test_the_event_stream_replays_then_ends_when_the_run_finishes(
    panel: tuple[RunPanel, str], memory: AgentMemory
):
    running, url = panel
    memory.set(key="task:t1", kind="task_result", value=[1, 2], source="t1", title="sum")
    running.finish()
    [(kind, entry), end] = events(url)
    assert kind == "entry" and end == ("end", {})
    assert entry["key"] == "task:t1" and entry["value"] == [1, 2] and entry["title"] == "sum"


def test_only_the_panel_files_are_served(panel: tuple[RunPanel, str]):
    _, url = panel
    assert httpx.get(url).headers["content-security-policy"].startswith("default-src 'none'")
    assert httpx.get(f"{url}run.js").status_code == 200
    assert httpx.get(f"{url}inspector.js").status_code == 404


def test_agent_run_inspect_serves_the_runs_memory_until_ctrl_c(tmp_path: Path):
    command = [sys.executable, "-m", "memstack", "agent", "run", "Say hi to Ana"]
    command += ["--model", "scripted:echo", "--inspect", "--inspect-port", "0"]
    command += ["--workspace", str(tmp_path)]
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A suite started in the background (``pytest &`` in a script) ignores SIGINT, and
        # an ignored signal stays ignored in the child: give the run Ctrl-C back.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as run:
        try:
            assert run.stderr is not None
            lines = iter(run.stderr.readline, "")
            url = next(line for line in lines if line.startswith("inspect: ")).split()[1]
            assert "until Ctrl-C" in next(line for line in lines if "the run is over" in line)
            seen = events(url)
            assert seen[-1] == ("end", {})
            values = {str(entry["key"]): entry["value"] for kind, entry in seen if kind == "entry"}
            assert values["task:cli-agent"] == "echo: Say hi to Ana"
            run.send_signal(signal.SIGINT)
            assert run.wait(timeout=30) == 0
            assert run.stdout is not None and "echo: Say hi to Ana" in run.stdout.read()
        finally:
            run.kill()  # a failed assertion must not leave Popen's exit waiting forever


def test_a_port_in_use_is_a_clear_error(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        args = ["agent", "run", "x", "--model", "scripted:echo", "--workspace", str(tmp_path)]
        result = CliRunner().invoke(main, [*args, "--inspect", "--inspect-port", port])
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "--inspect-port" in result.output
