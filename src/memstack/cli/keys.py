"""``memstack keys ...``: create, list and revoke the memory server's API keys."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import click

from memstack.cli._store import db_option, echo_data_location, postgres_option, settings_from_env
from memstack.errors import MemstackError
from memstack.service.api_keys import ApiKeys, KeyInfo

__all__ = ["keys"]


@click.group()
def keys() -> None:
    """API keys of the memory server: create, list, revoke."""


@keys.command("create")
@click.option("--tenant", required=True, help="The tenant the key acts for.")
@click.option("--agents", default=None, help="Comma-separated agent ids the key is limited to.")
@click.option("--label", default=None, help="A note to recognise the key by.")
@click.option(
    "--global-write",
    is_flag=True,
    help="With --agents: the key may also change global memories and knowledge documents "
    "(without it, it only reads them). A key without --agents always may.",
)
@click.option(
    "--long-term",
    is_flag=True,
    help="The key may store and recall its tenant's users' conversations (long-term "
    "memory) even when the server does not enable it for every key "
    "(MEMSTACK_MEMORY_ENABLED=1); MEMSTACK_MEMORY_ENABLED=0 refuses it all the same.",
)
@db_option
@postgres_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def keys_create(
    tenant: str,
    agents: str | None,
    label: str | None,
    global_write: bool,
    long_term: bool,
    db: Path | None,
    postgres_url: str | None,
    as_json: bool,
) -> None:
    """Create a key; the raw key is printed only now."""
    agent_list = [a.strip() for a in agents.split(",") if a.strip()] if agents else None
    with _keys(db, postgres_url) as api_keys:
        raw, info = api_keys.create(
            tenant=tenant,
            agents=agent_list,
            label=label,
            global_write=global_write,
            long_term=long_term,
        )
    if as_json:
        click.echo(
            json.dumps(
                {
                    "key": raw,
                    "tenant": info.tenant,
                    "id": info.id,
                    "agents": info.agents and list(info.agents),
                    "global_write": info.may_write_global,
                    "long_term": info.long_term,
                }
            )
        )
    else:
        click.echo(f"API key for tenant {info.tenant!r} (shown only now):\n{raw}")


@keys.command("list")
@click.option("--tenant", default=None)
@db_option
@postgres_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def keys_list(tenant: str | None, db: Path | None, postgres_url: str | None, as_json: bool) -> None:
    """List keys (never the raw keys)."""
    with _keys(db, postgres_url) as api_keys:
        found = api_keys.list(tenant=tenant)
    if as_json:
        click.echo(json.dumps([_key_json(k) for k in found], indent=2))
        return
    for k in found:
        state = "active" if k.active else "revoked"
        agents = ",".join(k.agents) if k.agents else "*"
        writes = "global-write" if k.may_write_global else "global-read"
        click.echo(
            f"{k.id}  {k.tenant:<20} agents={agents:<20} {writes:<12} {state:<8} {k.label or ''}"
        )


@keys.command("revoke")
@click.argument("key_id")
@db_option
@postgres_option
def keys_revoke(key_id: str, db: Path | None, postgres_url: str | None) -> None:
    """Revoke a key by its id (as `keys list` shows it, with or without msk_, or the whole
    key); it stops working at once."""
    with _keys(db, postgres_url) as api_keys:
        info = api_keys.revoke(_key_id(key_id))
    click.echo(f"revoked {info.id} (tenant {info.tenant!r})")


_KEY_ID = re.compile(r"^msk_([0-9a-f]{16})(?:_.*)?$", re.S)


def _key_id(text: str) -> str:
    """The id inside ``msk_<id>`` or a whole ``msk_<id>_<secret>`` key; other text as given."""
    found = _KEY_ID.match(text.strip())
    return found.group(1) if found else text.strip()


@contextmanager
def _keys(db: Path | None, postgres_url: str | None) -> Iterator[ApiKeys]:
    from memstack.wiring import open_records

    settings = settings_from_env(db=db, postgres_url=postgres_url)
    echo_data_location(settings)
    try:
        records = open_records(settings.store_url)
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        yield ApiKeys(records)
    except MemstackError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        records.close()


def _key_json(info: KeyInfo) -> dict[str, object]:
    return {
        "id": info.id,
        "tenant": info.tenant,
        "agents": list(info.agents) if info.agents else None,
        "label": info.label,
        "global_write": info.may_write_global,
        "long_term": info.long_term,
        "active": info.active,
        "created_at": _iso(info.created_at),
        "revoked_at": None if info.revoked_at is None else _iso(info.revoked_at),
    }


def _iso(seconds: float) -> str:
    """The REST API's time format: ISO 8601 in UTC with milliseconds and ``Z``."""
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
