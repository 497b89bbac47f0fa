"""What the commands that call a memory server share (``memstack memories``, ``memstack
users``): which server and key, the client, and JSON output.

``--url`` and ``--api-key`` work before the verb (``memstack users --url U list``) and
after it (``memstack users list --url U``), as a shell user types them: the group's
options fall back to ``MEMSTACK_URL`` / ``MEMSTACK_API_KEY``, and a command's own, when
given, win over the group's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, ParamSpec, TypeVar

import click

from memstack.client import DEFAULT_URL, MemoryClient
from memstack.errors import MemstackError

__all__ = [
    "Server",
    "ServerGroup",
    "connect",
    "echo_json",
    "json_option",
    "min_score_option",
    "provenance_option",
]

P = ParamSpec("P")
R = TypeVar("R")

provenance_option = click.option(
    "--provenance",
    "provenances",
    multiple=True,
    type=click.Choice(["user_stated", "extracted", "tool_output", "imported"]),
    help="Only memories learned this way (repeat for several).",
)

min_score_option = click.option(
    "--min-score",
    type=click.FloatRange(0.0, 1.0),
    help="Only hits whose calibrated relevance is at least this (0 to 1).",
)


@dataclass(frozen=True, kw_only=True)
class Server:
    url: str = DEFAULT_URL
    api_key: str | None = None


def _take(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Keep a server setting on the context: the group's first, a command's over it."""
    if value is not None and param.name is not None:
        ctx.obj = replace(ctx.find_object(Server) or Server(), **{param.name: value})


def _server_options(*, on_group: bool) -> list[click.Parameter]:
    """The group's options read the environment and default; a command's only override."""
    where = "" if on_group else "; also taken before the command"
    return [
        click.Option(
            ["--url"],
            envvar="MEMSTACK_URL" if on_group else None,
            default=DEFAULT_URL if on_group else None,
            show_default=on_group,
            expose_value=False,
            callback=_take,
            help=f"The memory server (env MEMSTACK_URL{where}).",
        ),
        click.Option(
            ["--api-key"],
            envvar="MEMSTACK_API_KEY" if on_group else None,
            expose_value=False,
            callback=_take,
            help=f"A key from `memstack keys create` (env MEMSTACK_API_KEY{where}).",
        ),
    ]


class ServerGroup(click.Group):
    """A group of commands that call a memory server: ``--url`` and ``--api-key`` on the
    group and on each of its commands."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.extend(_server_options(on_group=True))

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.params.extend(_server_options(on_group=False))
        super().add_command(cmd, name)

    def add_store_command(self, cmd: click.Command) -> None:
        """A command that opens the server's store itself (the server may run), not
        a server: it takes --db / --postgres-url, not --url / --api-key."""
        super().add_command(cmd)


@contextmanager
def connect() -> Iterator[MemoryClient]:
    """The client for the command's settings; memstack errors become CLI errors here."""
    server = click.get_current_context().find_object(Server)
    assert server is not None, "a server command runs inside a ServerGroup"
    try:
        with MemoryClient(server.url, api_key=server.api_key) as opened:
            yield opened
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc


def json_option(command: Callable[P, R]) -> Callable[P, R]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)


def echo_json(payload: object) -> None:
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
