"""``memstack users ...``: a memory server's users' conversation memory from a shell.

Each command is one ``MemoryClient`` call (or a few, for pages and large files) against
``/api/users/...``: the server's key decides the tenant, and its long-term right (or the
server's ``MEMSTACK_MEMORY_ENABLED=1``) whether the users' memory is on at all; the
server's refusal, with the fix it names, is the command's error."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, TypeVar, get_args

import click

from memstack.cli._server import (
    ServerGroup,
    connect,
    echo_json,
    json_option,
    min_score_option,
    provenance_option,
)
from memstack.cli._user_files import batches, read_objects
from memstack.client.types import (
    MemoryKind,
    Provenance,
    TurnOutcome,
    UserList,
    UserMemory,
    UserMemoryPage,
)
from memstack.errors import InvalidInput

__all__ = ["users"]

T = TypeVar("T")


@click.group(cls=ServerGroup)
def users() -> None:
    """Users' conversation memory on a memory server: turns, facts, recall, export."""


def _moment(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """A time given as ISO 8601 (no zone: UTC) or seconds since the epoch, as the epoch."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a time: give ISO 8601 (such as 2026-05-08T09:00:00Z) or "
            "seconds since the epoch."
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _line(memory: UserMemory) -> str:
    """One memory on one line: id, kind, session (a turn's), provenance, text."""
    text = " ".join(memory["text"].split())
    session = memory["session_id"] or "-"
    return (
        f"{memory['id']}  {memory['kind']}  {session}  {memory['provenance'] or '-'}  {text[:100]}"
    )


def _walk(
    fetch: Callable[[str | None], tuple[list[T], str | None]], cursor: str | None, every: bool
) -> tuple[list[T], str | None]:
    """One page from ``cursor``, or with ``every`` each page after it too."""
    found: list[T] = []
    while True:
        items, cursor = fetch(cursor)
        found += items
        if not every or cursor is None:
            return found, cursor


def _footer(count: int, noun: str, cursor: str | None) -> None:
    click.echo(f"{count} {noun}", err=True)
    if cursor is not None:
        click.echo(f"next page: --cursor {cursor}", err=True)


_LIMIT = click.option(
    "--limit", type=int, default=50, show_default=True, help="A page's size (with --all: a call's)."
)
_CURSOR = click.option("--cursor", help="The next page: the cursor the page before printed.")
_EVERY = click.option("--all", "every", is_flag=True, help="Every page from there on.")
_SESSION = click.option("--session-id", help="Favour this conversation's turns.")
_K = click.option("-k", "k", type=int, default=10, show_default=True, help="How many, at most.")


@users.command("list")
@_LIMIT
@_CURSOR
@_EVERY
@json_option
def list_command(limit: int, cursor: str | None, every: bool, as_json: bool) -> None:
    """The users of the key's tenant that hold a memory, in id order."""
    with connect() as client:

        def fetch(after: str | None) -> tuple[list[str], str | None]:
            page = client.list_users(limit=limit, cursor=after)
            return page["users"], page["next_cursor"]

        found, cursor = _walk(fetch, cursor, every)
    if as_json:
        echo_json(UserList(users=found, next_cursor=cursor))
        return
    for user_id in found:
        click.echo(user_id)
    _footer(len(found), "users", cursor)


@users.command("add-turns")
@click.argument("user_id")
@click.argument("source", metavar="FILE", type=click.File("r", encoding="utf-8"))
@click.option("--session-id", help="The session of every turn that names none.")
@json_option
def add_turns_command(user_id: str, source: IO[str], session_id: str | None, as_json: bool) -> None:
    """Store a conversation's turns verbatim. FILE (- for stdin) is JSONL, one turn a
    line, or a JSON list of turns; a turn is {"speaker", "text", "session_id", "time",
    "id", "metadata"} (time and id optional) or OpenAI-style {"role", "content", "name"}.
    Prints each turn's id and outcome, and the extraction job when the server runs one."""
    turns = read_objects(source, holder="turns")
    outcomes: list[TurnOutcome] = []
    jobs: list[str] = []
    with connect() as client:
        for start, part in batches(turns):
            try:
                added = client.add_turns(user_id, part, session_id=session_id)
            except InvalidInput as exc:
                raise _in_part(exc, "turns", start, len(part)) from exc
            outcomes += added["turns"]
            jobs += [added["job_id"]] if added["job_id"] is not None else []
    if as_json:
        echo_json({"turns": outcomes, "job_ids": jobs})
        return
    for turn in outcomes:
        click.echo(_outcome(turn["id"], turn["outcome"], turn["reason"]))
    for job_id in jobs:
        click.echo(f"job: {job_id}")


def _outcome(item_id: str | None, outcome: str, reason: str | None) -> str:
    return "  ".join(part for part in (item_id or "-", outcome, reason) if part)


def _in_part(exc: InvalidInput, noun: str, start: int, size: int) -> InvalidInput:
    """A later call's error says which of the file's items it was sent (the server's
    field counts from that call's first)."""
    if start == 0:
        return exc
    where = f"{noun} {start + 1} to {start + size} of the file; the {start} before were sent"
    return InvalidInput(f"{exc} ({where})", field=exc.field)


@users.command("remember")
@click.argument("user_id")
@click.argument("text")
@click.option("--kind", type=click.Choice(get_args(MemoryKind)), default="fact", show_default=True)
@click.option("--importance", type=float, default=0.5, show_default=True, help="From 0 to 1.")
@click.option(
    "--supersedes",
    multiple=True,
    metavar="ID",
    help="A memory this one replaces, kept as history (repeat for several).",
)
@json_option
def remember_command(
    user_id: str,
    text: str,
    kind: MemoryKind,
    importance: float,
    supersedes: tuple[str, ...],
    as_json: bool,
) -> None:
    """Remember an explicit fact about the user."""
    with connect() as client:
        fact = client.remember(
            user_id, text, kind=kind, importance=importance, supersedes=supersedes
        )
    if as_json:
        echo_json(fact)
        return
    click.echo(_outcome(fact["id"], fact["outcome"], fact["reason"]))


@users.command("recall")
@click.argument("user_id")
@click.argument("query")
@_K
@_SESSION
@click.option(
    "--as-of",
    metavar="TIME",
    callback=_moment,
    help="What was valid then (ISO 8601 or epoch seconds).",
)
@click.option("--include-superseded", is_flag=True, help="Every version, not only current ones.")
@provenance_option
@min_score_option
@click.option("--no-touch", is_flag=True, help="Leave what is recalled unmarked (ages as before).")
@json_option
def recall_command(
    user_id: str,
    query: str,
    k: int,
    session_id: str | None,
    as_of: float | None,
    include_superseded: bool,
    provenances: tuple[Provenance, ...],
    min_score: float | None,
    no_touch: bool,
    as_json: bool,
) -> None:
    """The user's memories that best answer QUERY, best first, with their scores."""
    with connect() as client:
        found = client.recall(
            user_id,
            query,
            k=k,
            touch=not no_touch,
            as_of=as_of,
            include_superseded=include_superseded,
            provenances=provenances or None,
            session_id=session_id,
            min_score=min_score,
        )
    if as_json:
        echo_json(found)
        return
    for hit in found["results"]:
        click.echo(f"{hit['score']:.3f}  {_line(hit)}")


@users.command("context")
@click.argument("user_id")
@click.argument("query")
@_K
@_SESSION
@min_score_option
@json_option
def context_command(
    user_id: str,
    query: str,
    k: int,
    session_id: str | None,
    min_score: float | None,
    as_json: bool,
) -> None:
    """The <recalled-memories> block for QUERY, to put before the user's message
    (without --min-score, the server's default threshold cuts it)."""
    with connect() as client:
        context = client.recalled_context(
            user_id, query, k=k, session_id=session_id, min_score=min_score
        )
    if as_json:
        echo_json(context)
    elif context["block"]:
        click.echo(context["block"])
    else:
        click.echo("nothing recalled", err=True)


@users.command("memories")
@click.argument("user_id")
@_LIMIT
@_CURSOR
@_EVERY
@click.option("--include-superseded", is_flag=True, help="Closed versions too.")
@json_option
def memories_command(
    user_id: str,
    limit: int,
    cursor: str | None,
    every: bool,
    include_superseded: bool,
    as_json: bool,
) -> None:
    """The user's turns and facts, newest first."""
    with connect() as client:

        def fetch(after: str | None) -> tuple[list[UserMemory], str | None]:
            page = client.user_memories(
                user_id, limit=limit, cursor=after, include_superseded=include_superseded
            )
            return page["memories"], page["next_cursor"]

        found, cursor = _walk(fetch, cursor, every)
    if as_json:
        echo_json(UserMemoryPage(memories=found, next_cursor=cursor))
        return
    for memory in found:
        click.echo(_line(memory))
    _footer(len(found), "memories", cursor)


@users.command("history")
@click.argument("user_id")
@click.argument("memory_id")
@json_option
def history_command(user_id: str, memory_id: str, as_json: bool) -> None:
    """Every version of one of the user's memories, oldest first."""
    with connect() as client:
        history = client.user_history(user_id, memory_id)
    if as_json:
        echo_json(history)
        return
    for version in history["versions"]:
        click.echo(f"{version['valid_from']}  {version['valid_to'] or 'current'}  {_line(version)}")


@users.command("forget")
@click.argument("user_id")
@click.argument("memory_id")
@json_option
def forget_command(user_id: str, memory_id: str, as_json: bool) -> None:
    """Forget one of the user's memories."""
    with connect() as client:
        client.forget(user_id, memory_id)
    if as_json:
        echo_json({"deleted": True, "id": memory_id})
    else:
        click.echo(f"forgot {memory_id}")


@users.command("job")
@click.argument("user_id")
@click.argument("job_id")
@json_option
def job_command(user_id: str, job_id: str, as_json: bool) -> None:
    """An extraction job's state, and the memories it stored."""
    with connect() as client:
        job = client.get_job(user_id, job_id)
    if as_json:
        echo_json(job)
        return
    click.echo(f"{job['id']}  {job['state']}  updated {job['updated_at']}")
    if job["stored"]:
        click.echo(f"stored: {', '.join(job['stored'])}")
    if job["error"]:
        click.echo(f"error: {job['error']}")


@users.command("erase")
@click.argument("user_id")
@click.option("--yes", is_flag=True, help="Do not ask first.")
@json_option
def erase_command(user_id: str, yes: bool, as_json: bool) -> None:
    """Erase the user: every turn, fact, version and job, for good."""
    if not yes:
        click.confirm(f"Erase every memory of user {user_id!r}, for good?", abort=True, err=True)
    with connect() as client:
        erased = client.erase_user(user_id)
    if as_json:
        echo_json(erased)
    else:
        click.echo(f"erased {erased['deleted']} records of user {user_id}")


@users.command("export")
@click.argument("user_id")
@click.option(
    "-o", "--output", type=click.File("w", encoding="utf-8"), default="-", help="Default: stdout."
)
def export_command(user_id: str, output: IO[str]) -> None:
    """Write the user's turns and facts, every version, as JSONL: one a line, as
    `memstack users import` reads them."""
    with connect() as client:
        exported = client.export_user(user_id)["memories"]
    for memory in exported:
        output.write(json.dumps(memory, ensure_ascii=False, separators=(",", ":")) + "\n")
    click.echo(f"exported {len(exported)} memories (every version)", err=True)


@users.command("import")
@click.argument("user_id")
@click.argument("source", metavar="FILE", type=click.File("r", encoding="utf-8"))
@click.option(
    "--replace",
    is_flag=True,
    help="Replace a memory the user holds already (default: leave it as it is).",
)
@json_option
def import_command(user_id: str, source: IO[str], replace: bool, as_json: bool) -> None:
    """Give the user back the memories of an export (FILE, or - for stdin): JSONL as
    `export` writes, or the JSON of GET /api/users/{user_id}/export. A memory the user
    holds already is left as it is unless --replace; importing twice changes nothing."""
    memories = read_objects(source, holder="memories")
    stored = skipped = 0
    with connect() as client:
        for start, part in batches(memories):
            try:
                done = client.import_user(user_id, part, replace=replace)
            except InvalidInput as exc:
                raise _in_part(exc, "memories", start, len(part)) from exc
            stored, skipped = stored + done["stored"], skipped + done["skipped"]
    if as_json:
        echo_json({"stored": stored, "skipped": skipped})
    else:
        click.echo(f"imported {stored} memories; {skipped} already held, left as they were")
