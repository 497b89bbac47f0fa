"""``memstack serve``: the memory server, and its first key on a fresh store."""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memstack.cli._store import (
    db_option,
    echo_data_location,
    postgres_lag_option,
    postgres_option,
    postgres_read_option,
    settings_from_env,
)
from memstack.cli.models import local_model_option
from memstack.errors import MemstackError
from memstack.home import first_key_file, write_private
from memstack.service.api_keys import ApiKeys
from memstack.settings import DEFAULT_PORT, ServerSettings

if TYPE_CHECKING:
    from fastapi import FastAPI

    from memstack.wiring import Services


@click.command()
@db_option
@postgres_option
@postgres_read_option
@postgres_lag_option
@click.option(
    "--redis-url", default=None, help="Redis for the short-term tier [env MEMSTACK_REDIS_URL]."
)
@click.option(
    "--redis-cluster",
    is_flag=True,
    default=None,
    help="--redis-url names one node of a Redis Cluster [env MEMSTACK_REDIS_CLUSTER=1].",
)
@click.option("--host", default=None, help="[env MEMSTACK_HOST; default 127.0.0.1]")
@click.option("--port", type=int, default=None, help=f"[env MEMSTACK_PORT; default {DEFAULT_PORT}]")
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Server processes; more than 1 needs --redis-url [env MEMSTACK_WORKERS; default 1].",
)
@click.option(
    "--durable",
    is_flag=True,
    default=None,
    help="SQLite synchronous=FULL: acknowledged writes survive power loss, at one fsync per "
    "write [env MEMSTACK_DURABLE=1; default: synchronous=NORMAL, which survives a crash].",
)
@click.option(
    "--pin-cores",
    is_flag=True,
    default=None,
    help="The local model's calls on cores of their own, and a spill lane in the request "
    "cores' idle time: for a server alone on its machine, one worker only; raises the tail "
    "latency of stores [env MEMSTACK_PIN_CORES=1; default: nothing pinned].",
)
@click.option(
    "--llm",
    default=None,
    metavar="PROVIDER:MODEL",
    help="The model that extracts memories from the users' conversations after each write "
    "of turns, e.g. openai:gpt-4o-mini or ollama:qwen2.5:7b, with the provider's usual "
    "environment settings (OPENAI_API_KEY, ...) [env MEMSTACK_LLM; default: turns are "
    "stored verbatim only].",
)
@local_model_option
def serve(
    db: Path | None,
    postgres_url: str | None,
    postgres_read_urls: tuple[str, ...],
    postgres_max_lag: float | None,
    redis_url: str | None,
    redis_cluster: bool | None,
    host: str | None,
    port: int | None,
    workers: int | None,
    durable: bool | None,
    pin_cores: bool | None,
    llm: str | None,
    local_model: Path | None,
) -> None:
    """Run the memory server (REST API, OpenAPI docs at /docs)."""
    settings = settings_from_env(
        db=db,
        postgres_url=postgres_url,
        postgres_read_urls=postgres_read_urls,
        postgres_max_lag=postgres_max_lag,
        redis_url=redis_url,
        redis_cluster=redis_cluster or None,
        host=host,
        port=port,
        workers=workers,
        durable=durable or None,
        pin_cores=pin_cores or None,
        llm=llm,
        local_model=local_model,
    )
    _check_workers(settings)
    _check_llm(settings)
    _require_server_extra()
    with _bind(settings.host, settings.port) as listening:
        echo_data_location(settings)
        services = _open_services(settings)
        try:
            _prepare(services, settings)
            if settings.workers == 1:
                from memstack.embeddings.cores import pin_threads
                from memstack.transports.app import REQUEST_THREADS, create_app

                if settings.pin_cores and services.cores is not None:
                    pin_threads(services.cores.requests)
                    click.echo(
                        f"cores: the local model's calls on {_cores(services.cores.model)}, "
                        f"everything else on {_cores(services.cores.requests)}"
                    )

                app = create_app(
                    services,
                    max_body_bytes=settings.max_body_bytes,
                    request_threads=REQUEST_THREADS,
                    mcp_stream_s=settings.mcp_stream_s,
                )
                _run(app, settings, listening)
        finally:
            services.close()
        if settings.workers > 1:
            # Each worker opens its own services from these settings (create_app_from_env).
            os.environ.update(settings.to_env())
            _run("memstack.transports.app:create_app_from_env", settings, listening)


