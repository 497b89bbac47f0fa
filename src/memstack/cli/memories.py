"""``memstack memories list|search|get|store|history|delete|export|import``: the memory server's
memories from a shell.

The commands talk to a running server through ``MemoryClient`` (``--url`` /
``MEMSTACK_URL``, ``--api-key`` / ``MEMSTACK_API_KEY``) rather than opening its
database: the server's key decides the tenant and the agents, as for every other
transport, the server's short-term tier (Redis) is kept in step by the service that
owns it, and the same commands work against SQLite, PostgreSQL or a remote host."""

from __future__ import annotations

import json
import sys
from typing import IO, Literal

import click

from memstack._json import JSON
from memstack.cli._server import (
    ServerGroup,
    connect,
    echo_json,
    json_option,
    min_score_option,
    provenance_option,
)
from memstack.cli.reembed import reembed_command
from memstack.client.types import Memory, Provenance

__all__ = ["memories"]

ScopeName = Literal["session", "agent", "global"]
_SCOPES = click.Choice(["session", "agent", "global"])


@click.group(cls=ServerGroup)
def memories() -> None:
    """Memories on a memory server: list, search, get, delete, export, import; and
    reembed, on the server's store, then restart the server with the new model."""


memories.add_store_command(reembed_command)


def _line(memory: Memory) -> str:
    where = memory["scope"] + (f":{memory['session_id']}" if memory["session_id"] else "")
    value = memory["value"].replace("\n", " ")
    return f"{memory['id']}  {memory['agent_id']}  {where}  {memory['key']}: {value[:80]}"


@memories.command("list")
@click.option("--agent-id")
@click.option("--scope", type=_SCOPES)
@click.option("--session-id")
@click.option("--key")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--cursor", help="The next page: the cursor the page before printed.")
@provenance_option
@json_option
def list_command(
    agent_id: str | None,
    scope: ScopeName | None,
    session_id: str | None,
    key: str | None,
    limit: int,
    offset: int,
    cursor: str | None,
    provenances: tuple[Provenance, ...],
    as_json: bool,
) -> None:
    """A page of memories, newest first."""
    with connect() as client:
        page = client.list(
            agent_id=agent_id,
            scope=scope,
            session_id=session_id,
            key=key,
            limit=limit,
            offset=offset,
            cursor=cursor,
            provenance=provenances or None,
        )
    if as_json:
        echo_json(page)
        return
    for memory in page["memories"]:
        click.echo(_line(memory))
    click.echo(f"{len(page['memories'])} of {page['total']} (offset {page['offset']})", err=True)
    if page["next_cursor"] is not None:
        click.echo(f"next page: --cursor {page['next_cursor']}", err=True)


@memories.command("search")
@click.argument("query")
@click.option("--agent-id")
@click.option("--scope", type=_SCOPES)
@click.option("--session-id")
@click.option("--mode", type=click.Choice(["hybrid", "text", "semantic"]), default="hybrid")
@click.option("--limit", type=int, default=10, show_default=True)
@provenance_option
@min_score_option
@json_option
def search_command(
    query: str,
    agent_id: str | None,
    scope: ScopeName | None,
    session_id: str | None,
    mode: Literal["hybrid", "text", "semantic"],
    limit: int,
    provenances: tuple[Provenance, ...],
    min_score: float | None,
    as_json: bool,
) -> None:
    """Search memories, best first, with each hit's score and provenance."""
    with connect() as client:
        found = client.search(
            query,
            agent_id=agent_id,
            scope=scope,
            session_id=session_id,
            mode=mode,
            limit=limit,
            provenances=provenances or None,
            min_score=min_score,
        )
    if as_json:
        echo_json(found)
        return
    for hit in found["results"]:
        click.echo(f"{hit['score']:.3f}  {hit['provenance'] or '-'}  {_line(hit['memory'])}")


@memories.command("get")
@click.argument("memory_id")
@json_option
def get_command(memory_id: str, as_json: bool) -> None:
    """One memory by id."""
    with connect() as client:
        memory = client.get(memory_id)
    if as_json:
        echo_json(memory)
        return
    click.echo(_line(memory))


_PROVENANCES = click.Choice(["user_stated", "extracted", "tool_output", "imported"])
_METADATA_EXAMPLE = '{"source": "chat"}'


def _metadata(ctx: click.Context, param: click.Parameter, raw: str | None) -> dict[str, JSON]:
    """``--metadata``: a JSON object, refused here with an example when it is not one."""
    if raw is None:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        raise click.BadParameter(
            f"not JSON ({exc}); write an object such as '{_METADATA_EXAMPLE}'."
        ) from exc
    if not isinstance(parsed, dict):
        raise click.BadParameter(f"must be a JSON object, such as '{_METADATA_EXAMPLE}'.")
    return parsed


def _ttl(raw: str | None) -> str | float | None:
    """Seconds from now when ``raw`` is a number, else an ISO 8601 time (the server's rule
    is checked by the client before the request)."""
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        return raw


