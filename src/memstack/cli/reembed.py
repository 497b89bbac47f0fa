"""``memstack memories reembed``: the server's memories embedded again with the model it
is configured with, after a switch of model (``service.reembed`` does the work)."""

from __future__ import annotations

from pathlib import Path

import click

from memstack.cli._store import db_option, echo_data_location, postgres_option, settings_from_env
from memstack.cli.models import local_model_option

__all__ = ["reembed_command"]


@click.command("reembed")
@db_option
@postgres_option
@local_model_option
@click.option(
    "--prefix",
    default="",
    help="Only the namespaces whose name starts with this, e.g. users/acme/alice/ for one "
    "user's memories (`memstack models status` lists the names).",
)
@click.option(
    "--all", "every", is_flag=True, help="Also the namespaces of the configured model already."
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 10_000),
    default=256,
    show_default=True,
    help="Records embedded and written per transaction.",
)
@click.option("--dry-run", is_flag=True, help="Only list the namespaces it would embed again.")
def reembed_command(
    db: Path | None,
    postgres_url: str | None,
    local_model: Path | None,
    prefix: str,
    every: bool,
    batch_size: int,
    dry_run: bool,
) -> None:
    """Embed the memories of the server's store again with the configured model (the one
    `memstack serve` runs with the same settings: MEMSTACK_LOCAL_MODEL, --local-model,
    ...), every namespace whose vectors come from another model; then restart the server
    with that model. Each namespace is embedded beside itself and replaces it only when
    complete and unchanged since (what a running server wrote meanwhile is copied first),
    so it stays searchable with its old model until then; an interrupted run is taken up
    where it stopped by running it again."""
    from memstack.bench.progress import progress_bar
    from memstack.embeddings import resolve_embedder
    from memstack.service.reembed import namespace_models, reembed, to_reembed
    from memstack.wiring import open_records

    settings = settings_from_env(db=db, postgres_url=postgres_url, local_model=local_model)
    echo_data_location(settings)
    embedder = resolve_embedder(settings.embedding)
    records = open_records(settings.store_url)
    try:
        todo = to_reembed(namespace_models(records, prefix), embedder, every=every)
        click.echo(f"model: {embedder.model_id}; {len(todo)} namespace(s) to embed again", err=True)
        for space in todo:
            click.echo(f"  {space.namespace}  {space.model_id or '-'}  {space.records} records")
        if dry_run:
            return
        seen: dict[str, int] = {}
        with progress_bar(sum(s.records for s in todo), "embedding") as bar:

            def advance(namespace: str, done: int, total: int) -> None:
                bar.update(done - seen.get(namespace, 0))
                seen[namespace] = done

            done = reembed(
                records, embedder, prefix=prefix, every=every, batch=batch_size, progress=advance
            )
    finally:
        records.close()
    for result in done:
        source = f"from {result.from_model}" if result.from_model else "a stopped run finished"
        click.echo(
            f"{result.namespace}: {result.records} records, {result.embedded} embedded ({source})"
        )
    click.echo(f"done: {len(done)} namespace(s) now hold {embedder.model_id} vectors")
