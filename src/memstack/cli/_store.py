"""What ``memstack serve`` and ``memstack keys`` share: where the data lives."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import click

from memstack.errors import MemstackError
from memstack.settings import ServerSettings
from memstack.storage.postgres import MAX_REPLICA_LAG_S

__all__ = [
    "db_option",
    "echo_data_location",
    "postgres_lag_option",
    "postgres_option",
    "postgres_read_option",
    "settings_from_env",
]

db_option = click.option(
    "--db",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="SQLite file of the long-term tier [env MEMSTACK_DB; default memstack.db in "
    "MEMSTACK_HOME, itself by default the per-user data folder, e.g. ~/.local/share/memstack].",
)
postgres_option = click.option(
    "--postgres-url", default=None, help="PostgreSQL instead of SQLite [env MEMSTACK_POSTGRES_URL]."
)

postgres_read_option = click.option(
    "--postgres-read-url",
    "postgres_read_urls",
    multiple=True,
    metavar="URL",
    help="A hot standby of --postgres-url that answers recall, search and listing; repeat "
    "for several. A read sees every write made before it (else the primary answers) "
    "[env MEMSTACK_POSTGRES_READ_URL, comma-separated].",
)
postgres_lag_option = click.option(
    "--postgres-max-lag",
    type=float,
    default=None,
    metavar="SECONDS",
    help="Pass over a hot standby whose replay lags more than this [env "
    f"MEMSTACK_POSTGRES_MAX_LAG_S; default {MAX_REPLICA_LAG_S:g}].",
)


def settings_from_env(**flags: Any) -> ServerSettings:
    """The server's settings from the environment and the given flags."""
    try:
        return ServerSettings.from_env(os.environ, **flags)
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc


def echo_data_location(settings: ServerSettings) -> None:
    """Where the keys and memories live, so two commands can be seen to share them."""
    if settings.postgres_url:
        where = "PostgreSQL " + re.sub(r"//[^@/]*@", "//", settings.postgres_url)
    else:
        where = str(settings.db.resolve())
    click.echo(f"data: {where}", err=True)