@memories.command("store")
@click.argument("key")
@click.argument("value")
@click.option(
    "--agent-id",
    envvar="MEMSTACK_AGENT_ID",
    required=True,
    help="The agent it belongs to [env MEMSTACK_AGENT_ID].",
)
@click.option("--scope", type=_SCOPES, default="agent", show_default=True)
@click.option("--session-id", help="The session (with --scope session).")
@click.option("--metadata", callback=_metadata, help=f"A JSON object: '{_METADATA_EXAMPLE}'.")
@click.option("--ttl", help="Seconds from now, or an ISO 8601 time (2026-01-31T12:00Z).")
@click.option("--provenance", type=_PROVENANCES, help="How it was learned [default user_stated].")
@click.option("--provenance-detail", help="The model, tool or source it came from.")
@json_option
def store_command(
    key: str,
    value: str,
    agent_id: str,
    scope: ScopeName,
    session_id: str | None,
    metadata: dict[str, JSON],
    ttl: str | None,
    provenance: Provenance | None,
    provenance_detail: str | None,
    as_json: bool,
) -> None:
    """Store a memory (VALUE - reads it from stdin); the same agent, scope, session and
    KEY again updates it, keeping the old value in its history."""
    if value == "-":
        value = sys.stdin.read()
    with connect() as client:
        memory = client.store(
            agent_id,
            key,
            value,
            scope=scope,
            session_id=session_id,
            metadata=metadata or None,
            ttl=_ttl(ttl),
            provenance=provenance,
            provenance_detail=provenance_detail,
        )
    if as_json:
        echo_json(memory)
        return
    click.echo(_line(memory))


@memories.command("history")
@click.argument("memory_id")
@json_option
def history_command(memory_id: str, as_json: bool) -> None:
    """Every version of a memory, oldest first: when each held and what ended it."""
    with connect() as client:
        history = client.history(memory_id)
    if as_json:
        echo_json(history)
        return
    for number, version in enumerate(history["versions"], start=1):
        held = f"{version['valid_from']} - {version['valid_to'] or 'now'}"
        ended = version["closed_reason"] or "current"
        click.echo(f"{number}  {held}  {ended}  {version['value'].replace(chr(10), ' ')[:80]}")


@memories.command("delete")
@click.argument("memory_id", required=False)
@click.option("--agent-id", help="Erase every memory of this agent.")
@click.option("--session-id", help="Erase every memory of this session.")
@click.option("--scope", type=_SCOPES, help="Only this scope (with --agent-id/--session-id).")
@json_option
def delete_command(
    memory_id: str | None,
    agent_id: str | None,
    session_id: str | None,
    scope: ScopeName | None,
    as_json: bool,
) -> None:
    """Delete one memory by id, or erase an agent's or a session's memories."""
    selectors = agent_id is not None or session_id is not None
    if (memory_id is None) == (not selectors):
        raise click.UsageError("give a memory id, or --agent-id / --session-id, not both.")
    with connect() as client:
        if memory_id is not None:
            result: object = client.delete(memory_id)
            count = 1
        else:
            erased = client.delete_many(agent_id=agent_id, session_id=session_id, scope=scope)
            result, count = erased, erased["deleted"]
    if as_json:
        echo_json(result)
    else:
        click.echo(f"deleted {count} memor{'y' if count == 1 else 'ies'}")


@memories.command("export")
@click.option("--agent-id")
@click.option("--scope", type=_SCOPES)
@click.option("--session-id")
@click.option(
    "-o", "--output", type=click.File("w", encoding="utf-8"), default="-", help="Default: stdout."
)
def export_command(
    agent_id: str | None, scope: ScopeName | None, session_id: str | None, output: IO[str]
) -> None:
    """Write memories with their history as JSONL: one version a line (current and
    closed), every field `import` needs, however many there are."""
    with connect() as client:
        count = client.export_jsonl(output, agent_id=agent_id, scope=scope, session_id=session_id)
    click.echo(f"exported {count} memory versions", err=True)


@memories.command("import")
@click.argument("source", type=click.File("r", encoding="utf-8"), default="-")
@click.option(
    "--replace",
    is_flag=True,
    help="Replace what the server holds of a memory already there (default: leave it).",
)
@json_option
def import_command(source: IO[str], replace: bool, as_json: bool) -> None:
    """Restore the memories of a JSONL export (a file, or - for stdin) with their
    history. A memory the server holds already is left as it is (so an old export never
    overwrites newer versions) unless --replace; running it twice changes nothing. Every
    line is checked first: a malformed one stops the import before anything is written,
    naming its line number."""
    with connect() as client:
        result = client.import_jsonl(source, replace=replace)
    if as_json:
        echo_json(
            {
                "imported": result.imported,
                "versions": result.versions,
                "skipped": result.skipped,
                "expired": result.expired,
            }
        )
    else:
        click.echo(
            f"imported {result.imported} memories, {result.versions} versions; "
            f"{result.skipped} already held, left as they were; {result.expired} expired"
        )