def _check_workers(settings: ServerSettings) -> None:
    """Refuse what several worker processes cannot do, naming the fix."""
    if settings.workers == 1:
        return
    if settings.pin_cores:
        raise click.UsageError(
            f"--pin-cores is for one server process alone on its machine, not --workers "
            f"{settings.workers}: the workers would crowd onto the same pinned cores. Drop "
            "--pin-cores (or unset MEMSTACK_PIN_CORES), or serve with --workers 1."
        )
    if not settings.redis_url:
        raise click.UsageError(
            f"--workers {settings.workers} needs --redis-url: the in-process short-term tier "
            "cannot be shared between worker processes (each would serve stale reads after "
            "another's update)."
        )


def _check_llm(settings: ServerSettings) -> None:
    """Resolve ``--llm`` before anything starts: a bad name or a missing key says so now."""
    if not settings.llm:
        return
    from memstack.wiring import extraction_model

    try:
        extraction_model(settings, os.environ)
    except MemstackError as exc:
        raise click.ClickException(f"--llm {settings.llm}: {exc}") from exc
    click.echo(f"extraction model: {settings.llm}", err=True)


def _require_server_extra() -> None:
    """FastAPI, uvicorn and prometheus-client come with the ``server`` extra; say so
    before anything starts."""
    try:
        import fastapi  # noqa: F401
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise click.ClickException(
            f"memstack serve needs the server extra ({exc.name} is missing): "
            'pip install "memstack[server]"'
        ) from exc


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything says the server is up."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
            "choose another --port (or MEMSTACK_PORT), or stop what uses it."
        ) from exc
    sock.set_inheritable(True)
    return sock


def _cores(cores: frozenset[int]) -> str:
    return ", ".join(str(core) for core in sorted(cores))


def _open_services(settings: ServerSettings) -> Services:
    from memstack.wiring import services_from_settings

    try:
        return services_from_settings(settings)
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc


def _prepare(services: Services, settings: ServerSettings) -> None:
    """Done once, before any worker starts: the first API key, the model, the warmup."""
    import asyncio

    if services.keys.count_active() == 0:
        _first_key(services.keys, settings, to_terminal=sys.stdout.isatty())
    services.embedder.embed_batch(["warm up"])
    click.echo(f"embedding model: {services.embedder.model_id}", err=True)
    try:
        loaded = asyncio.run(services.memories.warmup())
    except MemstackError as exc:
        loaded = 0
        click.echo(f"warmup skipped: {exc}", err=True)
    click.echo(f"memstack {settings.described}; warmed {loaded} memories into the short-term tier")


def _first_key(keys: ApiKeys, settings: ServerSettings, *, to_terminal: bool) -> None:
    """The key made when none exists: printed to a terminal, else written to a file only
    its owner reads and only its path printed: a service manager logs what is printed.
    It has the long-term right, so every example of the README (the users' memory, mem0's
    clients) runs with it; ``MEMSTACK_MEMORY_ENABLED=0`` still switches that off."""
    raw, info = keys.create(tenant="default", label="created by memstack serve", long_term=True)
    made = f"No API key existed, so one was created for tenant {info.tenant!r}.\n"
    if to_terminal:
        click.echo(f"{made}It is shown only this once; keep it:\n\n    {raw}\n")
        return
    path = first_key_file(settings.db, postgres=bool(settings.postgres_url)).absolute()
    try:
        write_private(path, raw + "\n")
    except OSError as exc:
        keys.revoke(info.id)  # a key nobody can read would only be a risk
        raise click.ClickException(
            f"cannot write the first API key to {path}: {exc.strerror or exc}; make that "
            "folder writable (or set MEMSTACK_HOME), or create a key with `memstack keys "
            "create --tenant default`."
        ) from exc
    click.echo(
        f"{made}This output is not a terminal, so the key is not printed: it is in {path} "
        "(readable by its owner only). Keep it, then delete the file.\n"
    )


def _run(app: FastAPI | str, settings: ServerSettings, listening: socket.socket) -> None:
    """uvicorn over ``app`` (a factory's import string with several workers) on the socket
    bound already."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    loop = "uvloop" if importlib.util.find_spec("uvloop") else "auto"
    http = "httptools" if importlib.util.find_spec("httptools") else "auto"
    processes = "1 process" if settings.workers == 1 else f"{settings.workers} worker processes"
    click.echo(
        f"serving on http://{settings.host}:{settings.port} (docs at /docs); "
        f"{processes}, loop {loop}, http {http}"
    )
    config = uvicorn.Config(
        app,
        factory=isinstance(app, str),
        workers=settings.workers if isinstance(app, str) else None,
        host=settings.host,
        port=settings.port,
        loop=loop,
        http=http,
        log_level="warning",
    )
    server = uvicorn.Server(config)
    if config.workers > 1:
        Multiprocess(config, sockets=[listening]).run()
    else:
        server.run(sockets=[listening])
        if not server.started:
            raise click.ClickException("the server did not start; see the messages above.")
