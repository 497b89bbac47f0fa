"""The ``Dockerfile`` and ``compose.yaml`` at the repository's root say what they must: the
image is built from this repository's pyproject with the extras the compose file's
settings need, runs as a user without privileges, listens where it is published and
checks itself on ``/healthz``; compose wires the server to PostgreSQL (pgvector) and
Redis, each with a healthcheck the server waits for.

Where ``docker compose`` runs, it validates the compose file as well; everywhere, both
files are read here (YAML, and the Dockerfile's instructions) and their settings are
checked against the code that reads them. The healthcheck's command is run against a
real server."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from memstack.embeddings import HashEmbedder
from memstack.settings import ServerSettings
from memstack.wiring import open_services
from tests.server.conftest import serve_in_thread
from tests.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of each line, continuations joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", dockerfile)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


DOCKERFILE = instructions((ROOT / "Dockerfile").read_text(encoding="utf-8"))
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))


def final_stage() -> list[tuple[str, str]]:
    starts = [i for i, (word, _) in enumerate(DOCKERFILE) if word == "FROM"]
    return DOCKERFILE[starts[-1] :]


def env_of(stage: list[tuple[str, str]]) -> dict[str, str]:
    """The ``ENV name=value ...`` of a stage."""
    env: dict[str, str] = {}
    for word, rest in stage:
        if word == "ENV":
            env |= dict(pair.split("=", 1) for pair in shlex.split(rest))
    return env


def with_defaults(value: str) -> str:
    """A compose value with each ``${NAME:-default}`` as its default (nothing set)."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", value)


def test_docker_compose_accepts_the_file_where_it_runs():
    """``docker compose config`` where the compose plugin runs; its absence here is no
    failure, so the same checks are made below from the file itself either way."""
    docker = shutil.which("docker")
    plugin = (
        docker is not None
        and subprocess.run(
            [docker, "compose", "version"], capture_output=True, timeout=60
        ).returncode
        == 0
    )
    if plugin:
        assert docker is not None
        done = subprocess.run(
            [docker, "compose", "-f", str(ROOT / "compose.yaml"), "config", "--format", "json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert set(json.loads(done.stdout)["services"]) == {"server", "postgres", "redis"}
    assert set(COMPOSE["services"]) == {"server", "postgres", "redis"}


def test_the_image_is_built_from_this_repository():
    build = [rest for word, rest in DOCKERFILE if word in ("COPY", "RUN")]
    copied = " ".join(rest for word, rest in DOCKERFILE if word == "COPY")
    for needed in ("pyproject.toml", "README.md", "LICENSE", "src"):
        assert needed in copied, needed
    (install,) = [r for r in build if "pip install" in r]
    extras = set(re.search(r'"\.\[([a-z,-]+)\]"', install).group(1).split(","))  # type: ignore[union-attr]
    assert extras == {"server", "mcp", "postgres", "redis"}
    assert extras <= set(PYPROJECT["project"]["optional-dependencies"])
    python = re.match(r"python:(3\.\d+)", final_stage()[0][1])
    assert python is not None
    low = re.match(r">=(3\.\d+)", PYPROJECT["project"]["requires-python"])
    assert low is not None
    assert tuple(map(int, python.group(1).split("."))) >= tuple(map(int, low.group(1).split(".")))
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "*" in ignored and "!src/" in ignored  # .venv, caches, bench results stay out
    assert COMPOSE["services"]["server"]["build"] == "."


def test_the_image_runs_memstack_serve_as_a_user_without_privileges():
    stage = final_stage()
    users = [rest for word, rest in stage if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    last_user = max(i for i, (word, _) in enumerate(stage) if word == "USER")
    assert all(word != "RUN" for word, _ in stage[last_user:])
    (cmd,) = [json.loads(rest) for word, rest in stage if word == "CMD"]
    assert cmd == ["memstack", "serve"]
    assert PYPROJECT["project"]["scripts"]["memstack"] == "memstack.cli:main"


def test_the_server_listens_where_it_is_exposed_and_published():
    stage = final_stage()
    settings = ServerSettings.from_env(env_of(stage), dotenv=None)
    assert settings.host == "0.0.0.0"  # not the container's own loopback
    (exposed,) = [int(rest) for word, rest in stage if word == "EXPOSE"]
    assert settings.port == exposed
    (published,) = COMPOSE["services"]["server"]["ports"]
    assert published.startswith("127.0.0.1:${MEMSTACK_PUBLISH_PORT:-")  # the host's port: a choice
    host_ip, _, container_port = with_defaults(published).split(":")
    assert int(container_port) == exposed and host_ip == "127.0.0.1"
    assert settings.db == Path(env_of(stage)["MEMSTACK_HOME"]) / "memstack.db"
    volumes = COMPOSE["services"]["server"]["volumes"]
    assert any(v.endswith(":" + env_of(stage)["MEMSTACK_HOME"]) for v in volumes)


def test_compose_wires_the_server_to_postgresql_and_redis():
    services = COMPOSE["services"]
    env = {k: with_defaults(str(v)) for k, v in services["server"]["environment"].items()}
    settings = ServerSettings.from_env(env, dotenv=None)  # every value one the server takes
    postgres = urlsplit(settings.postgres_url or "")
    database = services["postgres"]["environment"]
    assert postgres.hostname == "postgres" and postgres.port == 5432
    assert postgres.username == database["POSTGRES_USER"]
    assert postgres.password == with_defaults(database["POSTGRES_PASSWORD"])
    assert postgres.path == "/" + database["POSTGRES_DB"]
    assert "pgvector" in services["postgres"]["image"]
    redis = urlsplit(settings.redis_url or "")
    assert redis.hostname == "redis" and redis.port == 6379
    assert services["redis"]["image"].startswith("redis:")
    assert settings.workers > 1  # several workers need the shared short-term tier: Redis
    for name in ("postgres", "redis"):
        assert services["server"]["depends_on"][name] == {"condition": "service_healthy"}
        assert services[name]["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL")
    assert "MEMSTACK_METRICS_TOKEN" in env


@pytest.fixture
def healthcheck() -> list[str]:
    """The image's HEALTHCHECK command, as exec form."""
    (check,) = [rest for word, rest in final_stage() if word == "HEALTHCHECK"]
    options, _, command = check.partition("CMD ")
    assert "--interval=" in options and "--start-period=" in options
    argv: list[str] = json.loads(command)
    assert argv[0] == "python"
    return [sys.executable, *argv[1:]]


def test_the_healthcheck_asks_healthz_of_a_real_server(tmp_path: Path, healthcheck: list[str]):
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'h.db'}", redis_url=None, embedder=HashEmbedder()
    )
    live = serve_in_thread(services)
    try:
        port = live.url.rsplit(":", 1)[1]
        up = subprocess.run(healthcheck, env={"MEMSTACK_PORT": port}, timeout=60)
    finally:
        live.server.should_exit = True
        live.thread.join(timeout=10)
        services.close()
    down = subprocess.run(
        healthcheck, env={"MEMSTACK_PORT": str(free_port())}, capture_output=True, timeout=60
    )
    assert up.returncode == 0
    assert down.returncode != 0
